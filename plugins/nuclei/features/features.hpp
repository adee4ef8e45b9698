#pragma once
// Per-nucleus features (Region Templates' feature stage), CPU variant.
//
// Input: an RGB tile (CV_8UC3, R first) and instance labels of the same size
// (CV_32S, 0 = background). Output: one row of kFeatureCount doubles per
// label present (ascending label order), computed in the label's bounding box
// (grown by the ring radius for the cytoplasm), so the cost is O(tile) for
// the derived channels plus O(pixels of the boxes).
//
// Derived channels, computed once per tile:
//  - grey: BT.601 as OpenCV's cvtColor(RGB2GRAY) for u8, exactly:
//      (9798 R + 19235 G + 3735 B + 16384) >> 15 (checked against OpenCV 4.6
//      for all 2^24 colours).
//  - haematoxylin (H) and eosin (E): Ruifrok-Johnston colour deconvolution
//    with Ruifrok's ImageJ H&E vectors, normalised, and the residual
//    completed to unit column norms (the matrix of segment/deconvolve.cpp).
//    od(v) = -log10((v + 1) / 256); concentration c = od . M^-1 (double),
//    quantised to u8: t = c * 255 / kOdMax, 0 if t <= 0, 255 if t >= 255,
//    else floor(t + 0.5). Evaluated as (T_R[r] + T_G[g]) + T_B[b] with
//    T_ch[v] = od(v) * Minv[ch][stain] * 255 / kOdMax tabulated in double
//    (stain_tables()), so the GPU rounds identically.
//  - gradient: gx, gy = 3x3 Sobel of grey (OpenCV's kernels, mirrored border
//    BORDER_REFLECT_101 at the tile's edges), G = sqrt(gx^2 + gy^2).
//  - edges: cv::Canny(grey, kCannyLow, kCannyHigh, aperture 3, L2 gradient),
//    no pre-smoothing.
//
// Features (column names in feature_names(), indices in feature_math.hpp):
//  Shape
//   area            pixels with the label
//   perimeter       length of the outer boundary: sum over the label's
//                   external contours (cv::findContours, RETR_EXTERNAL,
//                   CHAIN_APPROX_NONE, 8-connected pixel centres) of
//                   cv::arcLength(closed): steps of 1 and sqrt(2). Holes do
//                   not count. One pixel: 0.
//   equivalent_diameter  sqrt(4 area / pi)
//   major_axis, minor_axis, eccentricity, orientation
//                   MATLAB regionprops: from the second central moments of
//                   the pixel centres + 1/12; orientation in degrees,
//                   counter-clockwise from the column axis, in (-90, 90].
//   solidity        area / area of the convex hull of the pixels' unit
//                   squares (all corners of the contour pixels), so <= 1 and
//                   exactly 1 for a rectangle.
//   extent          area / (bbox height * bbox width)
//   circularity     4 pi area / perimeter^2 (0 for perimeter 0). The
//                   perimeter runs through pixel centres, so a digital disc
//                   can exceed 1 slightly.
//  Intensity, for each of h_ (haematoxylin), e_ (eosin), grey_ over the
//   nucleus, and ring_h_, ring_e_, ring_grey_ over its cytoplasm ring:
//   mean, std (population), min, max, q1, median, q3 (nearest rank: the
//   smallest v with 4 * #{<= v} >= k * n), skewness (m3 / m2^1.5), kurtosis
//   (excess, m4 / m2^2 - 3; both 0 when m2 = 0), entropy (bits, 256-bin
//   histogram of the u8 values). All 0 for an empty ring.
//  grad_*           the same on G; mean/std/min/max/skewness/kurtosis from
//                   the exact G, q1/median/q3/entropy from the histogram of
//                   floor(G) (unit bins), so the quartiles are floor(G)'s.
//  canny_fraction   Canny edge pixels in the nucleus / area
//  glcm_*           the 13 Haralick features (feature_math.hpp, haralick())
//                   of grey quantised to L = glcm_levels levels,
//                   q = floor(grey * L / 256), over pixel pairs at offsets
//                   (drow, dcol) = (0,1), (-1,1), (-1,0), (-1,-1) with both
//                   pixels in the nucleus; each direction's matrix symmetric
//                   and normalised; the features averaged over the
//                   directions that have pairs.
//  ring_area        pixels of the cytoplasm ring: background (label <= 0)
//                   pixels p with some nucleus pixel q at |p - q|^2 <= R^2,
//                   R = round(ring_um / mpp) pixels (the dilation by a
//                   Euclidean disc of radius R, minus every nucleus).
//
// Pixels outside the tile do not exist: a nucleus cut by the tile's edge is
// measured as cut, so an operator on tiles must give them a halo (see
// features_op.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "feature_math.hpp"

namespace flowd::nuclei::features {

constexpr double kOdMax = 2.5;      // optical density quantised to 255
constexpr double kCannyLow = 50;    // hysteresis thresholds on the L2 Sobel magnitude
constexpr double kCannyHigh = 150;

struct Options {
  double mpp = 0.25;      // microns per pixel
  double ring_um = 2.0;   // cytoplasm ring width in microns
  int glcm_levels = 32;   // kMinLevels..kMaxLevels
  int min_area = 1;       // labels with fewer pixels are skipped
  int ring_px() const;    // round(ring_um / mpp); throws on invalid options
};

// One nucleus's place in the tile (local coordinates).
struct Nucleus {
  std::int32_t label = 0;
  std::int64_t area = 0;
  double centroid_row = 0, centroid_col = 0;
  int bbox_row = 0, bbox_col = 0, bbox_height = 0, bbox_width = 0;
};

struct Result {
  std::vector<Nucleus> nuclei;
  std::vector<double> values;  // nuclei.size() x kFeatureCount, row-major
  double at(std::size_t i, int feature) const { return values[i * kFeatureCount + static_cast<std::size_t>(feature)]; }
};

// Column names, index = Feature (feature_math.hpp): "area", "h_mean",
// "glcm_contrast", "ring_grey_entropy", ...
const std::vector<std::string>& feature_names();

Result compute(const cv::Mat& rgb, const cv::Mat& labels, const Options& options);

// ---- building blocks, shared with the GPU variant's host side and tests ----

struct Channels {
  cv::Mat grey, h, e;  // CV_8U
  cv::Mat gx, gy;      // CV_16S
  cv::Mat edges;       // CV_8U, 0 or 255
};
Channels derive_channels(const cv::Mat& rgb);

// T[stain][channel][v] (stain 0 = haematoxylin, 1 = eosin), see above.
struct StainTables {
  double t[2][3][256];
};
const StainTables& stain_tables();

// The labels present with at least min_area pixels, ascending, with area,
// centroid and box.
std::vector<Nucleus> find_nuclei(const cv::Mat& labels, int min_area);

// Perimeter and solidity (definitions above) of `n` in `labels`.
void contour_shape(const cv::Mat& labels, const Nucleus& n, double* perimeter, double* solidity);

// The disc's half-width per row offset: dy in [-R, R] covers
// dx in [-w[dy + R], w[dy + R]], w = floor(sqrt(R^2 - dy^2)).
std::vector<int> disc_half_widths(int radius);

}  // namespace flowd::nuclei::features

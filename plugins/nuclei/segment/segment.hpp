#pragma once
// The nuclei segmentation operations (Region Templates' pipeline), CPU
// variants. Each function is a pure function of its inputs; its GPU twin in
// gpu/segment_gpu.hpp computes the *same* result (bit-identical masks and
// values; labels identical up to renumbering), so every definition below is
// exact and deterministic: integer or explicitly ordered float arithmetic,
// no order-dependent tie-breaking.
//
// Images are cv::Mat: RGB u8 (CV_8UC3, R first), masks CV_8U (0 or 255),
// grey levels CV_8U, distances CV_32F, labels CV_32S (0 = background).
// Neighbourhoods are 8-connected for foreground, 4-connected for background.
#include <array>
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

#include "stain.hpp"

namespace flowd::nuclei {

// Tissue: 255 where R + G + B < 3 * level (the glass background is bright).
cv::Mat tissue_mask(const cv::Mat& rgb, int level);

// Red blood cells: 255 where 256*R >= rg_q8*G and 256*R >= rb_q8*B and the
// pixel is not bright background (R + G + B < 3 * level). Ratios are in 1/256
// units so both variants compare integers.
cv::Mat rbc_mask(const cv::Mat& rgb, int rg_q8, int rb_q8, int level);

// Colour deconvolution (stain.hpp defines the arithmetic). stain_weights()
// gives the row of the inverse of the normalised H&E(+residual) stain matrix
// of Ruifrok & Johnston for stain 0 = haematoxylin, 1 = eosin, and the LUT.
StainWeights stain_weights(int stain, double od_max);
cv::Mat deconvolve(const cv::Mat& rgb, const StainWeights& sw);
// The three first steps in one pass (for the CPU pipeline; no GPU twin, the
// GPU runs them as the separate operations): tissue = tissue_mask(rgb,
// level), rbc = rbc_mask(rgb, rg_q8, rb_q8, level), and the result is
// deconvolve(rgb, sw) where tissue is set and rbc is not, 0 elsewhere.
cv::Mat deconvolve_masked(const cv::Mat& rgb, const StainWeights& sw, int level, int rg_q8, int rb_q8, cv::Mat& tissue,
                          cv::Mat& rbc);

// The structuring element of open(): OpenCV's MORPH_ELLIPSE of size 2r+1.
// Row y (0..2r) covers columns [r - half[y], r + half[y]] (a disk is convex).
std::vector<int> disk_half_widths(int radius);

// Grey-level opening (erosion then dilation) by the disk of `radius`;
// pixels outside the image are ignored (OpenCV's default border for morphology).
cv::Mat open(const cv::Mat& grey, int radius);

// Grey-level reconstruction by dilation of `marker` under `mask` (both CV_8U
// or both CV_32F, same size), 8-connected: the largest image <= mask obtained
// by iterating min(dilate(x), mask) from min(marker, mask). Unique, so any
// algorithm gives the same result. Binary reconstruction is the 0/255 case.
cv::Mat reconstruct(const cv::Mat& marker, const cv::Mat& mask);

// Keeps the 8-connected components of `mask` whose area a satisfies
// min_area <= a <= max_area (max_area <= 0: no upper bound).
cv::Mat area_threshold(const cv::Mat& mask, int min_area, int max_area);

// Fills holes: background pixels whose 4-connected background component does
// not touch the image border become foreground.
cv::Mat fill_holes(const cv::Mat& mask);

// Exact Euclidean distance of every pixel to the nearest 0 pixel of `mask`
// (CV_32F): sqrtf((float)d2) with d2 the exact integer squared distance; 0 on
// background; pixels outside the image are not background. A mask with no 0
// pixel gives +inf on every pixel.
cv::Mat distance_transform(const cv::Mat& mask);

// Watershed markers: the regional maxima (8-connected plateaus with no higher
// neighbour) of the h-maxima transform reconstruct(dist - h, dist), restricted
// to dist > 0; labelled 1..n (CV_32S). Every component of dist > 0 gets >= 1.
cv::Mat watershed_markers(const cv::Mat& dist, float h);

// Marker watershed by steepest ascent, deterministic on plateaus:
//  1. r = reconstruct(g, dist) with g = dist on marker pixels, 0 elsewhere
//     (maxima imposition: r's only regional maxima are the markers);
//  2. on plateaus of r (pixels of mask, not markers, with no strictly higher
//     neighbour) lc = 8-connected geodesic distance, within the plateau, to
//     the nearest plateau pixel that has a strictly higher neighbour;
//  3. every non-marker mask pixel points to a neighbour: the one with the
//     largest r if some r(q) > r(p) (ties: the first in the order N, NE, E,
//     SE, S, SW, W, NW), else the first same-r neighbour with lc(q) = lc(p)-1;
//  4. label(p) = the marker label at the end of p's pointer path.
// Pixels outside mask, or whose path ends at no marker, get 0.
cv::Mat watershed(const cv::Mat& dist, const cv::Mat& markers, const cv::Mat& mask);

// Connected-component labelling, 8-connected, labels 1..n (CV_32S).
cv::Mat label(const cv::Mat& mask, int* count = nullptr);

}  // namespace flowd::nuclei

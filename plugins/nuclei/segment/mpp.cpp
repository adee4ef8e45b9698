// Resolution from the image itself: nuclei have a typical inscribed radius
// in microns, and their distance-transform maxima measure it in pixels.
// Touching nuclei merge into one object but keep about the same inscribed
// radius, so the estimate survives crowding.
#include <algorithm>
#include <cmath>
#include <vector>

#include "pipeline.hpp"

namespace flowd::nuclei {

double estimate_mpp(const cv::Mat& rgb, const SegmentParams& p) {
  constexpr int crop = 1024;
  const int cw = std::min(crop, rgb.cols), ch = std::min(crop, rgb.rows);
  const cv::Mat roi = rgb(cv::Rect((rgb.cols - cw) / 2, (rgb.rows - ch) / 2, cw, ch));
  const int rg = static_cast<int>(std::lround(256 * p.rbc_rg)), rb = static_cast<int>(std::lround(256 * p.rbc_rb));
  const cv::Mat tissue = tissue_mask(roi, p.background_level);
  const cv::Mat rbc = rbc_mask(roi, rg, rb, p.background_level);
  const cv::Mat haem = mask_haem(deconvolve(roi, stain_weights(0, p.od_max)), tissue, rbc);
  // Midway between the tissue and nuclear levels whatever threshold_frac is,
  // so tuning the segmentation threshold does not move the resolution estimate.
  const int level = nuclear_threshold(haem, tissue, rbc, 0.5);
  const cv::Mat mask = fill_holes(threshold_mask(haem, level));
  const cv::Mat dist = distance_transform(mask);
  int n = 0;
  const cv::Mat labels = label(mask, &n);
  std::vector<float> peak(static_cast<std::size_t>(n) + 1, 0.0f);
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    const float* d = dist.ptr<float>(y);
    for (int x = 0; x < labels.cols; ++x)
      if (l[x] > 0) peak[static_cast<std::size_t>(l[x])] = std::max(peak[static_cast<std::size_t>(l[x])], d[x]);
  }
  // Objects of inscribed radius under 2 px are noise at any magnification
  // this is meant for (>= 1 µm/px would make nuclei that small).
  std::vector<float> radii;
  for (std::size_t i = 1; i < peak.size(); ++i)
    if (peak[i] >= 2.0f && std::isfinite(peak[i])) radii.push_back(peak[i]);
  if (radii.size() < 5) return 0.25;
  std::nth_element(radii.begin(), radii.begin() + static_cast<std::ptrdiff_t>(radii.size() / 2), radii.end());
  const double mpp = p.nucleus_radius_um / radii[radii.size() / 2];
  const double k = std::round(std::log2(mpp / 0.25));
  const double snapped = 0.25 * std::exp2(k);
  // Scanners digitise at 0.25 µm/px (40x) or a power-of-two multiple; the
  // size measurement is only good to a factor of about 1.3, so the nearest
  // standard resolution is the better answer.
  (void)mpp;
  return snapped;
}

}  // namespace flowd::nuclei

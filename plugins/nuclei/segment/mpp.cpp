// Resolution from the image itself: nuclei have a typical inscribed radius
// in microns, and their distance-transform maxima measure it in pixels.
// Touching nuclei merge into one object but keep about the same inscribed
// radius, so the estimate survives crowding; only objects that look like
// nuclei (compact, darker than their surroundings) are measured, so dark
// patches of textured background do not drag it towards small radii.
#include <algorithm>
#include <cmath>
#include <vector>

#include "pipeline.hpp"
#include "select.hpp"

namespace flowd::nuclei {

namespace {
constexpr int crop = 1024;
}

double estimate_mpp(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc, const SegmentParams& p) {
  const int cw = std::min(crop, haem.cols), ch = std::min(crop, haem.rows);
  const cv::Rect roi((haem.cols - cw) / 2, (haem.rows - ch) / 2, cw, ch);
  const cv::Mat h = haem(roi), t = tissue(roi), r = rbc(roi);
  // Midway between the tissue and nuclear levels whatever threshold_frac is,
  // so tuning the segmentation threshold does not move the resolution estimate.
  const HaemLevels levels = haem_levels(h, t, r);
  const cv::Mat mask = fill_holes(threshold_mask(h, nuclear_threshold(levels, 0.5)));
  const cv::Mat dist = distance_transform(mask);
  int n = 0;
  const cv::Mat labels = label(mask, &n);
  // The ring is in pixels before the resolution is known: 4 px is 1-2 µm
  // at the resolutions this is for.
  const std::vector<ObjectMeasures> m = measure_objects(labels, h, valid_tissue(t, r), 4);
  const SelectRule rule{
      .ring_radius = 4,
      .min_contrast = static_cast<float>(p.contrast_frac * std::max(0, levels.nuclear - levels.background)),
      .min_solidity = p.min_solidity};
  std::vector<float> peak(static_cast<std::size_t>(n) + 1, 0.0f);
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    const float* d = dist.ptr<float>(y);
    for (int x = 0; x < labels.cols; ++x)
      if (l[x] > 0) peak[static_cast<std::size_t>(l[x])] = std::max(peak[static_cast<std::size_t>(l[x])], d[x]);
  }
  // Objects of inscribed radius under 2 px are noise at any magnification
  // this is meant for (>= 1 µm/px would make nuclei that small).
  // The median is weighted by area: whatever small debris and background
  // fragments pass the rule, most of the pixels are nuclei.
  std::vector<std::pair<float, std::int64_t>> radii;
  std::int64_t total = 0;
  for (std::size_t i = 1; i < peak.size(); ++i)
    if (peak[i] >= 2.0f && std::isfinite(peak[i]) && keeps(m[i], rule)) {
      radii.emplace_back(peak[i], m[i].area);
      total += m[i].area;
    }
  if (radii.size() < 5) return 0.25;
  std::sort(radii.begin(), radii.end());
  std::int64_t seen = 0;
  float median = radii.back().first;
  for (const auto& [radius, area] : radii)
    if (2 * (seen += area) >= total) {
      median = radius;
      break;
    }
  const double mpp = p.nucleus_radius_um / median;
  // Scanners digitise at 0.25 µm/px (40x) or a power-of-two multiple; the
  // size measurement is only good to a factor of about 1.3, so the nearest
  // standard resolution is the better answer. Finer than 40x is rare enough
  // that a large-looking median means large nuclei, not an 80x scan; beyond
  // 10x nuclei are too small to segment.
  return 0.25 * std::exp2(std::clamp(std::round(std::log2(mpp / 0.25)), 0.0, 2.0));
}

double estimate_mpp(const cv::Mat& rgb, const SegmentParams& p) {
  const int cw = std::min(crop, rgb.cols), ch = std::min(crop, rgb.rows);
  const cv::Mat roi = rgb(cv::Rect((rgb.cols - cw) / 2, (rgb.rows - ch) / 2, cw, ch));
  const int rg = static_cast<int>(std::lround(256 * p.rbc_rg)), rb = static_cast<int>(std::lround(256 * p.rbc_rb));
  const cv::Mat tissue = tissue_mask(roi, p.background_level);
  const cv::Mat rbc = rbc_mask(roi, rg, rb, p.background_level);
  return estimate_mpp(mask_haem(deconvolve(roi, stain_weights(0, p.od_max)), tissue, rbc), tissue, rbc, p);
}

}  // namespace flowd::nuclei

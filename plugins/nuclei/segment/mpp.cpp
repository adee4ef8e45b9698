// Resolution from the image itself: nuclei have a typical inscribed radius
// in microns, and their distance-transform maxima measure it in pixels.
// Touching nuclei merge into one object but keep about the same inscribed
// radius, so the estimate survives crowding; only objects that look like
// nuclei (compact, darker than their surroundings) are measured, so dark
// patches of textured background do not drag it towards small radii.
#include <algorithm>
#include <cmath>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "pipeline.hpp"
#include "select.hpp"

namespace flowd::nuclei {

namespace {

constexpr int crop = 1024;

// The area-weighted median inscribed radius (px) of the objects of `h` above
// the midpoint level that the selection rule keeps; 0 when fewer than 5.
// The median is weighted by area: whatever small debris and background
// fragments pass the rule, most of the pixels are nuclei.
float median_radius(const cv::Mat& h, const cv::Mat& valid, const HaemLevels& levels, const SegmentParams& p,
                    int ring) {
  // Midway between the tissue and nuclear levels whatever threshold_frac is,
  // so tuning the segmentation threshold does not move the resolution estimate.
  const cv::Mat mask = fill_holes(threshold_mask(h, nuclear_threshold(levels, 0.5)));
  const cv::Mat dist = distance_transform(mask);
  int n = 0;
  const cv::Mat labels = label(mask, &n);
  const std::vector<ObjectMeasures> m = measure_objects(labels, h, valid, ring);
  const SelectRule rule{
      .ring_radius = ring,
      .min_contrast = static_cast<float>(p.contrast_frac * std::max(0, levels.nuclear - levels.background)),
      .min_solidity = p.min_solidity};
  std::vector<float> peak(static_cast<std::size_t>(n) + 1, 0.0f);
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    const float* d = dist.ptr<float>(y);
    for (int x = 0; x < labels.cols; ++x)
      if (l[x] > 0) peak[static_cast<std::size_t>(l[x])] = std::max(peak[static_cast<std::size_t>(l[x])], d[x]);
  }
  // Objects of inscribed radius under 2 px are noise at any scale.
  std::vector<std::pair<float, std::int64_t>> radii;
  std::int64_t total = 0;
  for (std::size_t i = 1; i < peak.size(); ++i)
    if (peak[i] >= 2.0f && std::isfinite(peak[i]) && keeps(m[i], rule)) {
      radii.emplace_back(peak[i], m[i].area);
      total += m[i].area;
    }
  if (radii.size() < 5) return 0;
  std::sort(radii.begin(), radii.end());
  std::int64_t seen = 0;
  for (const auto& [radius, area] : radii)
    if (2 * (seen += area) >= total) return radius;
  return radii.back().first;
}

}  // namespace

double estimate_mpp(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc, const SegmentParams& p,
                    const HaemLevels* whole) {
  const int cw = std::min(crop, haem.cols), ch = std::min(crop, haem.rows);
  const cv::Rect roi((haem.cols - cw) / 2, (haem.rows - ch) / 2, cw, ch);
  const cv::Mat h = haem(roi), valid = valid_tissue(tissue(roi), rbc(roi));
  const bool all = cw == haem.cols && ch == haem.rows;
  const HaemLevels levels = all && whole ? *whole : haem_levels(h, tissue(roi), rbc(roi));
  // Nuclei are 10-40 px across at 40x and 20x, so the estimate works on
  // 2x2-binned pixels (a quarter of the work) and goes back to full
  // resolution when the objects come out too small to measure there, or
  // within -10 %/+15 % of the 40x/20x boundary (9.3 px with the default
  // anchor), where binning is too coarse to decide: on the generated
  // conditions binned radii were 10.0-18.4 px at 40x and 6.3-8.3 px at 20x,
  // full-resolution ones 11.2-17 and 6.4-8.0.
  float radius = 0;
  if (cw >= 64 && ch >= 64) {
    cv::Mat h2, v2;
    cv::resize(h, h2, {cw / 2, ch / 2}, 0, 0, cv::INTER_AREA);
    cv::resize(valid, v2, {cw / 2, ch / 2}, 0, 0, cv::INTER_AREA);
    v2 = threshold_mask(v2, 128);
    radius = 2 * median_radius(h2, v2, levels, p, 2);
  }
  const double boundary = p.nucleus_radius_um / (0.25 * std::sqrt(2.0));
  if (radius < 6 || (radius > 0.9 * boundary && radius < 1.15 * boundary))
    radius = median_radius(h, valid, levels, p, 4);
  if (!(radius > 0)) return 0.25;
  const double mpp = p.nucleus_radius_um / radius;
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

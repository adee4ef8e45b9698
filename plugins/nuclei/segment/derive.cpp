// From physical parameters to the integers each operation receives.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "pipeline.hpp"

namespace flowd::nuclei {

namespace {

int median_of(const std::array<std::uint64_t, 256>& hist, int lo, int hi) {
  std::uint64_t total = 0;
  for (int v = lo; v <= hi; ++v) total += hist[static_cast<std::size_t>(v)];
  if (total == 0) return lo;
  std::uint64_t seen = 0;
  for (int v = lo; v <= hi; ++v) {
    seen += hist[static_cast<std::size_t>(v)];
    if (2 * seen >= total) return v;
  }
  return hi;
}

int otsu(const std::array<std::uint64_t, 256>& hist) {
  double total = 0, sum = 0;
  for (int v = 0; v < 256; ++v) {
    total += static_cast<double>(hist[static_cast<std::size_t>(v)]);
    sum += v * static_cast<double>(hist[static_cast<std::size_t>(v)]);
  }
  double w0 = 0, s0 = 0, best = -1;
  int level = 0;
  for (int t = 0; t < 255; ++t) {
    w0 += static_cast<double>(hist[static_cast<std::size_t>(t)]);
    s0 += t * static_cast<double>(hist[static_cast<std::size_t>(t)]);
    const double w1 = total - w0;
    if (w0 == 0 || w1 == 0) continue;
    const double d = s0 / w0 - (sum - s0) / w1;
    const double between = w0 * w1 * d * d;
    if (between > best) {
      best = between;
      level = t;
    }
  }
  return level;
}

}  // namespace

HaemLevels haem_levels(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc) {
  std::array<std::uint64_t, 256> hist{};
  for (int y = 0; y < haem.rows; ++y) {
    const std::uint8_t* h = haem.ptr<std::uint8_t>(y);
    const std::uint8_t* t = tissue.ptr<std::uint8_t>(y);
    const std::uint8_t* r = rbc.ptr<std::uint8_t>(y);
    for (int x = 0; x < haem.cols; ++x)
      if (t[x] && !r[x]) ++hist[h[x]];
  }
  // Otsu's level only separates the two populations; the boundary of a
  // blurred nucleus lies between their typical levels, which the class
  // medians give whatever the proportion of nuclei.
  const int t = otsu(hist);
  return {median_of(hist, 0, t), median_of(hist, t + 1, 255)};
}

int nuclear_threshold(const HaemLevels& l, double frac) {
  const int level = static_cast<int>(std::lround(l.background + frac * (l.nuclear - l.background)));
  return std::clamp(level, 1, 255);
}

int nuclear_threshold(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc, double frac) {
  return nuclear_threshold(haem_levels(haem, tissue, rbc), frac);
}

void derive_levels(Derived& d, const HaemLevels& l, const SegmentParams& p) {
  d.threshold = nuclear_threshold(l, p.threshold_frac);
  d.min_contrast = static_cast<float>(p.contrast_frac * std::max(0, l.nuclear - l.background));
}

Derived derive_sizes(double mpp, const SegmentParams& p) {
  if (!(mpp > 0)) throw std::invalid_argument("derive_sizes: microns per pixel must be positive");
  Derived d;
  d.mpp = mpp;
  d.tissue_level = p.background_level;
  d.rbc_rg_q8 = static_cast<int>(std::lround(256 * p.rbc_rg));
  d.rbc_rb_q8 = static_cast<int>(std::lround(256 * p.rbc_rb));
  d.od_max = p.od_max;
  d.open_radius = std::max(0, static_cast<int>(std::lround(p.open_radius_um / d.mpp)));
  const double px_area = d.mpp * d.mpp;
  d.min_area = std::max(1, static_cast<int>(std::lround(p.min_area_um2 / px_area)));
  d.max_hole_area = std::max(0, static_cast<int>(std::lround(p.max_hole_um2 / px_area)));
  d.h = static_cast<float>(std::max(0.5, p.h_frac * p.nucleus_radius_um / d.mpp));
  d.ring_radius = std::max(1, static_cast<int>(std::lround(p.ring_um / d.mpp)));
  d.min_solidity = p.min_solidity;
  d.min_ratio = p.contrast_ratio;
  return d;
}

Derived derive(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc, const SegmentParams& p) {
  const HaemLevels levels = haem_levels(haem, tissue, rbc);
  Derived d = derive_sizes(p.mpp > 0 ? p.mpp : estimate_mpp(haem, tissue, rbc, p, &levels), p);
  derive_levels(d, levels, p);
  return d;
}

Derived derive(const cv::Mat& rgb, const SegmentParams& p) {
  const Derived sizes = derive_sizes(1, p);  // the resolution-free levels
  const cv::Mat tissue = tissue_mask(rgb, sizes.tissue_level);
  const cv::Mat rbc = rbc_mask(rgb, sizes.rbc_rg_q8, sizes.rbc_rb_q8, sizes.tissue_level);
  return derive(mask_haem(deconvolve(rgb, stain_weights(0, sizes.od_max)), tissue, rbc), tissue, rbc, p);
}

}  // namespace flowd::nuclei

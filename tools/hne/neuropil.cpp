#include "neuropil.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <opencv2/imgproc.hpp>

namespace flowd::hne::detail {

namespace {

constexpr int shift = 4;  // sub-pixel vertex coordinates of the strokes

cv::Point fixed(double x, double y) {
  return {static_cast<int>(std::lround(x * (1 << shift))), static_cast<int>(std::lround(y * (1 << shift)))};
}

// Thin wavy processes in every direction: random walks of 1.5 um steps that
// turn a little at each, drawn one pixel wide and anti-aliased, so at 40x a
// stroke is a 0.25 um fibril and at 20x a 0.5 um one.
cv::Mat draw_processes(int w, int h, double um, Rng& rng) {
  cv::Mat f = cv::Mat::zeros(h, w, CV_8U);
  const double area_um2 = static_cast<double>(w) * h / (um * um);
  const auto n = static_cast<std::size_t>(area_um2 / 10.0);
  std::vector<cv::Point> pts;
  for (std::size_t i = 0; i < n; ++i) {
    double x = rng.uniform(-10.0 * um, w + 10.0 * um), y = rng.uniform(-10.0 * um, h + 10.0 * um);
    double theta = rng.uniform(0.0, 2.0 * std::numbers::pi);
    const int steps = 4 + static_cast<int>(rng.uniform() * 14.0);
    const double value = rng.uniform(70.0, 255.0);
    pts.clear();
    for (int k = 0; k < steps; ++k) {
      pts.push_back(fixed(x, y));
      theta += 0.35 * rng.normal();
      x += std::cos(theta) * 1.5 * um;
      y += std::sin(theta) * 1.5 * um;
    }
    const std::vector<std::vector<cv::Point>> polys{pts};
    cv::polylines(f, polys, false, cv::Scalar(value), 1, cv::LINE_AA, shift);
  }
  return f;
}

// Processes cut across by the section: dark dots 0.6-1.6 um across.
cv::Mat draw_dots(int w, int h, double um, Rng& rng) {
  cv::Mat d = cv::Mat::zeros(h, w, CV_8U);
  const double area_um2 = static_cast<double>(w) * h / (um * um);
  const auto n = static_cast<std::size_t>(area_um2 / 18.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = rng.uniform(0.0, w), y = rng.uniform(0.0, h);
    const double r = rng.uniform(0.3, 0.8) * um;
    const int radius = std::max(1, static_cast<int>(std::lround(r * (1 << shift))));
    cv::circle(d, fixed(x, y), radius, cv::Scalar(rng.uniform(120.0, 255.0)), cv::FILLED, cv::LINE_AA, shift);
  }
  return d;
}

}  // namespace

Neuropil::Neuropil(const Params& p, Rng& rng)
    : w_(p.width),
      h_(p.height),
      mixed_(p.tissue == Tissue::mixed),
      fibres_(draw_processes(p.width, p.height, 1.0 / p.mpp, rng)),
      dots_(draw_dots(p.width, p.height, 1.0 / p.mpp, rng)),
      speck_(512, 0.35 / p.mpp, rng),
      grain_(256, 0.9 / p.mpp, rng),
      blotch_(p.width, p.height, 2.0 / p.mpp, rng),
      level_(p.width, p.height, 20.0 / p.mpp, rng),
      region_(p.width, p.height, 50.0 / p.mpp, rng),
      blotch_row_(static_cast<std::size_t>(p.width)),
      level_row_(static_cast<std::size_t>(p.width)),
      region_row_(static_cast<std::size_t>(p.width)) {
  if (!mixed_) return;
  // The region-field level above which a neuropil_share of the image lies,
  // from samples every few microns (as the glass share is found).
  if (p.neuropil_share <= 0.0) {
    share_threshold_ = std::numeric_limits<double>::infinity();
    return;
  }
  if (p.neuropil_share >= 1.0) {
    share_threshold_ = -std::numeric_limits<double>::infinity();
    return;
  }
  const double step = 4.0 / p.mpp;
  const int nx = std::clamp(static_cast<int>(w_ / step), 16, 512),
            ny = std::clamp(static_cast<int>(h_ / step), 16, 512);
  std::vector<float> v;
  v.reserve(static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny));
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i)
      v.push_back(region_.at((i + 0.5) * w_ / nx, (j + 0.5) * h_ / ny));
  const auto k = static_cast<std::size_t>((1.0 - p.neuropil_share) * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  share_threshold_ = v[k];
}

void Neuropil::row(int y, float* share, float* h, float* e) {
  blotch_.row(y, blotch_row_.data());
  level_.row(y, level_row_.data());
  if (mixed_) region_.row(y, region_row_.data());
  const std::uint8_t* fib = fibres_.ptr<std::uint8_t>(y);
  const std::uint8_t* dot = dots_.ptr<std::uint8_t>(y);
  const float* sp = speck_.row(y);
  const int ms = speck_.mask(), mg = grain_.mask();
  for (int x = 0; x < w_; ++x) {
    const auto i = static_cast<std::size_t>(x);
    // The boundary between neuropil and stroma is some 15 um wide.
    share[x] = mixed_ ? static_cast<float>(smoothstep((region_row_[i] - share_threshold_) / 0.3 + 0.5)) : 1.0f;
    const double speck = sp[x & ms], grain = grain_.row(x)[y & mg];
    const double fibre = fib[x] * (1.0 / 255.0), cut = dot[x] * (1.0 / 255.0);
    // Faint blotches a few microns across: the upper tail of a 2 um field,
    // the part of the matrix a global threshold picks up in fragments.
    const double blotch = std::max(0.0, blotch_row_[i] - 0.8);
    const double base = 0.075 * std::max(0.4, 1.0 + 0.25 * level_row_[i]);
    const double hh = base + 0.02 * speck + 0.02 * grain + 0.11 * fibre + 0.22 * cut + 0.22 * blotch;
    const double ee = 0.09 + 0.03 * fibre + 0.01 * speck;
    h[x] = static_cast<float>(std::max(0.0, hh));
    e[x] = static_cast<float>(std::max(0.0, ee));
  }
}

}  // namespace flowd::hne::detail

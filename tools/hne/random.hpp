#pragma once
// The random building blocks of the generator (internal to tools/hne):
// a seedable generator with its own transforms, smooth Gaussian random
// fields and periodic band-limited textures.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace flowd::hne::detail {

// splitmix64's finaliser: decorrelates seeds that differ in a few bits.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Own transforms of mt19937_64: the standard distributions may differ
// between standard libraries, and the data sets should not.
class Rng {
public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::uint64_t bits() { return engine_(); }
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  bool chance(double p) { return uniform() < p; }
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  // A unit vector with uniform angle.
  std::pair<double, double> direction() {
    const double t = uniform(0.0, 2.0 * std::numbers::pi);
    return {std::cos(t), std::sin(t)};
  }

private:
  std::mt19937_64 engine_;
};

inline double clamp01(double v) noexcept { return std::clamp(v, 0.0, 1.0); }
inline double smoothstep(double t) noexcept {
  t = clamp01(t);
  return t * t * (3.0 - 2.0 * t);
}

// A smooth Gaussian random field with unit variance and correlation length
// `scale` pixels: white noise on a coarse lattice, Gaussian-blurred there and
// interpolated bilinearly. Lattice spacing scale/3 keeps the field smooth at a
// fraction of the cost of a full-resolution blur.
class Field {
public:
  Field(int width, int height, double scale, Rng& rng) : step_(std::max(1.0, scale / 3.0)) {
    const double sigma = scale / step_;
    pad_ = static_cast<int>(std::ceil(3.0 * sigma)) + 1;
    const int gw = static_cast<int>(width / step_) + 2 * pad_ + 2;
    const int gh = static_cast<int>(height / step_) + 2 * pad_ + 2;
    grid_.create(gh, gw, CV_32F);
    for (int y = 0; y < gh; ++y)
      for (int x = 0; x < gw; ++x)
        grid_.at<float>(y, x) = static_cast<float>(rng.normal());
    cv::GaussianBlur(grid_, grid_, cv::Size(), sigma, sigma, cv::BORDER_REFLECT);
    // The variance of white noise after a 2-D Gaussian of width sigma is
    // 1 / (4 pi sigma^2): normalising analytically (not by the sample
    // deviation) keeps a small image's field as calm as a large one's.
    grid_ *= 2.0 * std::sqrt(std::numbers::pi) * sigma;
    columns(width);
  }

  // Applies a pointwise map to the lattice: interpolating mapped values is
  // as good at this smoothness and saves the map per pixel.
  template <class F>
  void transform(F&& f) {
    for (auto it = grid_.begin<float>(); it != grid_.end<float>(); ++it)
      *it = static_cast<float>(f(*it));
  }

  float at(double x, double y) const {
    const double gx = std::clamp(x / step_ + pad_, 0.0, grid_.cols - 1.001);
    const double gy = std::clamp(y / step_ + pad_, 0.0, grid_.rows - 1.001);
    const int ix = static_cast<int>(gx), iy = static_cast<int>(gy);
    const float fx = static_cast<float>(gx - ix), fy = static_cast<float>(gy - iy);
    const float* r0 = grid_.ptr<float>(iy);
    const float* r1 = grid_.ptr<float>(iy + 1);
    const float top = r0[ix] + fx * (r0[ix + 1] - r0[ix]);
    const float bottom = r1[ix] + fx * (r1[ix + 1] - r1[ix]);
    return top + fy * (bottom - top);
  }

  // The field at the centres of pixel row y, into out[0 .. width).
  void row(int y, float* out) {
    const double gy = std::clamp((y + 0.5) / step_ + pad_, 0.0, grid_.rows - 1.001);
    const int iy = static_cast<int>(gy);
    const float fy = static_cast<float>(gy - iy);
    const float* r0 = grid_.ptr<float>(iy);
    const float* r1 = grid_.ptr<float>(iy + 1);
    for (int gx = 0; gx < grid_.cols; ++gx)
      lattice_[static_cast<std::size_t>(gx)] = r0[gx] + fy * (r1[gx] - r0[gx]);
    const std::size_t n = xi_.size();
    for (std::size_t x = 0; x < n; ++x) {
      const float* l = &lattice_[static_cast<std::size_t>(xi_[x])];
      out[x] = l[0] + xw_[x] * (l[1] - l[0]);
    }
  }

private:
  void columns(int width) {
    xi_.resize(static_cast<std::size_t>(width));
    xw_.resize(static_cast<std::size_t>(width));
    for (int x = 0; x < width; ++x) {
      const double gx = std::clamp((x + 0.5) / step_ + pad_, 0.0, grid_.cols - 1.001);
      xi_[static_cast<std::size_t>(x)] = static_cast<int>(gx);
      xw_[static_cast<std::size_t>(x)] = static_cast<float>(gx - static_cast<int>(gx));
    }
    lattice_.resize(static_cast<std::size_t>(grid_.cols));
  }

  double step_;
  int pad_ = 0;
  cv::Mat grid_;
  std::vector<int> xi_;
  std::vector<float> xw_;
  std::vector<float> lattice_;
};

// Band-limited noise with unit variance on a periodic square, for textures at
// the scale of chromatin or cytoplasmic granules. Periodic so it costs
// size^2 floats whatever the image size; callers offset and combine periods
// so the repetition does not show.
class Texture {
public:
  // `size` must be a power of two.
  Texture(int size, double sigma, Rng& rng) : size_(size), mask_(size - 1) {
    sigma = std::max(0.6, sigma);
    const int pad = static_cast<int>(std::ceil(4.0 * sigma)) + 1;
    cv::Mat base(size, size, CV_32F);
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x)
        base.at<float>(y, x) = static_cast<float>(rng.normal());
    cv::Mat wide;
    cv::copyMakeBorder(base, wide, pad, pad, pad, pad, cv::BORDER_WRAP);
    cv::GaussianBlur(wide, wide, cv::Size(), sigma, sigma, cv::BORDER_REFLECT);
    cv::Mat t = wide(cv::Rect(pad, pad, size, size)).clone();
    cv::Scalar mean, dev;
    cv::meanStdDev(t, mean, dev);
    t = (t - mean[0]) / std::max(dev[0], 1e-6);
    data_.assign(t.begin<float>(), t.end<float>());
  }
  float at(int x, int y) const { return row(y)[x & mask_]; }
  const float* row(int y) const {
    return &data_[static_cast<std::size_t>(y & mask_) * static_cast<std::size_t>(size_)];
  }
  int mask() const { return mask_; }

private:
  int size_, mask_;
  std::vector<float> data_;
};

}  // namespace flowd::hne::detail

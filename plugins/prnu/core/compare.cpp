#include "compare.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace flowd::prnu {

double ncc(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size())
    throw std::invalid_argument("prnu ncc: " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
                                " samples");
  // 16 independent float lanes per sum, which the compiler turns into SIMD
  // registers without -ffast-math (a single float accumulator is a serial
  // dependency it may not reorder); each 1024-sample block is folded into
  // double, so float rounding never spans more than 64 terms per lane.
  constexpr std::size_t lanes = 16;
  constexpr std::size_t block = 1024;
  const std::size_t n = a.size();
  const float* pa = a.data();
  const float* pb = b.data();
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  std::size_t i = 0;
  for (; i + block <= n; i += block) {
    std::array<float, lanes> xy{}, xx{}, yy{};
    for (std::size_t j = i; j < i + block; j += lanes)
      for (std::size_t l = 0; l < lanes; ++l) {
        const float x = pa[j + l];
        const float y = pb[j + l];
        xy[l] += x * y;
        xx[l] += x * x;
        yy[l] += y * y;
      }
    for (std::size_t l = 0; l < lanes; ++l) {
      sxy += xy[l];
      sxx += xx[l];
      syy += yy[l];
    }
  }
  for (; i < n; ++i) {
    const double x = pa[i];
    const double y = pb[i];
    sxy += x * y;
    sxx += x * x;
    syy += y * y;
  }
  const double den = std::sqrt(sxx * syy);
  return den > 0.0 ? sxy / den : 0.0;
}

namespace {

double mean_of(std::span<const float> v) {
  double s = 0.0;
  for (const float x : v)
    s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

int signed_shift(int index, int size) noexcept { return index <= size / 2 ? index : index - size; }

}  // namespace

Image crosscorr_2d(const ImageView& a, const ImageView& b, FftPlans& plans) {
  require_grey(a, "crosscorr_2d");
  require_grey(b, "crosscorr_2d");
  require_same_shape(a, b, "crosscorr_2d");
  const int w = a.width;
  const int h = a.height;
  const std::size_t n = a.pixels();
  const std::size_t half = static_cast<std::size_t>(h) * static_cast<std::size_t>(half_width(w));

  RealArray real(n);
  ComplexArray fa(half), fb(half);
  const auto ma = static_cast<float>(mean_of(a.data));
  for (std::size_t i = 0; i < n; ++i)
    real[i] = a.data[i] - ma;
  plans.forward(w, h, real, fa);
  const auto mb = static_cast<float>(mean_of(b.data));
  for (std::size_t i = 0; i < n; ++i)
    real[i] = b.data[i] - mb;
  plans.forward(w, h, real, fb);
  for (std::size_t i = 0; i < half; ++i)
    fa[i] *= std::conj(fb[i]);
  plans.inverse(w, h, fa, real);

  Image out(w, h, 1);
  const float inv_n = 1.0f / static_cast<float>(n);
  for (std::size_t i = 0; i < n; ++i)
    out.data[i] = real[i] * inv_n;
  return out;
}

PceResult pce(const ImageView& cc, const PceOptions& options) {
  require_grey(cc, "pce");
  if (options.neighbourhood < 1 || options.neighbourhood % 2 == 0 || options.search_radius < 0)
    throw std::invalid_argument("prnu pce: the neighbourhood must be odd and positive, the search radius >= 0");
  const int w = cc.width;
  const int h = cc.height;
  auto wrap = [](int i, int size) { return ((i % size) + size) % size; };

  // Search in rings of growing shift so that ties keep the smallest one.
  const int ry = std::min(options.search_radius, h / 2);
  const int rx = std::min(options.search_radius, w / 2);
  int px = 0, py = 0;
  float best = std::abs(cc.at(0, 0));
  for (int dy = -ry; dy <= ry; ++dy)
    for (int dx = -rx; dx <= rx; ++dx) {
      const int x = wrap(dx, w);
      const int y = wrap(dy, h);
      const float v = std::abs(cc.at(x, y));
      const int ring = std::max(std::abs(dx), std::abs(dy));
      const int best_ring = std::max(std::abs(signed_shift(px, w)), std::abs(signed_shift(py, h)));
      if (v > best || (v == best && ring < best_ring)) {
        best = v;
        px = x;
        py = y;
      }
    }

  PceResult r;
  r.peak_x = px;
  r.peak_y = py;
  r.shift_x = signed_shift(px, w);
  r.shift_y = signed_shift(py, h);
  r.peak = cc.at(px, py);

  // Summed directly, not as total minus box: the box holds the peak, whose
  // square can dwarf the rest.
  const int half = options.neighbourhood / 2;
  const int by = std::min(options.neighbourhood, h);
  const int bx = std::min(options.neighbourhood, w);
  auto in_box = [&](int i, int peak, int size, int extent) {
    return extent == size || std::abs(signed_shift(wrap(i - peak, size), size)) <= half;
  };
  double sum = 0.0;
  for (int y = 0; y < h; ++y) {
    const bool row_in = in_box(y, py, h, by);
    for (int x = 0; x < w; ++x) {
      if (row_in && in_box(x, px, w, bx)) continue;
      const double v = cc.at(x, y);
      sum += v * v;
    }
  }
  const std::size_t outside = cc.pixels() - static_cast<std::size_t>(by) * static_cast<std::size_t>(bx);
  if (outside == 0) return r;
  r.energy = sum / static_cast<double>(outside);
  if (r.energy > 0.0) r.pce = (r.peak >= 0 ? 1.0 : -1.0) * r.peak * r.peak / r.energy;
  return r;
}

}  // namespace flowd::prnu

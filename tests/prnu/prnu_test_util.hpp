#pragma once
// Helpers shared by the PRNU core tests: seeded random images and the
// slow, obviously-correct references the fast code is checked against.
#include "image.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <vector>

namespace flowd::prnu::test {

inline Image random_image(int w, int h, int c, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Image im(w, h, c);
  for (float& v : im.data)
    v = u(rng);
  return im;
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (const float x : v)
    m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return m;
}

using Cplx = std::complex<double>;

// The textbook 2-D DFT, O(N^2): F[u][v] = sum p[y][x] exp(sign 2 pi i (uy/h + vx/w)).
inline std::vector<Cplx> naive_dft2(const std::vector<Cplx>& p, int w, int h, int sign) {
  const double pi = std::acos(-1.0);
  std::vector<Cplx> out(p.size());
  for (int u = 0; u < h; ++u)
    for (int v = 0; v < w; ++v) {
      Cplx s = 0.0;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const double phase = sign * 2.0 * pi * (static_cast<double>(u * y) / h + static_cast<double>(v * x) / w);
          s += p[static_cast<std::size_t>(y * w + x)] * Cplx(std::cos(phase), std::sin(phase));
        }
      out[static_cast<std::size_t>(u * w + v)] = s;
    }
  return out;
}

// scipy.ndimage.uniform_filter(x, size, mode='constant') on an h x w array.
inline std::vector<double> uniform_filter_constant(const std::vector<double>& x, int w, int h, int size) {
  std::vector<double> out(x.size(), 0.0);
  const int r = size / 2;
  for (int y = 0; y < h; ++y)
    for (int xx = 0; xx < w; ++xx) {
      double s = 0.0;
      for (int dy = -r; dy <= r; ++dy)
        for (int dx = -r; dx <= r; ++dx) {
          const int yy = y + dy, xs = xx + dx;
          if (yy >= 0 && yy < h && xs >= 0 && xs < w)
            s += x[static_cast<std::size_t>(yy * w + xs)];
        }
      out[static_cast<std::size_t>(y * w + xx)] = s / (size * size);
    }
  return out;
}

// prnu-python's wiener_adaptive(x, noise_var), windows 3, 5, 7, 9.
inline std::vector<double> wiener_adaptive(const std::vector<double>& x, int w, int h, double noise_var) {
  std::vector<double> energy(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    energy[i] = x[i] * x[i];
  std::vector<double> coef_var(x.size(), 1e300);
  for (const int size : {3, 5, 7, 9}) {
    const auto avg = uniform_filter_constant(energy, w, h, size);
    for (std::size_t i = 0; i < x.size(); ++i)
      coef_var[i] = std::min(coef_var[i], std::max(0.0, avg[i] - noise_var));
  }
  std::vector<double> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = x[i] * noise_var / (coef_var[i] + noise_var);
  return out;
}

}  // namespace flowd::prnu::test

#include "filters.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "local_energy.hpp"
#include "simd.hpp"

namespace flowd::prnu {

namespace {

void check_grey_channels(int channels) {
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("prnu grey: needs 1 or 3 channels, got " + std::to_string(channels));
}

// Grey row y of an RGB (or grey) view into dst, or a pointer to the row
// itself when the view is grey.
FLOWD_PRNU_CLONES
void weigh_rgb(const float* __restrict src, float* __restrict dst, std::size_t w, float wr, float wg, float wb) {
  for (std::size_t i = 0; i < w; ++i)
    dst[i] = wr * src[3 * i] + wg * src[3 * i + 1] + wb * src[3 * i + 2];
}

const float* grey_row(const ImageView& rgb, int y, float wr, float wg, float wb, float* dst) {
  const auto w = static_cast<std::size_t>(rgb.width);
  if (rgb.channels == 1) return rgb.data.data() + static_cast<std::size_t>(y) * w;
  weigh_rgb(rgb.data.data() + static_cast<std::size_t>(y) * w * 3, dst, w, wr, wg, wb);
  return dst;
}

// out = scale * (b - a), or out + scale * (b - a) when Add.
template <bool Add>
FLOWD_PRNU_CLONES void scaled_difference(float* __restrict out, const float* __restrict a, const float* __restrict b,
                                         float scale, std::size_t n) {
  for (std::size_t x = 0; x < n; ++x)
    if constexpr (Add)
      out[x] = out[x] + scale * (b[x] - a[x]);
    else
      out[x] = scale * (b[x] - a[x]);
}

// Rows of a block (interleaved re, im; kBlock pairs per row): the first nb
// pairs' re^2 + im^2 (std::norm) times inv_n, to rows `stride` apart.
FLOWD_PRNU_CLONES
void block_power(const float* __restrict block, int h, int nb, float inv_n, float* __restrict dst, std::size_t stride) {
  constexpr int kb = BlockSpectrum::kBlock;
  for (int y = 0; y < h; ++y) {
    const float* src = block + static_cast<std::size_t>(y) * 2 * kb;
    float* d = dst + static_cast<std::size_t>(y) * stride;
    if (nb == kb)
      for (int j = 0; j < kb; ++j)
        d[j] = (src[2 * j] * src[2 * j] + src[2 * j + 1] * src[2 * j + 1]) * inv_n;
    else
      for (int j = 0; j < nb; ++j)
        d[j] = (src[2 * j] * src[2 * j] + src[2 * j + 1] * src[2 * j + 1]) * inv_n;
  }
}

// The same rows times their gains (rows `stride` apart).
FLOWD_PRNU_CLONES
void block_gain(float* __restrict block, int h, int nb, const float* __restrict gain, std::size_t stride) {
  constexpr int kb = BlockSpectrum::kBlock;
  for (int y = 0; y < h; ++y) {
    float* dst = block + static_cast<std::size_t>(y) * 2 * kb;
    const float* g = gain + static_cast<std::size_t>(y) * stride;
    if (nb == kb)
      for (int j = 0; j < kb; ++j) {
        dst[2 * j] *= g[j];
        dst[2 * j + 1] *= g[j];
      }
    else
      for (int j = 0; j < nb; ++j) {
        dst[2 * j] *= g[j];
        dst[2 * j + 1] *= g[j];
      }
  }
}

Image weighted_grey(const ImageView& rgb, float wr, float wg, float wb) {
  if (rgb.channels == 1) return Image::copy_of(rgb);
  check_grey_channels(rgb.channels);
  Image out(rgb.width, rgb.height, 1);
  const auto w = static_cast<std::size_t>(rgb.width);
  for (int y = 0; y < rgb.height; ++y)
    grey_row(rgb, y, wr, wg, wb, out.data.data() + static_cast<std::size_t>(y) * w);
  return out;
}

// FastNoise's gradient scaling: (dx, dy) / (1 + |(dx, dy)|).
FLOWD_PRNU_CLONES
void scale_gradient(float* dx, float* dy, std::size_t n) {
  for (std::size_t x = 0; x < n; ++x) {
    const float scale = 1.0f / (1.0f + std::sqrt(dx[x] * dx[x] + dy[x] * dy[x]));
    dx[x] *= scale;
    dy[x] *= scale;
  }
}

// The FastNoise derivative along a row of n samples: one-sided at both ends,
// central inside.
FLOWD_PRNU_CLONES
void derivative(const float* __restrict in, float* __restrict out, int n) {
  if (n == 1) {
    out[0] = 0.0f;
    return;
  }
  out[0] = in[1] - in[0];
  for (int i = 1; i < n - 1; ++i)
    out[i] = 0.5f * (in[i + 1] - in[i - 1]);
  out[n - 1] = in[n - 1] - in[n - 2];
}

// FastNoise a row at a time: grey(r, scratch) gives grey row r (called in
// increasing r), emit(y, row) receives output row y (mutable, the caller may
// change it in place). Three grey rows and three rows of the scaled
// gradient are kept; no image-sized temporary.
template <class Grey, class Emit>
void fast_noise_rows(int w, int h, Grey&& grey, Emit&& emit) {
  const auto uw = static_cast<std::size_t>(w);
  std::vector<float> grey_store(3 * uw), sdx(3 * uw), sdy(3 * uw), out(uw);
  const float* g[3] = {nullptr, nullptr, nullptr};  // grey row r in slot r % 3
  int loaded = 0;
  auto load_to = [&](int r) {
    for (; loaded <= r && loaded < h; ++loaded) {
      const auto slot = static_cast<std::size_t>(loaded % 3);
      g[slot] = grey(loaded, grey_store.data() + slot * uw);
    }
  };
  auto slot = [&](std::vector<float>& v, int r) { return v.data() + static_cast<std::size_t>(r % 3) * uw; };
  auto scaled_row = [&](int s) {
    load_to(s + 1);
    float* dx = slot(sdx, s);
    float* dy = slot(sdy, s);
    derivative(g[s % 3], dx, w);
    if (h == 1) {
      std::fill(dy, dy + uw, 0.0f);
    } else {
      const int below = s == h - 1 ? s : s + 1;
      const int above = s == 0 ? 0 : s - 1;
      const float scale = (s == 0 || s == h - 1) ? 1.0f : 0.5f;
      scaled_difference<false>(dy, g[above % 3], g[below % 3], scale, uw);
    }
    scale_gradient(dx, dy, uw);
  };
  auto output_row = [&](int y) {
    derivative(slot(sdx, y), out.data(), w);
    if (h > 1) {
      const int below = y == h - 1 ? y : y + 1;
      const int above = y == 0 ? 0 : y - 1;
      const float scale = (y == 0 || y == h - 1) ? 1.0f : 0.5f;
      scaled_difference<true>(out.data(), slot(sdy, above), slot(sdy, below), scale, uw);
    }
    emit(y, out.data());
  };
  for (int s = 0; s < h; ++s) {
    scaled_row(s);
    if (s >= 1) output_row(s - 1);
  }
  output_row(h - 1);
}

// Sums of n floats (and of their squares) in double, in four independent
// partial sums (vectorisable) added at the end. Every variance and mean of
// this file goes through these, row by row, so that fused and plain paths
// give the same bits.
double sum_of(const float* v, std::size_t n) noexcept {
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t l = 0; l < 4; ++l)
      s[l] += v[i + l];
  for (; i < n; ++i)
    s[i & 3] += v[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

double sum_of_squares(const float* v, std::size_t n) noexcept {
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t l = 0; l < 4; ++l)
      s[l] += static_cast<double>(v[i + l]) * v[i + l];
  for (; i < n; ++i)
    s[i & 3] += static_cast<double>(v[i]) * v[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

double sum_of_squared_deviations(const float* v, std::size_t n, double mean) noexcept {
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t l = 0; l < 4; ++l)
      s[l] += (v[i + l] - mean) * (v[i + l] - mean);
  for (; i < n; ++i)
    s[i & 3] += (v[i] - mean) * (v[i] - mean);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// ZeroMeanTotal's row step on one row (means in double: a 3648-sample row of
// float sums drifts otherwise), then the row added to the column sums of its
// parity.
void zero_mean_row(float* row, int w, double* column_sums) {
  // Even and odd sums as the two lanes of pairs, four pairs in flight.
  double s[4][2] = {};
  int i = 0;
  for (; i + 8 <= w; i += 8)
    for (int l = 0; l < 4; ++l) {
      s[l][0] += row[i + 2 * l];
      s[l][1] += row[i + 2 * l + 1];
    }
  for (; i < w; ++i)
    s[0][i & 1] += row[i];
  const double sum[2] = {(s[0][0] + s[1][0]) + (s[2][0] + s[3][0]), (s[0][1] + s[1][1]) + (s[2][1] + s[3][1])};
  const int count[2] = {(w + 1) / 2, w / 2};
  const float mean[2] = {static_cast<float>(sum[0] / count[0]),
                         count[1] ? static_cast<float>(sum[1] / count[1]) : 0.0f};
  for (int x = 0; x < w; ++x)
    row[x] -= mean[x & 1];
  for (int x = 0; x < w; ++x)
    column_sums[x] += row[x];
}

// The column means (even rows, then odd rows, `w` each) from the sums.
std::vector<float> column_means(const std::vector<double>& sum, int w, int h) {
  const auto uw = static_cast<std::size_t>(w);
  const int count[2] = {(h + 1) / 2, h / 2};
  std::vector<float> mean(2 * uw, 0.0f);
  for (int parity = 0; parity < 2; ++parity)
    for (std::size_t x = 0; x < uw && count[parity] > 0; ++x)
      mean[static_cast<std::size_t>(parity) * uw + x] =
          static_cast<float>(sum[static_cast<std::size_t>(parity) * uw + x] / count[parity]);
  return mean;
}

// The local estimate at -k for the samples whose window meets the border:
// see wiener_dft_into. p: the power half spectrum, rows `stride` apart.
float mirrored_estimate(const float* p, std::size_t stride, int w, int h, int y, int x) {
  const int hw = half_width(w);
  // The window around -k, read through P(-j, -i) = P(j, i): rows j in
  // [y-4, y+4] count when -h < j <= 0 for y == 0 and 1 <= j <= h otherwise,
  // the same for columns, the value being P(j mod h, i mod w).
  const int row_lo = y == 0 ? 1 - h : 1, row_hi = y == 0 ? 0 : h;
  const int col_lo = x == 0 ? 1 - w : 1, col_hi = x == 0 ? 0 : w;
  float v[9][9];
  for (int dy = -4; dy <= 4; ++dy) {
    const int j = y + dy;
    for (int dx = -4; dx <= 4; ++dx) {
      const int i = x + dx;
      float value = 0.0f;
      if (j >= row_lo && j <= row_hi && i >= col_lo && i <= col_hi) {
        const int jm = (j % h + h) % h;
        const int im = (i % w + w) % w;
        value = im < hw ? p[static_cast<std::size_t>(jm) * stride + static_cast<std::size_t>(im)]
                        : p[static_cast<std::size_t>((h - jm) % h) * stride + static_cast<std::size_t>(w - im)];
      }
      v[dy + 4][dx + 4] = value;
    }
  }
  float best = 0.0f;
  for (int half = 1; half <= 4; ++half) {
    float s = 0.0f;
    for (int dx = -half; dx <= half; ++dx) {
      float col = 0.0f;
      for (int dy = -half; dy <= half; ++dy)
        col += v[dy + 4][dx + 4];
      s += col;
    }
    const float mean = s * (1.0f / static_cast<float>((2 * half + 1) * (2 * half + 1)));
    best = half == 1 ? mean : std::min(best, mean);
  }
  return best;
}

}  // namespace

namespace detail {

void wiener_dft_into(int w, int h, const FftPlans::RowFill& fill, const std::function<float()>& noise_variance,
                     float* out, FftPlans& plans) {
  const std::size_t n = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
  const auto uw = static_cast<std::size_t>(w);
  const int hw = half_width(w);
  const auto uhw = static_cast<std::size_t>(hw);
  constexpr int kb = BlockSpectrum::kBlock;
  const float inv_n = 1.0f / static_cast<float>(n);

  // The power spectrum P = |F|^2 / N of the half spectrum, each row followed
  // by kPad mirrored columns (P(y, x) = P(-y mod h, w - x); zero past the
  // array), written as each block of column transforms finishes.
  constexpr int kPad = 4;
  const std::size_t stride = uhw + kPad;
  std::unique_ptr<float[]> power(new float[stride * static_cast<std::size_t>(h)]);
  float* p = power.get();
  BlockSpectrum spectrum(w, h);
  plans.forward(fill, spectrum, [&](int b, std::complex<float>* block) {
    const int x0 = b * kb;
    const int nb = std::min(kb, hw - x0);
    block_power(reinterpret_cast<const float*>(block), h, nb, inv_n, p + static_cast<std::size_t>(x0), stride);
  });
  const float noise_var = noise_variance();
  if (!(noise_var > 0.0f)) {
    std::fill(out, out + n, 0.0f);
    return;
  }
  for (int y = 0; y < h; ++y) {
    float* row = p + static_cast<std::size_t>(y) * stride;
    const float* mirror = p + static_cast<std::size_t>((h - y) % h) * stride;
    for (int x = hw; x < hw + kPad; ++x)
      row[x] = x < w ? mirror[w - x] : 0.0f;
  }

  // The window means run over the whole unshifted spectrum with a zero
  // border, which is not symmetric under k -> -k (index 0 has a neighbour
  // on one side only), so the gain g(k) is not either and F * g is not
  // Hermitian. Re(IDFT2(F g)) is the IDFT2 of F times the even part
  // (g(k) + g(-k)) / 2, which is what the half spectrum is given. With
  // P(-k) = P(k), the estimate at -k is a window sum around k over P
  // extended periodically, with the zero border moved (mirrored_estimate):
  // it differs from the one at k only where a 9-wide window reaches past
  // row or column 0 or the far end. Those few samples (rows 0-4 and
  // h-4..h-1, columns 0-4 and w-4..) are computed directly, before the
  // estimate at k replaces P in place; elsewhere g(-k) = g(k).
  auto border_row = [&](int y) { return y - kPad <= 0 || y + kPad >= h; };
  auto border_col = [&](int x) { return x - kPad <= 0 || x + kPad >= w; };
  std::vector<std::pair<std::size_t, float>> mirrored;
  for (int y = 0; y < h; ++y) {
    const bool whole_row = border_row(y);
    for (int x = 0; x < hw; ++x) {
      if (!whole_row && !border_col(x)) {
        x = std::max(x, w - kPad) - 1;  // on to the far border columns
        continue;
      }
      mirrored.emplace_back(static_cast<std::size_t>(y) * stride + static_cast<std::size_t>(x),
                            mirrored_estimate(p, stride, w, h, y, x));
    }
  }
  min_local_mean_in_place(std::span<float>(p, stride * static_cast<std::size_t>(h)), static_cast<int>(stride), h, hw);
  auto gain = [noise_var](float e) { return noise_var / std::max(noise_var, e); };
  for (int y = 0; y < h; ++y) {
    float* row = p + static_cast<std::size_t>(y) * stride;
    for (std::size_t x = 0; x < uhw; ++x)
      row[x] = gain(row[x]);
  }
  for (const auto& [index, e] : mirrored)
    p[index] = 0.5f * (p[index] + gain(e));

  plans.inverse(
      spectrum,
      [&](int y, const float* row) {
        float* dst = out + static_cast<std::size_t>(y) * uw;
        for (std::size_t x = 0; x < uw; ++x)
          dst[x] = row[x] * inv_n;
      },
      [&](int b, std::complex<float>* block) {
        const int x0 = b * kb;
        const int nb = std::min(kb, hw - x0);
        block_gain(reinterpret_cast<float*>(block), h, nb, p + static_cast<std::size_t>(x0), stride);
      });
}

}  // namespace detail

Image grey_nfi(const ImageView& rgb) { return weighted_grey(rgb, 0.299f, 0.587f, 0.114f); }

Image grey_matlab(const ImageView& rgb) { return weighted_grey(rgb, 0.29893602f, 0.58704307f, 0.11402090f); }

Image fast_noise(const ImageView& grey) {
  require_grey(grey, "fast_noise");
  const auto uw = static_cast<std::size_t>(grey.width);
  Image out(grey.width, grey.height, 1);
  fast_noise_rows(
      grey.width, grey.height, [&](int r, float*) { return grey.data.data() + static_cast<std::size_t>(r) * uw; },
      [&](int y, const float* row) { std::copy(row, row + uw, out.data.data() + static_cast<std::size_t>(y) * uw); });
  return out;
}

void zero_mean_total_in_place(Image& grey) {
  require_grey(grey, "zero_mean_total");
  const int w = grey.width;
  const int h = grey.height;
  const auto uw = static_cast<std::size_t>(w);
  float* p = grey.data.data();
  // Rows first; the column sums (in double) gather each row once it is done.
  std::vector<double> sum(2 * uw, 0.0);
  for (int y = 0; y < h; ++y)
    zero_mean_row(p + static_cast<std::size_t>(y) * uw, w, sum.data() + static_cast<std::size_t>(y & 1) * uw);
  const std::vector<float> mean = column_means(sum, w, h);
  for (int y = 0; y < h; ++y) {
    float* row = p + static_cast<std::size_t>(y) * uw;
    const float* m = mean.data() + static_cast<std::size_t>(y & 1) * uw;
    for (std::size_t x = 0; x < uw; ++x)
      row[x] -= m[x];
  }
}

Image zero_mean_total(const ImageView& grey) {
  require_grey(grey, "zero_mean_total");
  Image out = Image::copy_of(grey);
  zero_mean_total_in_place(out);
  return out;
}

Image wiener_dft(const ImageView& grey, float noise_var, FftPlans& plans) {
  require_grey(grey, "wiener_dft");
  Image out(grey.width, grey.height, 1);
  if (!(noise_var > 0.0f)) return out;
  const auto uw = static_cast<std::size_t>(grey.width);
  detail::wiener_dft_into(
      grey.width, grey.height,
      [&](int y, float* row) {
        const float* src = grey.data.data() + static_cast<std::size_t>(y) * uw;
        std::copy(src, src + uw, row);
      },
      [noise_var] { return noise_var; }, out.data.data(), plans);
  return out;
}

float nfi_noise_variance(const ImageView& grey) {
  require_grey(grey, "nfi_noise_variance");
  const std::size_t n = grey.pixels();
  if (n < 2) return 0.0f;
  const auto w = static_cast<std::size_t>(grey.width);
  double sum = 0.0;
  for (int y = 0; y < grey.height; ++y)
    sum += sum_of_squares(grey.data.data() + static_cast<std::size_t>(y) * w, w);
  return static_cast<float>(sum / static_cast<double>(n - 1));
}

float sample_variance(const ImageView& grey) {
  require_grey(grey, "sample_variance");
  const std::size_t n = grey.pixels();
  if (n < 2) return 0.0f;
  const auto w = static_cast<std::size_t>(grey.width);
  double sum = 0.0;
  for (int y = 0; y < grey.height; ++y)
    sum += sum_of(grey.data.data() + static_cast<std::size_t>(y) * w, w);
  const double mean = sum / static_cast<double>(n);
  double sq = 0.0;
  for (int y = 0; y < grey.height; ++y)
    sq += sum_of_squared_deviations(grey.data.data() + static_cast<std::size_t>(y) * w, w, mean);
  return static_cast<float>(sq / static_cast<double>(n - 1));
}

Image residual_nfi(const ImageView& rgb, FftPlans& plans) {
  // The composition grey_nfi -> fast_noise -> zero_mean_total -> wiener_dft
  // in three passes over the image, with the same operations in the same
  // order (so the same bits): grey, FastNoise and ZeroMeanTotal's row step
  // stream a row at a time into the pattern; its column step and the noise
  // variance happen as the Wiener filter reads the rows; the filter writes
  // its result over the pattern.
  if (rgb.channels != 1) check_grey_channels(rgb.channels);
  const int w = rgb.width;
  const int h = rgb.height;
  const auto uw = static_cast<std::size_t>(w);
  Image pattern(w, h, 1);
  std::vector<double> sum(2 * uw, 0.0);
  fast_noise_rows(
      w, h, [&](int r, float* scratch) { return grey_row(rgb, r, 0.299f, 0.587f, 0.114f, scratch); },
      [&](int y, const float* row) {
        float* dst = pattern.data.data() + static_cast<std::size_t>(y) * uw;
        std::copy(row, row + uw, dst);
        zero_mean_row(dst, w, sum.data() + static_cast<std::size_t>(y & 1) * uw);
      });
  const std::vector<float> mean = column_means(sum, w, h);
  double sum_sq = 0.0;
  detail::wiener_dft_into(
      w, h,
      [&](int y, float* row) {
        const float* src = pattern.data.data() + static_cast<std::size_t>(y) * uw;
        const float* m = mean.data() + static_cast<std::size_t>(y & 1) * uw;
        for (std::size_t x = 0; x < uw; ++x)
          row[x] = src[x] - m[x];
        sum_sq += sum_of_squares(row, uw);
      },
      [&] {
        const std::size_t n = pattern.pixels();
        return n < 2 ? 0.0f : static_cast<float>(sum_sq / static_cast<double>(n - 1));
      },
      pattern.data.data(), plans);
  return pattern;
}

}  // namespace flowd::prnu

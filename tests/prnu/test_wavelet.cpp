// The db4 wavelet residual: the filter bank, the transform against a
// convolution with explicitly mirrored borders, perfect reconstruction, the
// band Wiener rule and the residual.
#include "filters.hpp"
#include "prnu_test_util.hpp"
#include "wavelet.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace flowd::prnu {
namespace {

TEST(PrnuDb4, FilterBankIsOrthonormalWithFourVanishingMoments) {
  const auto& lo = Db4::dec_lo;
  const auto& hi = Db4::dec_hi;
  EXPECT_NEAR(std::accumulate(lo.begin(), lo.end(), 0.0), std::sqrt(2.0), 1e-12);
  for (int shift = 0; shift < 8; shift += 2) {
    double ll = 0, hh = 0, lh = 0;
    for (int k = 0; k + shift < 8; ++k) {
      ll += lo[static_cast<std::size_t>(k)] * lo[static_cast<std::size_t>(k + shift)];
      hh += hi[static_cast<std::size_t>(k)] * hi[static_cast<std::size_t>(k + shift)];
    }
    for (int k = 0; k < 8; ++k)
      if (k + shift < 8)
        lh += lo[static_cast<std::size_t>(k)] * hi[static_cast<std::size_t>(k + shift)];
    EXPECT_NEAR(ll, shift == 0 ? 1.0 : 0.0, 1e-12) << shift;
    EXPECT_NEAR(hh, shift == 0 ? 1.0 : 0.0, 1e-12) << shift;
    EXPECT_NEAR(lh, 0.0, 1e-12) << shift;
  }
  for (int moment = 0; moment < 4; ++moment) {
    double s = 0;
    for (int k = 0; k < 8; ++k)
      s += std::pow(k, moment) * hi[static_cast<std::size_t>(k)];
    EXPECT_NEAR(s, 0.0, 1e-9) << moment;
  }
  for (std::size_t k = 0; k < 8; ++k) {
    EXPECT_EQ(Db4::rec_lo[k], lo[7 - k]);
    EXPECT_EQ(Db4::rec_hi[k], hi[7 - k]);
  }
}

TEST(PrnuDb4, MaxLevelAsPywt) {
  // floor(log2(n / 7)), at least 0.
  EXPECT_EQ(dwt_max_level(1), 0);
  EXPECT_EQ(dwt_max_level(7), 0);
  EXPECT_EQ(dwt_max_level(13), 0);
  EXPECT_EQ(dwt_max_level(14), 1);
  EXPECT_EQ(dwt_max_level(27), 1);
  EXPECT_EQ(dwt_max_level(28), 2);
  EXPECT_EQ(dwt_max_level(256), 5);
  EXPECT_EQ(dwt_max_level(512), 6);
  EXPECT_EQ(dwt_max_level(2736), 8);
  EXPECT_EQ(wavelet_levels(3648, 2736), 4);
  EXPECT_EQ(wavelet_levels(100, 20), 1);
  EXPECT_EQ(wavelet_levels(10, 10), 0);
}

// pywt's dwt written the MATLAB way: pad with np.pad(x, 7, 'symmetric')
// (built by concatenating reversed slices), full convolution, keep every
// second sample from index 8.
std::vector<double> reference_dwt(const std::vector<double>& x, const std::array<double, 8>& f) {
  const int n = static_cast<int>(x.size());
  std::vector<double> padded;
  // np.pad 'symmetric' repeats the reflection for pads longer than n.
  auto reflect = [&](int k) {
    while (k < 0 || k >= n)
      k = k < 0 ? -k - 1 : 2 * n - 1 - k;
    return x[static_cast<std::size_t>(k)];
  };
  for (int k = -7; k < n + 7; ++k)
    padded.push_back(reflect(k));
  std::vector<double> full(padded.size() + 7, 0.0);
  for (std::size_t i = 0; i < padded.size(); ++i)
    for (std::size_t j = 0; j < 8; ++j)
      full[i + j] += padded[i] * f[j];
  std::vector<double> out;
  for (int k = 0; k < (n + 7) / 2; ++k)
    out.push_back(full[static_cast<std::size_t>(8 + 2 * k)]);
  return out;
}

TEST(PrnuDb4, OneLevelMatchesTheMirroredConvolution) {
  for (const int n : {1, 2, 5, 8, 13, 16, 31}) {
    const Image x = test::random_image(n, 1, 1, 200u + static_cast<unsigned>(n), -10.0f, 10.0f);
    const int na = dwt_coeff_length(n);
    ASSERT_EQ(na, (n + 7) / 2);
    std::vector<float> a(static_cast<std::size_t>(na)), d(static_cast<std::size_t>(na));
    dwt_db4(x.data, a, d);
    const std::vector<double> xd(x.data.begin(), x.data.end());
    EXPECT_LT(test::max_abs_diff(a, reference_dwt(xd, Db4::dec_lo)), 1e-4) << n;
    EXPECT_LT(test::max_abs_diff(d, reference_dwt(xd, Db4::dec_hi)), 1e-4) << n;
  }
}

TEST(PrnuDb4, ConstantAndRampSignals) {
  // Symmetric extension keeps a constant constant: approximation c*sqrt(2),
  // no detail. A ramp has no detail away from the borders (4 vanishing
  // moments) but some at them (the mirror bends it).
  std::vector<float> c(20, 3.0f), a(13), d(13);
  dwt_db4(c, a, d);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], 3.0 * std::sqrt(2.0), 1e-5);
    EXPECT_NEAR(d[i], 0.0, 1e-5);
  }
  std::vector<float> ramp(20);
  for (std::size_t i = 0; i < ramp.size(); ++i)
    ramp[i] = static_cast<float>(i);
  dwt_db4(ramp, a, d);
  for (std::size_t i = 4; i < 9; ++i)
    EXPECT_NEAR(d[i], 0.0, 1e-4) << i;
  EXPECT_GT(std::abs(d[0]) + std::abs(d[12]), 0.01);
}

TEST(PrnuDb4, OneLevelPerfectReconstruction) {
  for (const int n : {1, 2, 7, 8, 9, 30, 31}) {
    const Image x = test::random_image(n, 1, 1, 300u + static_cast<unsigned>(n), -1.0f, 1.0f);
    const auto na = static_cast<std::size_t>(dwt_coeff_length(n));
    std::vector<float> a(na), d(na), back(2 * na - 6);
    dwt_db4(x.data, a, d);
    idwt_db4(a, d, back);
    ASSERT_GE(back.size(), static_cast<std::size_t>(n));
    back.resize(static_cast<std::size_t>(n));
    EXPECT_LT(test::max_abs_diff(back, x.data), 1e-5) << n;
  }
}

TEST(PrnuDb4, TwoDimensionalBandsAreTheSeparableTransform) {
  const int w = 23, h = 17;
  const Image x = test::random_image(w, h, 1, 404, 0.0f, 255.0f);
  const WaveletBands bands = wavedec2_db4(x, 1);
  ASSERT_EQ(bands.details.size(), 1u);
  const int wa = (w + 7) / 2, ha = (h + 7) / 2;
  // Columns first (axis 0), then rows, with the 1-D reference.
  std::vector<std::vector<double>> col_lo(static_cast<std::size_t>(w)), col_hi(static_cast<std::size_t>(w));
  for (int c = 0; c < w; ++c) {
    std::vector<double> column;
    for (int y = 0; y < h; ++y)
      column.push_back(x.at(c, y));
    col_lo[static_cast<std::size_t>(c)] = reference_dwt(column, Db4::dec_lo);
    col_hi[static_cast<std::size_t>(c)] = reference_dwt(column, Db4::dec_hi);
  }
  auto rows_of = [&](const std::vector<std::vector<double>>& cols, const std::array<double, 8>& f) {
    std::vector<double> out;
    for (int y = 0; y < ha; ++y) {
      std::vector<double> row;
      for (int c = 0; c < w; ++c)
        row.push_back(cols[static_cast<std::size_t>(c)][static_cast<std::size_t>(y)]);
      const auto r = reference_dwt(row, f);
      out.insert(out.end(), r.begin(), r.end());
    }
    return out;
  };
  ASSERT_EQ(bands.approx.width, wa);
  ASSERT_EQ(bands.approx.height, ha);
  const double tol = 1e-3;  // float on 0..255 samples
  EXPECT_LT(test::max_abs_diff(bands.approx.data, rows_of(col_lo, Db4::dec_lo)), tol);
  EXPECT_LT(test::max_abs_diff(bands.details[0][0].data, rows_of(col_hi, Db4::dec_lo)), tol);  // H
  EXPECT_LT(test::max_abs_diff(bands.details[0][1].data, rows_of(col_lo, Db4::dec_hi)), tol);  // V
  EXPECT_LT(test::max_abs_diff(bands.details[0][2].data, rows_of(col_hi, Db4::dec_hi)), tol);  // D
}

TEST(PrnuDb4, MultiLevelSizesAndPerfectReconstruction) {
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{64, 48}, {61, 47}, {100, 37}, {15, 14}, {256, 255}}) {
    const Image x = test::random_image(w, h, 1, 500u + static_cast<unsigned>(w + h), 0.0f, 255.0f);
    const int levels = wavelet_levels(w, h, 4);
    ASSERT_GT(levels, 0);
    const WaveletBands bands = wavedec2_db4(x, levels);
    ASSERT_EQ(static_cast<int>(bands.details.size()), levels);
    int bw = w, bh = h;
    for (int l = levels - 1; l >= 0; --l) {  // details[levels-1] is the finest
      bw = (bw + 7) / 2;
      bh = (bh + 7) / 2;
      for (const Image& band : bands.details[static_cast<std::size_t>(l)]) {
        EXPECT_EQ(band.width, bw);
        EXPECT_EQ(band.height, bh);
      }
    }
    EXPECT_EQ(bands.approx.width, bw);
    EXPECT_EQ(bands.approx.height, bh);
    const Image back = waverec2_db4(bands);
    ASSERT_EQ(back.width, w);
    ASSERT_EQ(back.height, h);
    EXPECT_LT(test::max_abs_diff(back.data, x.data), 1e-4 * 255) << w << "x" << h;
  }
}

TEST(PrnuWaveletWiener, NoisePartMatchesWienerAdaptive) {
  const Image band = test::random_image(13, 9, 1, 606, -12.0f, 12.0f);
  const float noise_var = 25.0f;
  const Image out = wiener_noise_part(band, noise_var);
  const std::vector<double> x(band.data.begin(), band.data.end());
  EXPECT_LT(test::max_abs_diff(out.data, test::wiener_adaptive(x, 13, 9, noise_var)), 1e-4);
  // Small coefficients are all noise; a lone big one is mostly signal.
  Image spike(9, 9);
  spike.at(4, 4) = 1000.0f;
  spike.at(0, 0) = 0.5f;
  const Image s = wiener_noise_part(spike, noise_var);
  EXPECT_NEAR(s.at(0, 0), 0.5f, 1e-6);
  EXPECT_LT(s.at(4, 4), 30.0f);
}

TEST(PrnuWaveletNoise, IsThePlaneMinusItsDenoisedVersion) {
  // prnu-python's wording: zeroed approximation, noise parts of the details.
  // The classical one: the plane minus its reconstruction from the
  // approximation and the denoised (signal) details. Equal by linearity.
  const int w = 70, h = 53;
  Image plane(w, h);
  const Image noise = test::random_image(w, h, 1, 707, -6.0f, 6.0f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      plane.at(x, y) = 128.0f + 60.0f * std::sin(0.1f * static_cast<float>(x)) * std::cos(0.07f * static_cast<float>(y)) +
                       (x > 35 ? 40.0f : 0.0f) + noise.at(x, y);
  const Image residual = wavelet_noise(plane, 5.0f);
  WaveletBands bands = wavedec2_db4(plane, wavelet_levels(w, h));
  for (auto& level : bands.details)
    for (Image& band : level) {
      const Image n = wiener_noise_part(band, 25.0f);
      for (std::size_t i = 0; i < band.data.size(); ++i)
        band.data[i] -= n.data[i];
    }
  const Image denoised = waverec2_db4(bands);
  std::vector<double> expected(plane.pixels());
  for (std::size_t i = 0; i < expected.size(); ++i)
    expected[i] = static_cast<double>(plane.data[i]) - denoised.data[i];
  EXPECT_LT(test::max_abs_diff(residual.data, expected), 1e-3);
  // The residual is noise-sized, not scene-sized.
  EXPECT_LT(test::max_abs(residual.data), 40.0);
  EXPECT_GT(test::max_abs(residual.data), 1.0);
}

TEST(PrnuWaveletNoise, ConstantAndTinyPlanes) {
  Image flat(40, 30);
  std::fill(flat.data.begin(), flat.data.end(), 77.0f);
  EXPECT_LT(test::max_abs(wavelet_noise(flat).data), 1e-3);
  const Image tiny = test::random_image(10, 12, 1, 1, 0.0f, 255.0f);
  EXPECT_EQ(test::max_abs(wavelet_noise(tiny).data), 0.0);
}

TEST(PrnuResidualWavelet, IsTheCompositionOfTheSteps) {
  FftPlans plans;
  const Image rgb = test::random_image(48, 40, 3, 808, 0.0f, 255.0f);
  const Image channels = wavelet_noise_channels(rgb);
  ASSERT_EQ(channels.channels, 3);
  // Channel 1 on its own equals the per-channel result.
  Image g(48, 40);
  for (std::size_t i = 0; i < g.pixels(); ++i)
    g.data[i] = rgb.data[3 * i + 1];
  const Image g_noise = wavelet_noise(g);
  for (std::size_t i = 0; i < g.pixels(); ++i)
    ASSERT_EQ(channels.data[3 * i + 1], g_noise.data[i]);
  Image expected = zero_mean_total(grey_matlab(channels));
  expected = wiener_dft(expected, sample_variance(expected), plans);
  const Image got = residual_wavelet(rgb, plans);
  EXPECT_EQ(got.data, expected.data);
  EXPECT_GT(test::max_abs(got.data), 0.0);
}

}  // namespace
}  // namespace flowd::prnu

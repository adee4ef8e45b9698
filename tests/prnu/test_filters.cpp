// The NFI chain: grey, FastNoise, ZeroMeanTotal and the DFT Wiener filter,
// each against a direct reference, and the FFT plan cache.
#include <algorithm>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "filters.hpp"
#include "local_energy.hpp"
#include "prnu_test_util.hpp"

namespace flowd::prnu {
namespace {

using test::Cplx;

TEST(PrnuGrey, WeightsOfBothConventions) {
  Image rgb(2, 1, 3);
  rgb.data = {10.0f, 20.0f, 30.0f, 255.0f, 0.0f, 100.0f};
  const Image nfi = grey_nfi(rgb);
  const Image mat = grey_matlab(rgb);
  ASSERT_EQ(nfi.channels, 1);
  EXPECT_NEAR(nfi.data[0], 0.299 * 10 + 0.587 * 20 + 0.114 * 30, 1e-4);
  EXPECT_NEAR(nfi.data[1], 0.299 * 255 + 0.114 * 100, 1e-4);
  EXPECT_NEAR(mat.data[0], 0.29893602 * 10 + 0.58704307 * 20 + 0.11402090 * 30, 1e-4);
  EXPECT_NEAR(mat.data[1], 0.29893602 * 255 + 0.11402090 * 100, 1e-4);
}

TEST(PrnuGrey, SingleChannelPassesThroughOthersAreRefused) {
  const Image g = test::random_image(5, 3, 1, 1);
  EXPECT_EQ(grey_nfi(g).data, g.data);
  EXPECT_EQ(grey_matlab(g).data, g.data);
  EXPECT_THROW(grey_nfi(Image(4, 4, 2)), std::invalid_argument);
  std::vector<float> few(5);
  EXPECT_THROW(ImageView(few, 2, 3, 1), std::invalid_argument);
}

// FastNoise written from its definition, one sample at a time, in double.
std::vector<double> fast_noise_reference(const Image& im) {
  const int w = im.width, h = im.height;
  using Field = std::function<double(int, int)>;
  auto d_dx = [&](const Field& f, int x, int y) {
    if (w == 1) return 0.0;
    if (x == 0) return f(1, y) - f(0, y);
    if (x == w - 1) return f(w - 1, y) - f(w - 2, y);
    return 0.5 * (f(x + 1, y) - f(x - 1, y));
  };
  auto d_dy = [&](const Field& f, int x, int y) {
    if (h == 1) return 0.0;
    if (y == 0) return f(x, 1) - f(x, 0);
    if (y == h - 1) return f(x, h - 1) - f(x, h - 2);
    return 0.5 * (f(x, y + 1) - f(x, y - 1));
  };
  const Field p = [&](int x, int y) { return static_cast<double>(im.at(x, y)); };
  const Field nx = [&](int x, int y) {
    const double gx = d_dx(p, x, y), gy = d_dy(p, x, y);
    return gx / (1.0 + std::sqrt(gx * gx + gy * gy));
  };
  const Field ny = [&](int x, int y) {
    const double gx = d_dx(p, x, y), gy = d_dy(p, x, y);
    return gy / (1.0 + std::sqrt(gx * gx + gy * gy));
  };
  std::vector<double> out(im.pixels());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      out[static_cast<std::size_t>(y * w + x)] = d_dx(nx, x, y) + d_dy(ny, x, y);
  return out;
}

TEST(PrnuFastNoise, MatchesTheDefinitionOnSmallArrays) {
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{7, 5}, {2, 2}, {1, 6}, {6, 1}, {3, 4}}) {
    const Image im = test::random_image(w, h, 1, 11u + static_cast<unsigned>(w * 10 + h), 0.0f, 255.0f);
    const Image out = fast_noise(im);
    EXPECT_LT(test::max_abs_diff(out.data, fast_noise_reference(im)), 1e-5) << w << "x" << h;
  }
}

TEST(PrnuFastNoise, KnownValuesOnARamp) {
  // f(x, y) = 3x: dx = 3 everywhere, dy = 0, so the scaled field is 3/4
  // everywhere and its divergence is 0.
  Image ramp(5, 3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x)
      ramp.at(x, y) = 3.0f * static_cast<float>(x);
  for (const float v : fast_noise(ramp).data)
    EXPECT_NEAR(v, 0.0f, 1e-6);
  // A single bright pixel in the middle of a 3x3: hand-computed.
  Image spike(3, 3);
  spike.at(1, 1) = 2.0f;
  const Image out = fast_noise(spike);
  // At (1,1) dx = dy = 0; at (0,1) dx = 2 (forward), at (2,1) dx = -2, so
  // the scaled dx is 2/3 and -2/3, and d(dx)/dx at (1,1) is (-2/3 - 2/3)/2.
  // The same vertically.
  EXPECT_NEAR(out.at(1, 1), 2.0 * (-2.0 / 3.0), 1e-6);
}

TEST(PrnuZeroMeanTotal, EveryRowAndColumnHasZeroEvenAndOddMeans) {
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{8, 6}, {7, 5}, {9, 4}, {1, 5}}) {
    const Image in = test::random_image(w, h, 1, 5u + static_cast<unsigned>(w + h), 0.0f, 100.0f);
    const Image out = zero_mean_total(in);
    for (int y = 0; y < h; ++y)
      for (int parity = 0; parity < 2; ++parity) {
        double s = 0;
        for (int x = parity; x < w; x += 2)
          s += out.at(x, y);
        EXPECT_NEAR(s, 0.0, 1e-3) << "row " << y;
      }
    for (int x = 0; x < w; ++x)
      for (int parity = 0; parity < 2; ++parity) {
        double s = 0;
        for (int y = parity; y < h; y += 2)
          s += out.at(x, y);
        EXPECT_NEAR(s, 0.0, 1e-3) << "column " << x;
      }
  }
}

TEST(PrnuZeroMeanTotal, EqualsPrnuPythonsSubLatticeForm) {
  // prnu-python: each of the four 2x2 sub-lattices minus its mean, its row
  // means and its column means (the latter two of the mean-free lattice).
  const int w = 9, h = 8;
  const Image in = test::random_image(w, h, 1, 77, -5.0f, 40.0f);
  std::vector<double> ref(in.pixels());
  for (int oy = 0; oy < 2; ++oy)
    for (int ox = 0; ox < 2; ++ox) {
      std::vector<int> xs, ys;
      for (int x = ox; x < w; x += 2)
        xs.push_back(x);
      for (int y = oy; y < h; y += 2)
        ys.push_back(y);
      double all = 0;
      for (int y : ys)
        for (int x : xs)
          all += in.at(x, y);
      all /= static_cast<double>(xs.size() * ys.size());
      std::vector<double> row(ys.size(), 0.0), col(xs.size(), 0.0);
      for (std::size_t i = 0; i < ys.size(); ++i)
        for (std::size_t j = 0; j < xs.size(); ++j) {
          row[i] += (in.at(xs[j], ys[i]) - all) / static_cast<double>(xs.size());
          col[j] += (in.at(xs[j], ys[i]) - all) / static_cast<double>(ys.size());
        }
      for (std::size_t i = 0; i < ys.size(); ++i)
        for (std::size_t j = 0; j < xs.size(); ++j)
          ref[static_cast<std::size_t>(ys[i] * w + xs[j])] = in.at(xs[j], ys[i]) - all - row[i] - col[j];
    }
  EXPECT_LT(test::max_abs_diff(zero_mean_total(in).data, ref), 1e-4);
}

TEST(PrnuLocalEnergy, MinOfWindowMeansInPlaceAndOnAPartOfTheColumns) {
  // Tall and wide arrays so that the in-place ring buffer wraps many times.
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{13, 40}, {40, 6}, {1, 12}, {5, 1}}) {
    const Image e = test::random_image(w, h, 1, 900u + static_cast<unsigned>(w * h), 0.0f, 10.0f);
    std::vector<double> ref(e.pixels(), 1e300);
    const std::vector<double> ed(e.data.begin(), e.data.end());
    for (const int size : {3, 5, 7, 9}) {
      const auto m = test::uniform_filter_constant(ed, w, h, size);
      for (std::size_t i = 0; i < ref.size(); ++i)
        ref[i] = std::min(ref[i], m[i]);
    }
    std::vector<float> out(e.pixels());
    min_local_mean(e.data, w, h, w, out);
    EXPECT_LT(test::max_abs_diff(out, ref), 1e-5) << w << "x" << h;
    std::vector<float> in_place = e.data;
    min_local_mean(in_place, w, h, w, in_place);
    EXPECT_EQ(in_place, out) << w << "x" << h;
    const int part = (w + 1) / 2;
    std::vector<float> left(static_cast<std::size_t>(part * h));
    min_local_mean(e.data, w, h, part, left);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < part; ++x)
        EXPECT_EQ(left[static_cast<std::size_t>(y * part + x)], out[static_cast<std::size_t>(y * w + x)]);
  }
}

// prnu-python's wiener_dft, literally, on the naive DFT.
std::vector<double> wiener_reference(const Image& im, double noise_var) {
  const int w = im.width, h = im.height;
  const double n = static_cast<double>(im.pixels());
  std::vector<Cplx> p(im.pixels());
  for (std::size_t i = 0; i < p.size(); ++i)
    p[i] = im.data[i];
  auto f = test::naive_dft2(p, w, h, -1);
  std::vector<double> mag(f.size());
  for (std::size_t i = 0; i < f.size(); ++i)
    mag[i] = std::abs(f[i] / std::sqrt(n));
  const auto mag_noise = test::wiener_adaptive(mag, w, h, noise_var);
  for (std::size_t i = 0; i < f.size(); ++i)
    f[i] = mag[i] == 0.0 ? Cplx(0.0) : f[i] * mag_noise[i] / mag[i];
  const auto back = test::naive_dft2(f, w, h, +1);
  std::vector<double> out(back.size());
  for (std::size_t i = 0; i < back.size(); ++i)
    out[i] = back[i].real() / n;
  return out;
}

// The digest's form: P = |F|^2, sigma^2 = sum p^2 n/(n-1), F * s2 / max(s2, e).
std::vector<double> wiener_digest_reference(const Image& im) {
  const int w = im.width, h = im.height;
  const double n = static_cast<double>(im.pixels());
  std::vector<Cplx> p(im.pixels());
  double sum_sq = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] = im.data[i];
    sum_sq += static_cast<double>(im.data[i]) * im.data[i];
  }
  const double s2 = sum_sq * n / (n - 1);
  auto f = test::naive_dft2(p, w, h, -1);
  std::vector<double> power(f.size());
  for (std::size_t i = 0; i < f.size(); ++i)
    power[i] = std::norm(f[i]);
  std::vector<double> e(f.size(), 1e300);
  for (const int size : {3, 5, 7, 9}) {
    const auto m = test::uniform_filter_constant(power, w, h, size);
    for (std::size_t i = 0; i < e.size(); ++i)
      e[i] = std::min(e[i], m[i]);
  }
  for (std::size_t i = 0; i < f.size(); ++i)
    f[i] *= s2 / std::max(s2, e[i]);
  const auto back = test::naive_dft2(f, w, h, +1);
  std::vector<double> out(back.size());
  for (std::size_t i = 0; i < back.size(); ++i)
    out[i] = back[i].real() / n;
  return out;
}

TEST(PrnuWienerDft, MatchesPrnuPythonOnANaiveDft) {
  FftPlans plans;
  // 40x30 and 37x23 have samples away from every border (where the gain at
  // -k is taken to equal the one at k) and more than one column block.
  for (const auto& [w, h] :
       std::vector<std::pair<int, int>>{{8, 6}, {7, 5}, {12, 11}, {3, 9}, {1, 7}, {16, 1}, {40, 30}, {37, 23}}) {
    // Noise alone, and noise with a strong wave (peaks well above any of
    // the noise levels, so that the gain is far from 1 somewhere).
    Image noisy = test::random_image(w, h, 1, 100u + static_cast<unsigned>(w * 31 + h));
    Image wave = noisy;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        wave.at(x, y) += 5.0f * std::sin(0.9f * static_cast<float>(x) + 0.4f * static_cast<float>(y));
    for (const Image* im : {&noisy, &wave})
      for (const float noise_var : {0.05f, 0.3f, 2.0f}) {
        const Image out = wiener_dft(*im, noise_var, plans);
        const auto ref = wiener_reference(*im, noise_var);
        EXPECT_LT(test::max_abs_diff(out.data, ref), 2e-5 * (1.0 + test::max_abs(im->data)))
            << w << "x" << h << " noise_var " << noise_var;
        if (im == &wave && noise_var == 0.05f) {
          EXPECT_GT(test::max_abs_diff(out.data, im->data), 0.1) << "the filter changed nothing";
        }
      }
  }
}

TEST(PrnuWienerDft, TheDigestsFormIsTheSameFilterWithItsVariance) {
  FftPlans plans;
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{10, 8}, {9, 7}}) {
    const Image im = zero_mean_total(test::random_image(w, h, 1, 7u + static_cast<unsigned>(w)));
    const Image out = wiener_dft(im, nfi_noise_variance(im), plans);
    EXPECT_LT(test::max_abs_diff(out.data, wiener_digest_reference(im)), 2e-5);
  }
}

TEST(PrnuWienerDft, FiltersSomethingAndLimits) {
  FftPlans plans;
  const Image im = test::random_image(20, 14, 1, 3);
  // A structured image has strong frequencies above a small noise level:
  // something must change. A huge noise level passes everything.
  Image stripes(20, 14);
  for (int y = 0; y < 14; ++y)
    for (int x = 0; x < 20; ++x)
      stripes.at(x, y) = std::sin(0.9f * static_cast<float>(x)) * 10.0f + im.at(x, y);
  const Image filtered = wiener_dft(stripes, 1.0f, plans);
  EXPECT_GT(test::max_abs_diff(filtered.data, stripes.data), 1.0);
  const Image passed = wiener_dft(stripes, 1e9f, plans);
  EXPECT_LT(test::max_abs_diff(passed.data, stripes.data), 1e-4);
  EXPECT_EQ(test::max_abs(wiener_dft(stripes, 0.0f, plans).data), 0.0);
  EXPECT_THROW(wiener_dft(Image(4, 4, 3), 1.0f, plans), std::invalid_argument);
}

TEST(PrnuVariance, BothEstimates) {
  Image im(2, 2);
  im.data = {1.0f, 2.0f, 3.0f, 6.0f};
  EXPECT_NEAR(nfi_noise_variance(im), (1 + 4 + 9 + 36) / 3.0, 1e-5);
  EXPECT_NEAR(sample_variance(im), (4 + 1 + 0 + 9) / 3.0, 1e-5);
  EXPECT_EQ(sample_variance(Image(1, 1)), 0.0f);
}

TEST(PrnuResidualNfi, IsTheCompositionOfTheSteps) {
  FftPlans plans;
  const Image rgb = test::random_image(33, 20, 3, 9, 0.0f, 255.0f);
  Image expected = zero_mean_total(fast_noise(grey_nfi(rgb)));
  expected = wiener_dft(expected, nfi_noise_variance(expected), plans);
  const Image got = residual_nfi(rgb, plans);
  ASSERT_EQ(got.width, 33);
  ASSERT_EQ(got.height, 20);
  ASSERT_EQ(got.channels, 1);
  EXPECT_EQ(got.data, expected.data);
  EXPECT_GT(test::max_abs(got.data), 0.0);
}

TEST(PrnuLocalEnergy, InPlaceOnStridedRowsAndTheBandRule) {
  const int w = 23, h = 17, stride = 27;
  const Image e = test::random_image(stride, h, 1, 4242u, 0.0f, 10.0f);
  std::vector<float> out(static_cast<std::size_t>(w * h));
  min_local_mean(e.data, stride, h, w, out);
  std::vector<float> strided = e.data;
  min_local_mean_in_place(strided, stride, h, w);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      EXPECT_EQ(strided[static_cast<std::size_t>(y * stride + x)], out[static_cast<std::size_t>(y * w + x)]);
  // wiener_noise_part_in_place = c * nv / (max(0, estimate(c^2) - nv) + nv).
  const Image band = test::random_image(w, h, 1, 77u, -6.0f, 6.0f);
  std::vector<float> squares(band.pixels());
  for (std::size_t i = 0; i < squares.size(); ++i)
    squares[i] = band.data[i] * band.data[i];
  std::vector<float> estimate(band.pixels());
  min_local_mean(squares, w, h, w, estimate);
  std::vector<float> filtered = band.data;
  wiener_noise_part_in_place(filtered, w, h, 4.0f);
  for (std::size_t i = 0; i < filtered.size(); ++i)
    EXPECT_EQ(filtered[i], band.data[i] * 4.0f / (std::max(0.0f, estimate[i] - 4.0f) + 4.0f)) << i;
}

TEST(PrnuFftPlans, BlockedFormEqualsTheRowMajorOne) {
  FftPlans plans;
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{70, 9}, {33, 40}, {1, 5}, {6, 1}}) {
    const Image im = test::random_image(w, h, 1, 31u + static_cast<unsigned>(w));
    const auto uw = static_cast<std::size_t>(w);
    RealArray real(im.pixels());
    std::copy(im.data.begin(), im.data.end(), real.data());
    ComplexArray spectrum(static_cast<std::size_t>(h) * static_cast<std::size_t>(half_width(w)));
    plans.forward(w, h, real, spectrum);
    BlockSpectrum blocks(w, h);
    plans.forward([&](int y, float* row) { std::copy_n(im.data.data() + static_cast<std::size_t>(y) * uw, uw, row); },
                  blocks);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < half_width(w); ++x)
        ASSERT_EQ(blocks.at(y, x), spectrum[static_cast<std::size_t>(y * half_width(w) + x)]) << w << "x" << h;
    // Inverse: N times the input.
    std::vector<float> back(im.pixels());
    plans.inverse(
        blocks, [&](int y, const float* row) { std::copy_n(row, uw, back.data() + static_cast<std::size_t>(y) * uw); });
    for (std::size_t i = 0; i < back.size(); ++i)
      ASSERT_NEAR(back[i] / static_cast<double>(im.pixels()), im.data[i], 1e-5) << w << "x" << h;
  }
}

TEST(PrnuFftPlans, CachesPerSizeAndIsSafeAcrossThreads) {
  FftPlans plans;
  const std::vector<std::pair<int, int>> sizes{{16, 12}, {15, 9}, {64, 48}, {7, 7}};
  std::vector<Image> inputs, serial;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    inputs.push_back(test::random_image(sizes[i].first, sizes[i].second, 1, 40u + static_cast<unsigned>(i)));
  {
    FftPlans fresh;
    for (const Image& im : inputs)
      serial.push_back(wiener_dft(im, 0.2f, fresh));
    EXPECT_EQ(fresh.cached_sizes(), sizes.size());
  }
  std::vector<std::vector<Image>> results(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (const Image& im : inputs)
          results[t].push_back(wiener_dft(im, 0.2f, plans));
    });
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(plans.cached_sizes(), sizes.size());
  for (const auto& r : results)
    for (std::size_t i = 0; i < r.size(); ++i)
      EXPECT_EQ(r[i].data, serial[i % sizes.size()].data);
}

}  // namespace
}  // namespace flowd::prnu

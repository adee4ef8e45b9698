// Camera identification end to end on a generated sensor: fingerprints from
// flat-ish images, then residuals of textured images from the same and from
// another camera, scored by NCC and PCE. Also the accumulator's algebra.
#include "compare.hpp"
#include "filters.hpp"
#include "fingerprint.hpp"
#include "prnu_test_util.hpp"
#include "wavelet.hpp"

#include <gtest/gtest.h>

#include <iostream>

namespace flowd::prnu {
namespace {

constexpr int kSize = 256;

// A sensor's PRNU factor: independent N(0, 0.01^2) per pixel, one for all
// three channels.
Image sensor(unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 0.01f);
  Image k(kSize, kSize);
  for (float& v : k.data)
    v = n(rng);
  return k;
}

// A smooth random RGB scene: a sum of a few low-frequency waves and a tint.
// flat: a gentle gradient around mid-grey (the images a fingerprint is made of).
Image scene(unsigned seed, bool flat) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Image im(kSize, kSize, 3);
  const float base = flat ? 140.0f + 40.0f * u(rng) : 120.0f;
  struct Wave {
    float fx, fy, phase, amp;
  };
  std::vector<Wave> waves;
  for (int i = 0; i < (flat ? 1 : 6); ++i)
    waves.push_back({0.002f + (flat ? 0.004f : 0.06f) * u(rng), 0.002f + (flat ? 0.004f : 0.06f) * u(rng),
                     6.28f * u(rng), flat ? 15.0f : 10.0f + 20.0f * u(rng)});
  const float tint[3] = {0.8f + 0.4f * u(rng), 0.8f + 0.4f * u(rng), 0.8f + 0.4f * u(rng)};
  for (int y = 0; y < kSize; ++y)
    for (int x = 0; x < kSize; ++x) {
      float v = base;
      for (const Wave& w : waves)
        v += w.amp * std::sin(w.fx * 6.28f * static_cast<float>(x) + w.fy * 6.28f * static_cast<float>(y) + w.phase);
      for (int c = 0; c < 3; ++c)
        im.at(x, y, c) = v * tint[c];
    }
  return im;
}

// The camera: I = scene (1 + K) + read noise, 8-bit quantised.
Image shoot(const Image& k, const Image& sc, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.5f);
  Image im(kSize, kSize, 3);
  for (std::size_t i = 0; i < k.pixels(); ++i)
    for (std::size_t c = 0; c < 3; ++c) {
      const float v = sc.data[3 * i + c] * (1.0f + k.data[i]) + noise(rng);
      im.data[3 * i + c] = std::round(std::clamp(v, 0.0f, 255.0f));
    }
  return im;
}

struct Scores {
  std::vector<double> ncc_same, ncc_other, pce_same, pce_other;
};

enum class Method { wavelet, nfi };

Scores identify(Method method) {
  FftPlans plans;
  const Image camera_a = sensor(1001);
  const Image camera_b = sensor(2002);
  auto residual = [&](const Image& im) {
    return method == Method::wavelet ? residual_wavelet(im, plans) : residual_nfi(im, plans);
  };
  FingerprintAccumulator acc;
  for (unsigned i = 0; i < 8; ++i) {
    const Image im = shoot(camera_a, scene(100 + i, true), 300 + i);
    acc.add(im, method == Method::wavelet ? wavelet_noise_channels(im) : residual_nfi(im, plans));
  }
  const Image fp = acc.finish(plans);
  Scores s;
  for (unsigned i = 0; i < 10; ++i) {
    const Image same = residual(shoot(camera_a, scene(500 + i, false), 700 + i));
    const Image other = residual(shoot(camera_b, scene(900 + i, false), 1100 + i));
    s.ncc_same.push_back(ncc(fp.data, same.data));
    s.ncc_other.push_back(ncc(fp.data, other.data));
    s.pce_same.push_back(pce(crosscorr_2d(fp, same, plans)).pce);
    s.pce_other.push_back(pce(crosscorr_2d(fp, other, plans)).pce);
  }
  return s;
}

void check_separation(const Scores& s, const char* method) {
  const double min_pce_same = *std::min_element(s.pce_same.begin(), s.pce_same.end());
  const double max_pce_other = *std::max_element(s.pce_other.begin(), s.pce_other.end());
  const double min_ncc_same = *std::min_element(s.ncc_same.begin(), s.ncc_same.end());
  const double max_ncc_other = *std::max_element(s.ncc_other.begin(), s.ncc_other.end());
  std::cout << method << ": PCE same min " << min_pce_same << ", other max " << max_pce_other << "; NCC same min "
            << min_ncc_same << ", other max " << max_ncc_other << "\n";
  EXPECT_GT(min_pce_same, 60.0) << method;
  EXPECT_LT(max_pce_other, 20.0) << method;
  EXPECT_GT(min_ncc_same, 2.0 * max_ncc_other) << method;
  EXPECT_GT(min_ncc_same, 0.0) << method;
}

TEST(PrnuDetection, WaveletResidualsSeparateTwoCameras) { check_separation(identify(Method::wavelet), "wavelet"); }

TEST(PrnuDetection, NfiResidualsSeparateTwoCameras) { check_separation(identify(Method::nfi), "nfi"); }

TEST(PrnuFingerprint, MergeEqualsAddingEverythingInOne) {
  FftPlans plans;
  std::vector<Image> images, residuals;
  for (unsigned i = 0; i < 5; ++i) {
    images.push_back(test::random_image(24, 20, 3, 10 + i, 0.0f, 255.0f));
    residuals.push_back(test::random_image(24, 20, 3, 20 + i, -3.0f, 3.0f));
  }
  FingerprintAccumulator all, left, right, empty;
  for (std::size_t i = 0; i < images.size(); ++i) {
    all.add(images[i], residuals[i]);
    (i < 2 ? left : right).add(images[i], residuals[i]);
  }
  left.merge(right);
  left.merge(empty);
  empty.merge(left);
  EXPECT_EQ(left.count(), 5);
  EXPECT_EQ(empty.count(), 5);
  const Image a = all.raw(), b = left.raw(), c = empty.raw();
  EXPECT_LT(test::max_abs_diff(a.data, b.data), 1e-6);
  EXPECT_EQ(b.data, c.data);
  EXPECT_LT(test::max_abs_diff(all.finish(plans).data, left.finish(plans).data), 1e-5);
}

TEST(PrnuFingerprint, TheMaximumLikelihoodFormula) {
  // Two one-pixel images: K = (W1 I1 + W2 I2) / (I1^2 + I2^2 + reg), I = v/255.
  Image i1(1, 1), i2(1, 1), w1(1, 1), w2(1, 1);
  i1.data = {51.0f};  // 0.2
  i2.data = {102.0f};  // 0.4
  w1.data = {1.0f};
  w2.data = {-0.5f};
  FingerprintAccumulator acc;
  acc.add(i1, w1);
  acc.add(i2, w2);
  EXPECT_NEAR(acc.raw(0.0f).data[0], (0.2 - 0.2) / (0.04 + 0.16), 1e-6);
  EXPECT_NEAR(acc.raw(1.0f).data[0], 0.0, 1e-6);
  w2.data = {2.0f};
  FingerprintAccumulator acc2;
  acc2.add(i1, w1);
  acc2.add(i2, w2);
  EXPECT_NEAR(acc2.raw(0.0f).data[0], (0.2 + 0.8) / 0.2, 1e-5);
  EXPECT_NEAR(acc2.raw(1.0f).data[0], 1.0 / 1.2, 1e-6);
  // A grey residual with an RGB image pairs with the image's grey.
  Image rgb(1, 1, 3);
  rgb.data = {255.0f, 0.0f, 0.0f};
  FingerprintAccumulator acc3;
  acc3.add(rgb, w1);
  EXPECT_NEAR(acc3.raw(0.0f).data[0], 0.299 / (0.299 * 0.299), 1e-4);
}

TEST(PrnuFingerprint, RefusesMismatchesAndEmptiness) {
  FftPlans plans;
  FingerprintAccumulator acc;
  EXPECT_THROW(acc.finish(plans), std::logic_error);
  acc.add(Image(8, 8, 3), Image(8, 8, 3));
  EXPECT_THROW(acc.add(Image(8, 9, 3), Image(8, 9, 3)), std::invalid_argument);
  EXPECT_THROW(acc.add(Image(8, 8, 3), Image(8, 8, 2)), std::invalid_argument);
  EXPECT_THROW(acc.add(Image(8, 8, 3), Image(8, 7, 3)), std::invalid_argument);
  FingerprintAccumulator other;
  other.add(Image(4, 4, 1), Image(4, 4, 1));
  EXPECT_THROW(acc.merge(other), std::invalid_argument);
}

TEST(PrnuFingerprint, ConvenienceFunctionEqualsTheAccumulator) {
  FftPlans plans;
  std::vector<Image> images;
  for (unsigned i = 0; i < 3; ++i)
    images.push_back(test::random_image(40, 32, 3, 60 + i, 0.0f, 255.0f));
  const ResidualFn fn = [](const ImageView& im) { return wavelet_noise_channels(im); };
  FingerprintAccumulator acc;
  for (const Image& im : images)
    acc.add(im, fn(im));
  EXPECT_EQ(fingerprint(images, fn, plans).data, acc.finish(plans).data);
}

}  // namespace
}  // namespace flowd::prnu

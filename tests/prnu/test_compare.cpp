// NCC, the FFT cross-correlation against a naive circular one, PCE, and the
// geometry helpers.
#include "compare.hpp"
#include "geometry.hpp"
#include "prnu_test_util.hpp"

#include <gtest/gtest.h>

namespace flowd::prnu {
namespace {

TEST(PrnuNcc, MatchesTheDirectFormula) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{1024}, std::size_t{5037}}) {
    const Image a = test::random_image(static_cast<int>(n), 1, 1, 1, -1.0f, 2.0f);
    const Image b = test::random_image(static_cast<int>(n), 1, 1, 2, -1.5f, 1.0f);
    double xy = 0, xx = 0, yy = 0;
    for (std::size_t i = 0; i < n; ++i) {
      xy += static_cast<double>(a.data[i]) * b.data[i];
      xx += static_cast<double>(a.data[i]) * a.data[i];
      yy += static_cast<double>(b.data[i]) * b.data[i];
    }
    EXPECT_NEAR(ncc(a.data, b.data), xy / std::sqrt(xx * yy), 1e-6) << n;
  }
}

TEST(PrnuNcc, NoMeanIsTakenAndLimits) {
  const Image a = test::random_image(3000, 1, 1, 3);
  std::vector<float> neg(a.data), shifted(a.data);
  for (float& v : neg)
    v = -v;
  EXPECT_NEAR(ncc(a.data, a.data), 1.0, 1e-9);
  EXPECT_NEAR(ncc(a.data, neg), -1.0, 1e-9);
  // Adding a constant changes the digest's NCC (a mean-removing NCC would not).
  for (float& v : shifted)
    v += 5.0f;
  EXPECT_LT(ncc(a.data, shifted), 0.5);
  std::vector<float> zero(3000, 0.0f);
  EXPECT_EQ(ncc(a.data, zero), 0.0);
  EXPECT_THROW(ncc(a.data, std::vector<float>(10)), std::invalid_argument);
}

// C(dy, dx) = sum a'(y, x) b'(y - dy, x - dx), circular, means removed.
std::vector<double> naive_crosscorr(const Image& a, const Image& b) {
  const int w = a.width, h = a.height;
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.pixels(); ++i) {
    ma += a.data[i];
    mb += b.data[i];
  }
  ma /= static_cast<double>(a.pixels());
  mb /= static_cast<double>(b.pixels());
  std::vector<double> c(a.pixels());
  for (int dy = 0; dy < h; ++dy)
    for (int dx = 0; dx < w; ++dx) {
      double s = 0;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          s += (a.at(x, y) - ma) * (b.at(((x - dx) % w + w) % w, ((y - dy) % h + h) % h) - mb);
      c[static_cast<std::size_t>(dy * w + dx)] = s;
    }
  return c;
}

TEST(PrnuCrosscorr, MatchesTheNaiveCircularCorrelation) {
  FftPlans plans;
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{9, 7}, {8, 6}, {5, 12}}) {
    const Image a = test::random_image(w, h, 1, 10u + static_cast<unsigned>(w), 0.0f, 3.0f);
    const Image b = test::random_image(w, h, 1, 20u + static_cast<unsigned>(h), -1.0f, 1.0f);
    const Image c = crosscorr_2d(a, b, plans);
    ASSERT_EQ(c.width, w);
    ASSERT_EQ(c.height, h);
    EXPECT_LT(test::max_abs_diff(c.data, naive_crosscorr(a, b)), 1e-4);
  }
}

TEST(PrnuCrosscorr, PrnuPythonsRotatedFormIsOneStepRound) {
  // prnu-python: real(ifft2(fft2(a') * fft2(rot90(b', 2)))), a circular
  // convolution with b' turned by 180 degrees; its [y, x] is our (y+1, x+1).
  FftPlans plans;
  const int w = 7, h = 6;
  const Image a = test::random_image(w, h, 1, 31);
  const Image b = test::random_image(w, h, 1, 32);
  const Image c = crosscorr_2d(a, b, plans);
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.pixels(); ++i) {
    ma += a.data[i] / static_cast<double>(a.pixels());
    mb += b.data[i] / static_cast<double>(b.pixels());
  }
  for (int sy = 0; sy < h; ++sy)
    for (int sx = 0; sx < w; ++sx) {
      double conv = 0;  // sum_i a'[i] rot(b')[s - i]
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const int ry = ((sy - y) % h + h) % h, rx = ((sx - x) % w + w) % w;
          conv += (a.at(x, y) - ma) * (b.at(w - 1 - rx, h - 1 - ry) - mb);
        }
      EXPECT_NEAR(conv, c.at((sx + 1) % w, (sy + 1) % h), 1e-4);
    }
}

TEST(PrnuCrosscorr, ZeroShiftIsElementZeroAndShiftsLandWhereDocumented) {
  FftPlans plans;
  const int w = 32, h = 24;
  const Image b = test::random_image(w, h, 1, 41);
  // a(y, x) = b(y - 3, x + 5): the shift (dx, dy) = (-5, 3).
  Image a(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      a.at(x, y) = b.at(((x + 5) % w + w) % w, ((y - 3) % h + h) % h);
  const Image same = crosscorr_2d(b, b, plans);
  const PceResult at_zero = pce(same);
  EXPECT_EQ(at_zero.peak_x, 0);
  EXPECT_EQ(at_zero.peak_y, 0);
  EXPECT_GT(at_zero.pce, 100.0);

  const Image moved = crosscorr_2d(a, b, plans);
  const PceResult unsearched = pce(moved);  // reads zero shift: nothing there
  EXPECT_LT(std::abs(unsearched.pce), 20.0);
  const PceResult found = pce(moved, {11, 6});
  EXPECT_EQ(found.shift_x, -5);
  EXPECT_EQ(found.shift_y, 3);
  EXPECT_EQ(found.peak_x, w - 5);
  EXPECT_EQ(found.peak_y, 3);
  EXPECT_GT(found.pce, 100.0);
  const PceResult too_narrow = pce(moved, {11, 4});
  EXPECT_LT(std::abs(too_narrow.pce), 20.0);
}

TEST(PrnuPce, MatchesTheDirectDefinition) {
  // A hand-made correlation with a negative peak at zero shift and a bigger
  // value elsewhere, to read both modes.
  const int w = 20, h = 15;
  Image c = test::random_image(w, h, 1, 51, -1.0f, 1.0f);
  c.at(0, 0) = -9.0f;
  c.at(3, 2) = 12.0f;
  auto direct = [&](int px, int py, int box) {
    double s = 0;
    int n = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        int dx = ((x - px) % w + w) % w, dy = ((y - py) % h + h) % h;
        dx = dx > w / 2 ? dx - w : dx;
        dy = dy > h / 2 ? dy - h : dy;
        if (std::abs(dx) <= box / 2 && std::abs(dy) <= box / 2)
          continue;
        s += static_cast<double>(c.at(x, y)) * c.at(x, y);
        ++n;
      }
    const double e = s / n;
    const double peak = c.at(px, py);
    return (peak >= 0 ? 1 : -1) * peak * peak / e;
  };
  const PceResult zero = pce(c);
  EXPECT_EQ(zero.peak, -9.0);
  EXPECT_LT(zero.pce, 0.0);
  EXPECT_NEAR(zero.pce, direct(0, 0, 11), 1e-6 * std::abs(zero.pce));
  const PceResult searched = pce(c, {5, 4});
  EXPECT_EQ(searched.peak_x, 3);
  EXPECT_EQ(searched.peak_y, 2);
  EXPECT_NEAR(searched.pce, direct(3, 2, 5), 1e-6 * searched.pce);
  const PceResult narrow = pce(c, {3, 1});  // (3, 2) is out of reach
  EXPECT_EQ(narrow.peak_x, 0);
  EXPECT_EQ(narrow.peak_y, 0);
  EXPECT_THROW(pce(c, {4, 0}), std::invalid_argument);
  // A box as big as C leaves no energy: PCE 0, not a division by zero.
  EXPECT_EQ(pce(Image(5, 5), {11, 0}).pce, 0.0);
}

TEST(PrnuGeometry, CentreCropOffsets) {
  Image im(7, 6, 2);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 7; ++x)
      for (int c = 0; c < 2; ++c)
        im.at(x, y, c) = static_cast<float>(100 * y + 10 * x + c);
  const Image cut = centre_crop(im, 4, 3);  // offsets (1, 1)
  ASSERT_EQ(cut.width, 4);
  ASSERT_EQ(cut.height, 3);
  ASSERT_EQ(cut.channels, 2);
  EXPECT_EQ(cut.at(0, 0, 0), 110.0f);
  EXPECT_EQ(cut.at(3, 2, 1), 341.0f);
  EXPECT_EQ(centre_crop(im, 7, 6).data, im.data);
  EXPECT_THROW(centre_crop(im, 8, 3), std::invalid_argument);
  EXPECT_THROW(centre_crop(im, 3, 7), std::invalid_argument);
}

TEST(PrnuGeometry, RotateToMatch) {
  Image portrait(2, 3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 2; ++x)
      portrait.at(x, y) = static_cast<float>(10 * y + x);
  // numpy.rot90([[0, 1], [10, 11], [20, 21]]) == [[1, 11, 21], [0, 10, 20]]
  const Image turned = rotate_to_match(portrait, 30, 20);
  ASSERT_EQ(turned.width, 3);
  ASSERT_EQ(turned.height, 2);
  EXPECT_EQ(turned.data, (std::vector<float>{1, 11, 21, 0, 10, 20}));
  EXPECT_EQ(rotate_to_match(portrait, 20, 30).data, portrait.data);
  EXPECT_EQ(rotate_to_match(portrait, 20, 20).data, portrait.data);
  const Image square = test::random_image(4, 4, 3, 1);
  EXPECT_EQ(rotate_to_match(square, 40, 20).data, square.data);
}

}  // namespace
}  // namespace flowd::prnu

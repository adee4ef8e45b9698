// The hot loops against their definitions: the pyramid's coordinate mapping,
// the gradient, the NCC sums and their analytic Jacobian (against finite
// differences), and the warp.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "kernels.hpp"
#include "register.hpp"

namespace reg = flowd::registration;

namespace {

reg::Image make(int w, int h, const std::function<double(double, double)>& f) {
  reg::Image img(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      img.row(y)[x] = static_cast<float>(f(x, y));
  return img;
}

// Smooth blobs well inside the frame: zero near the border, so the overlap
// changing with the motion does not change the sums.
double blobs(double x, double y) {
  double v = 0.0;
  const double centres[][3] = {{40, 45, 9}, {70, 60, 12}, {55, 85, 8}, {90, 40, 10}, {65, 40, 7}};
  for (const auto& c : centres)
    v += std::exp(-((x - c[0]) * (x - c[0]) + (y - c[1]) * (y - c[1])) / (2 * c[2] * c[2]));
  return v;
}

}  // namespace

TEST(Kernels, PyramidDownMapsCoordinatesAsDocumented) {
  // A linear ramp is reproduced by any symmetric normalised filter, so level 1
  // holds f((x1 + 0.5) * 2 - 0.5) away from the replicated border.
  const reg::Image ramp = make(64, 48, [](double x, double y) { return 3.0 * x - 2.0 * y; });
  const reg::Image half = reg::pyramid_down(ramp.view());
  ASSERT_EQ(half.width(), 32);
  ASSERT_EQ(half.height(), 24);
  for (int y = 2; y < 22; ++y)
    for (int x = 2; x < 30; ++x)
      EXPECT_NEAR(half.row(y)[x], 3.0 * (2 * x + 0.5) - 2.0 * (2 * y + 0.5), 1e-3) << x << "," << y;
  const reg::Image odd = reg::pyramid_down(make(9, 7, [](double, double) { return 5.0; }).view());
  EXPECT_EQ(odd.width(), 4);
  EXPECT_EQ(odd.height(), 3);
  EXPECT_NEAR(odd.row(1)[1], 5.0, 1e-6);
}

TEST(Kernels, GradientOfAPlane) {
  const reg::Image plane = make(16, 12, [](double x, double y) { return 0.5 * x - 1.5 * y; });
  reg::Image gx, gy;
  reg::gradient(plane.view(), gx, gy);
  for (int y = 0; y < 12; ++y)
    for (int x = 0; x < 16; ++x) {
      EXPECT_NEAR(gx.row(y)[x], 0.5, 1e-5);
      EXPECT_NEAR(gy.row(y)[x], -1.5, 1e-5);
    }
}

TEST(Kernels, GaussianBlurKeepsAPlaneAndTheMass) {
  const reg::Image plane = make(40, 30, [](double x, double y) { return 2.0 + 0.1 * x + 0.2 * y; });
  const reg::Image blurred = reg::gaussian_blur(plane.view(), 1.5);
  for (int y = 6; y < 24; ++y)
    for (int x = 6; x < 34; ++x)
      EXPECT_NEAR(blurred.row(y)[x], plane.row(y)[x], 1e-4);
}

TEST(Kernels, NccOfAnImageWithItselfIsOne) {
  const reg::Image img = make(128, 128, blobs);
  reg::Image gx, gy;
  reg::gradient(img.view(), gx, gy);
  const reg::WarpParams id{1.0, 0.0, 63.5, 63.5, 0.0, 0.0};
  const reg::NccSums s = reg::ncc_sums(img.view(), img.view(), gx.view(), gy.view(), id, false);
  EXPECT_EQ(s.n, 128.0 * 128.0);
  const double n = s.n, cov = s.rw - s.r * s.w / n, vr = s.rr - s.r * s.r / n, vw = s.ww - s.w * s.w / n;
  EXPECT_NEAR(cov / std::sqrt(vr * vw), 1.0, 1e-9);
}

TEST(Kernels, JacobianMatchesFiniteDifferences) {
  // d(sum of w)/dp and d(sum of r w)/dp by central differences against the
  // analytic sums j and jr. The template is larger than the reference and
  // every warped reference pixel stays inside it, so the overlap does not
  // change with the motion; the blobs are broad, so central differences and
  // the bilinear interpolant's slope agree to a few percent.
  const reg::Image ref = make(128, 128, blobs);
  const reg::Image tmpl = make(256, 256, [](double x, double y) { return blobs(x - 64.0 + 0.7, y - 64.0 - 0.4); });
  reg::Image gx, gy;
  reg::gradient(tmpl.view(), gx, gy);
  const double angle = 0.02, tx = 64.3, ty = 63.8;
  auto params = [&](double a, double x, double y) {
    return reg::WarpParams{std::cos(a), std::sin(a), 63.5, 63.5, x, y};
  };
  const reg::NccSums s = reg::ncc_sums(ref.view(), tmpl.view(), gx.view(), gy.view(), params(angle, tx, ty), true);
  ASSERT_EQ(s.n, 128.0 * 128.0);
  const double h[3] = {1e-4, 1e-3, 1e-3};
  for (int i = 0; i < 3; ++i) {
    double p[3] = {angle, tx, ty}, m[3] = {angle, tx, ty};
    p[i] += h[i];
    m[i] -= h[i];
    const reg::NccSums sp =
        reg::ncc_sums(ref.view(), tmpl.view(), gx.view(), gy.view(), params(p[0], p[1], p[2]), false);
    const reg::NccSums sm =
        reg::ncc_sums(ref.view(), tmpl.view(), gx.view(), gy.view(), params(m[0], m[1], m[2]), false);
    const double dw = (sp.w - sm.w) / (2 * h[i]), drw = (sp.rw - sm.rw) / (2 * h[i]);
    EXPECT_NEAR(s.j[i], dw, 0.03 * std::abs(dw) + 0.5) << "parameter " << i;
    // r weights the error of the slope (first order in the sub-pixel position)
    // unevenly, so the correlation term agrees less closely.
    EXPECT_NEAR(s.jr[i], drw, 0.08 * std::abs(drw) + 1.0) << "parameter " << i;
  }
}

TEST(Kernels, WarpAgreesWithTheSums) {
  const reg::Image tmpl = make(96, 80, blobs);
  reg::Image gx, gy;
  reg::gradient(tmpl.view(), gx, gy);
  const reg::WarpParams p{std::cos(0.05), std::sin(0.05), 47.5, 39.5, 3.25, -2.5};
  const reg::Image warped = reg::warp(tmpl.view(), p, 96, 80, std::nanf(""));
  const reg::NccSums s = reg::ncc_sums(tmpl.view(), tmpl.view(), gx.view(), gy.view(), p, false);
  double n = 0, sum = 0;
  for (int y = 0; y < 80; ++y)
    for (int x = 0; x < 96; ++x)
      if (!std::isnan(warped.row(y)[x])) ++n, sum += warped.row(y)[x];
  EXPECT_NEAR(n, s.n, 2.0);  // the inside test at exact borders may round differently
  EXPECT_NEAR(sum, s.w, 1e-3 * std::abs(s.w) + 2.0);
}

TEST(Kernels, LevelParamsScaleTranslationAndCentre) {
  const reg::Rigid phi{0.1, 8.0, -4.0};
  const reg::WarpParams l0 = reg::level_params(phi, 512, 256, 0);
  EXPECT_DOUBLE_EQ(l0.cx, 255.5);
  EXPECT_DOUBLE_EQ(l0.tx, 8.0);
  const reg::WarpParams l2 = reg::level_params(phi, 512, 256, 2);
  EXPECT_DOUBLE_EQ(l2.cx, (255.5 + 0.5) / 4 - 0.5);
  EXPECT_DOUBLE_EQ(l2.cy, (127.5 + 0.5) / 4 - 0.5);
  EXPECT_DOUBLE_EQ(l2.tx, 2.0);
  EXPECT_DOUBLE_EQ(l2.ty, -1.0);
  EXPECT_DOUBLE_EQ(l2.cos_a, std::cos(0.1));
}

// The PRNU core's CUDA twin (plugins/prnu/core/gpu) against the CPU
// functions. Every test skips, saying why, where no CUDA GPU is present.
//
// Tolerances: the kernels round as the CPU code does (--fmad=false, the same
// window-sum order), so what differs is cuFFT against FFTW (float rounding
// of different algorithms, ~1e-6 relative per transform) and the order of
// the double reductions. The residual is asked to agree within 1e-4 of its
// largest magnitude, NCC within 1e-6 (relative), the cross-correlation
// within 1e-4 of its largest magnitude, PCE within 1e-4 (relative) with the
// same peak.
#include <cmath>
#include <cuda_runtime.h>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "prnu.hpp"
#include "prnu_gpu.hpp"
#include "prnu_test_util.hpp"

namespace flowd::prnu {
namespace {

#define SKIP_WITHOUT_GPU()                                                    \
  do {                                                                        \
    std::string why;                                                          \
    if (gpu::device_count(&why) == 0) GTEST_SKIP() << "no CUDA GPU: " << why; \
  } while (0)

// max |a - b| relative to max |b|.
double relative_max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  const double scale = test::max_abs(b);
  return test::max_abs_diff(a, b) / (scale > 0.0 ? scale : 1.0);
}

TEST(PrnuGpu, ResidualNfiMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  FftPlans cpu;
  gpu::GpuPlans plans;
  for (const auto& [w, h, c] : std::vector<std::tuple<int, int, int>>{
           {97, 61, 3}, {64, 48, 3}, {33, 20, 1}, {1, 7, 3}, {5, 1, 1}, {1024, 768, 3}, {913, 1371, 3}}) {
    const Image rgb = test::random_image(w, h, c, 5u + static_cast<unsigned>(w * h), 0.0f, 255.0f);
    const Image want = residual_nfi(rgb, cpu);
    const Image got = gpu::residual_nfi(rgb, plans);
    ASSERT_EQ(got.width, w);
    ASSERT_EQ(got.height, h);
    EXPECT_LT(relative_max_diff(got.data, want.data), 1e-4) << w << "x" << h << "x" << c;
  }
  // A constant image: zero pattern, zero noise variance, zeros out.
  Image flat(40, 30, 3);
  for (float& v : flat.data)
    v = 100.0f;
  EXPECT_EQ(test::max_abs(gpu::residual_nfi(flat, plans).data), 0.0);
  EXPECT_EQ(plans.cached_sizes(), 8u);
}

TEST(PrnuGpu, ResidualNfiOnDeviceBuffersAndAStream) {
  SKIP_WITHOUT_GPU();
  FftPlans cpu;
  gpu::GpuPlans plans;
  const int w = 300, h = 211;
  const Image rgb = test::random_image(w, h, 3, 99u, 0.0f, 255.0f);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  gpu::DeviceBuffer in(rgb.data.size()), out(rgb.pixels());
  in.upload(rgb.data.data(), rgb.data.size(), stream);
  gpu::residual_nfi(in.data(), w, h, 3, out.data(), plans, stream);
  Image got(w, h, 1);
  out.download(got.data.data(), got.data.size(), stream);
  EXPECT_LT(relative_max_diff(got.data, residual_nfi(rgb, cpu).data), 1e-4);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(PrnuGpu, NccMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  gpu::GpuPlans plans;
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000003}, std::size_t{3648} * 2736}) {
    const Image a = test::random_image(static_cast<int>(n), 1, 1, 3u);
    Image b = test::random_image(static_cast<int>(n), 1, 1, 4u);
    for (std::size_t i = 0; i < n; ++i)
      b.data[i] += 0.3f * a.data[i];
    const double want = ncc(a.data, b.data);
    const double got = gpu::ncc(a.data, b.data, plans);
    EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::abs(want))) << n;
  }
  // Not 16-byte aligned: the scalar path.
  const Image a = test::random_image(4099, 1, 1, 5u);
  const Image b = test::random_image(4099, 1, 1, 6u);
  gpu::DeviceBuffer da(4099), db(4099);
  da.upload(a.data.data(), 4099);
  db.upload(b.data.data(), 4099);
  const double want = ncc(std::span(a.data).subspan(1), std::span(b.data).subspan(1));
  EXPECT_NEAR(gpu::ncc(da.data() + 1, db.data() + 1, 4098, plans, nullptr), want, 1e-6);
  // Zero in, zero out.
  const std::vector<float> zeros(100, 0.0f);
  EXPECT_EQ(gpu::ncc(zeros, zeros, plans), 0.0);
}

TEST(PrnuGpu, CrosscorrAndPceMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  FftPlans cpu;
  gpu::GpuPlans plans;
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{64, 48}, {97, 61}, {512, 384}, {7, 5}}) {
    const Image a = test::random_image(w, h, 1, 11u + static_cast<unsigned>(w));
    Image b = test::random_image(w, h, 1, 12u + static_cast<unsigned>(w));
    // b holds a shifted by (3, -2) (wrapped) plus noise: a peak off zero.
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        b.at(x, y) += 0.5f * a.at(((x + 3) % w + w) % w, ((y - 2) % h + h) % h);
    const Image want = crosscorr_2d(a, b, cpu);
    const Image got = gpu::crosscorr_2d(a, b, plans);
    EXPECT_LT(relative_max_diff(got.data, want.data), 1e-4) << w << "x" << h;
    for (const PceOptions options : {PceOptions{11, 0}, PceOptions{5, 4}, PceOptions{3, 100}}) {
      const PceResult c = pce(want, options);
      const PceResult g = gpu::pce(want, options, plans);  // the same correlation: the same peak
      EXPECT_EQ(g.peak_x, c.peak_x) << w << "x" << h;
      EXPECT_EQ(g.peak_y, c.peak_y);
      EXPECT_EQ(g.shift_x, c.shift_x);
      EXPECT_EQ(g.shift_y, c.shift_y);
      EXPECT_EQ(g.peak, c.peak);
      EXPECT_NEAR(g.energy, c.energy, 1e-9 * c.energy);
      EXPECT_NEAR(g.pce, c.pce, 1e-6 * std::abs(c.pce));
      const PceResult from_gpu = gpu::pce(got, options, plans);
      EXPECT_NEAR(from_gpu.pce, c.pce, 1e-4 * std::abs(c.pce)) << w << "x" << h;
    }
  }
}

}  // namespace
}  // namespace flowd::prnu

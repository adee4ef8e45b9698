// nuclei features: the GPU twin against the CPU variant on random labelled
// tiles. Every feature of every nucleus must agree within relative 1e-4
// (plus 1e-9 absolute, for values that are 0 up to rounding, such as the
// skewness of a symmetric histogram). Skipped, with the reason, where no
// CUDA GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "features/features.hpp"
#include "features/features_gpu.hpp"
#include "features_test_util.hpp"

namespace ft = flowd::nuclei::features;

#define REQUIRE_GPU()                                                  \
  do {                                                                 \
    std::string why_;                                                  \
    if (ft::gpu_count(&why_) == 0) GTEST_SKIP() << "no CUDA GPU: " << why_; \
  } while (0)

namespace {

void expect_same(const ft::Result& cpu, const ft::Result& gpu) {
  ASSERT_EQ(cpu.nuclei.size(), gpu.nuclei.size());
  ASSERT_EQ(cpu.values.size(), gpu.values.size());
  int reported = 0;
  for (std::size_t i = 0; i < cpu.nuclei.size(); ++i) {
    ASSERT_EQ(cpu.nuclei[i].label, gpu.nuclei[i].label);
    ASSERT_EQ(cpu.nuclei[i].area, gpu.nuclei[i].area);
    ASSERT_EQ(cpu.nuclei[i].bbox_row, gpu.nuclei[i].bbox_row);
    ASSERT_EQ(cpu.nuclei[i].bbox_col, gpu.nuclei[i].bbox_col);
    for (int f = 0; f < ft::kFeatureCount; ++f) {
      const double a = cpu.at(i, f), b = gpu.at(i, f);
      const bool ok = std::fabs(a - b) <= 1e-4 * std::max(std::fabs(a), std::fabs(b)) + 1e-9;
      if (!ok && ++reported <= 20)
        ADD_FAILURE() << "label " << cpu.nuclei[i].label << " " << ft::feature_names()[static_cast<std::size_t>(f)]
                      << ": cpu " << a << " gpu " << b;
    }
  }
  EXPECT_EQ(reported, 0);
}

}  // namespace

TEST(NucleiFeaturesGpu, MatchesCpuOnRandomTiles) {
  REQUIRE_GPU();
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const int rows = 180 + 37 * static_cast<int>(seed), cols = 250 + 11 * static_cast<int>(seed);
    const cv::Mat rgb = ft::ftest::random_tissue(rows, cols, seed);
    const cv::Mat labels = ft::ftest::random_labels(rows, cols, 120, 18, seed + 100);
    ft::Options o;
    o.glcm_levels = seed == 2 ? 64 : seed == 3 ? 7 : 32;  // 64: over 48 KiB of shared memory
    o.ring_um = seed == 4 ? 0 : 2.0;
    const ft::Result cpu = ft::compute(rgb, labels, o);
    ASSERT_GT(cpu.nuclei.size(), 50u);
    expect_same(cpu, ft::compute_gpu(rgb, labels, o, 0));
  }
}

// Big nuclei (boxes much larger than a block), a nucleus filling a whole
// small tile, and a tile of one row.
TEST(NucleiFeaturesGpu, MatchesCpuOnLargeAndDegenerateNuclei) {
  REQUIRE_GPU();
  const cv::Mat rgb = ft::ftest::random_tissue(300, 300, 9);
  const cv::Mat labels = ft::ftest::random_labels(300, 300, 6, 120, 10);
  expect_same(ft::compute(rgb, labels, {}), ft::compute_gpu(rgb, labels, {}, 0));

  const cv::Mat small = ft::ftest::random_tissue(5, 7, 3);
  const cv::Mat whole(5, 7, CV_32S, cv::Scalar(4));
  expect_same(ft::compute(small, whole, {}), ft::compute_gpu(small, whole, {}, 0));

  const cv::Mat line = ft::ftest::random_tissue(1, 40, 4);
  cv::Mat line_labels = cv::Mat::zeros(1, 40, CV_32S);
  line_labels(cv::Rect(3, 0, 10, 1)).setTo(1);
  line_labels(cv::Rect(20, 0, 1, 1)).setTo(2);
  expect_same(ft::compute(line, line_labels, {}), ft::compute_gpu(line, line_labels, {}, 0));
}

// Strided inputs, as the engine may hand over a view: a tile that is a
// window of a larger device image.
TEST(NucleiFeaturesGpu, MatchesCpuOnStridedInputs) {
  REQUIRE_GPU();
  const cv::Mat big = ft::ftest::random_tissue(200, 260, 21);
  const cv::Mat big_labels = ft::ftest::random_labels(200, 260, 80, 14, 22);
  const cv::Rect window(17, 9, 201, 150);
  const ft::Result cpu = ft::compute(big(window), big_labels(window), {});

  const int dev = 0;
  void* stream = ft::gpu::stream_create(dev);
  std::vector<void*> blocks;
  const auto allocate = [&](std::size_t bytes) { return blocks.emplace_back(ft::gpu::device_malloc(dev, bytes)); };
  auto* drgb = static_cast<std::uint8_t*>(allocate(big.total() * 3));
  auto* dlab = static_cast<std::int32_t*>(allocate(big_labels.total() * 4));
  ft::gpu::copy_to_device(dev, drgb, big.data, big.total() * 3, stream);
  ft::gpu::copy_to_device(dev, dlab, big_labels.data, big_labels.total() * 4, stream);
  ft::gpu::TileView t;
  t.device = dev;
  t.rows = window.height, t.cols = window.width;
  t.rgb = drgb + (static_cast<std::int64_t>(window.y) * big.cols + window.x) * 3;
  t.rgb_stride[0] = 3LL * big.cols, t.rgb_stride[1] = 3, t.rgb_stride[2] = 1;
  t.labels = dlab + static_cast<std::int64_t>(window.y) * big.cols + window.x;
  t.label_stride[0] = big.cols, t.label_stride[1] = 1;
  const ft::Result gpu = ft::compute_gpu(t, {}, stream, allocate);
  for (void* p : blocks) ft::gpu::device_free(dev, p);
  ft::gpu::stream_destroy(dev, stream);
  expect_same(cpu, gpu);
}

TEST(NucleiFeaturesGpu, EmptyLabels) {
  REQUIRE_GPU();
  const cv::Mat rgb = ft::ftest::random_tissue(30, 30, 1);
  EXPECT_TRUE(ft::compute_gpu(rgb, cv::Mat::zeros(30, 30, CV_32S), {}, 0).nuclei.empty());
}

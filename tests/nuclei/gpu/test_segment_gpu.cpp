// The GPU twins (segment/gpu/segment_gpu.hpp) against their CPU definitions
// (segment/segment.hpp): masks and values bit-identical, labels identical up
// to a bijective renumbering (and, as both number components in raster order
// of their first pixel, identical outright), counts equal. Every test skips,
// showing why, where no CUDA GPU is present.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "segment/gpu/segment_gpu.hpp"
#include "segment/segment.hpp"

namespace nu = flowd::nuclei;
namespace ng = flowd::nuclei::gpu;

namespace {

#define REQUIRE_GPU()                                                               \
  do {                                                                              \
    std::string why;                                                                \
    if (ng::device_count(&why) == 0) GTEST_SKIP() << "no CUDA GPU: " << why;        \
  } while (0)

void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A stream, an allocator that records its blocks, and device copies of
// cv::Mat; blocks are freed only after the stream has been waited for.
class Gpu {
public:
  Gpu() {
    cuda(cudaSetDevice(0), "cudaSetDevice");
    cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
    launch_.device = 0;
    launch_.stream = stream_;
    launch_.alloc = [this](std::size_t bytes) {
      void* p = nullptr;
      cuda(cudaMalloc(&p, bytes), "cudaMalloc (alloc)");
      temps_.push_back(p);
      return p;
    };
  }
  ~Gpu() {
    static_cast<void>(cudaStreamSynchronize(stream_));
    for (void* p : temps_) static_cast<void>(cudaFree(p));
    for (void* p : owned_) static_cast<void>(cudaFree(p));
    static_cast<void>(cudaStreamDestroy(stream_));
  }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const ng::Launch& launch() const { return launch_; }

  // Waits for the stream, then frees the temporaries of the calls so far.
  void sync() {
    cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    for (void* p : temps_) cuda(cudaFree(p), "cudaFree");
    temps_.clear();
  }

  // A device copy of `m` with a row pitch of its own (padded to exercise pitches).
  struct Dev {
    void* data = nullptr;
    std::int64_t pitch = 0;  // elements
    int rows = 0, cols = 0;
    std::size_t elem = 0;
    int channels = 1;
  };
  Dev upload(const cv::Mat& m) {
    Dev d;
    d.rows = m.rows;
    d.cols = m.cols;
    d.channels = m.channels();
    d.elem = m.elemSize1();
    const std::size_t row_bytes = static_cast<std::size_t>(m.cols) * m.elemSize();
    const std::int64_t pitch_elems = static_cast<std::int64_t>(m.cols) * d.channels + 3 * d.channels;  // padding
    d.pitch = pitch_elems;
    const std::size_t bytes = static_cast<std::size_t>(pitch_elems) * d.elem * static_cast<std::size_t>(m.rows > 0 ? m.rows : 1);
    cuda(cudaMalloc(&d.data, bytes), "cudaMalloc");
    owned_.push_back(d.data);
    cuda(cudaMemset(d.data, 0xA5, bytes), "cudaMemset");  // garbage in the padding
    if (m.rows > 0 && m.cols > 0)
      cuda(cudaMemcpy2D(d.data, static_cast<std::size_t>(pitch_elems) * d.elem, m.data, m.step, row_bytes,
                        static_cast<std::size_t>(m.rows), cudaMemcpyHostToDevice),
           "cudaMemcpy2D up");
    return d;
  }
  Dev alloc_like(int rows, int cols, int type) { return upload(cv::Mat(rows, cols, type, cv::Scalar::all(77))); }
  cv::Mat download(const Dev& d, int type) {
    sync();
    cv::Mat m(d.rows, d.cols, type);
    if (d.rows > 0 && d.cols > 0)
      cuda(cudaMemcpy2D(m.data, m.step, d.data, static_cast<std::size_t>(d.pitch) * d.elem,
                        static_cast<std::size_t>(d.cols) * m.elemSize(), static_cast<std::size_t>(d.rows),
                        cudaMemcpyDeviceToHost),
           "cudaMemcpy2D down");
    return m;
  }

  template <class T> static ng::ConstImage<T> in(const Dev& d) {
    ng::ConstImage<T> v;
    v.data = static_cast<const T*>(d.data);
    v.rows = d.rows;
    v.cols = d.cols;
    v.pitch = d.pitch;
    v.channel_stride = 1;
    v.col_stride = d.channels;
    return v;
  }
  template <class T> static ng::Image<T> out(const Dev& d) {
    ng::Image<T> v;
    v.data = static_cast<T*>(d.data);
    v.rows = d.rows;
    v.cols = d.cols;
    v.pitch = d.pitch;
    return v;
  }

private:
  cudaStream_t stream_ = nullptr;
  ng::Launch launch_;
  std::vector<void*> temps_, owned_;
};

// ---- comparisons -------------------------------------------------------------

// Bit-identical (floats compared by their bits: -0 vs +0 and inf count).
::testing::AssertionResult same_bits(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return ::testing::AssertionFailure() << "size or type differs";
  const std::size_t row = static_cast<std::size_t>(a.cols) * a.elemSize();
  for (int y = 0; y < a.rows; ++y)
    if (std::memcmp(a.ptr(y), b.ptr(y), row) != 0) {
      for (int x = 0; x < a.cols; ++x)
        if (std::memcmp(a.ptr(y) + x * a.elemSize(), b.ptr(y) + x * a.elemSize(), a.elemSize()) != 0) {
          auto f = ::testing::AssertionFailure() << "first difference at (" << y << ", " << x << ")";
          if (a.depth() == CV_32F) f << ": " << a.at<float>(y, x) << " vs " << b.at<float>(y, x);
          if (a.depth() == CV_32S) f << ": " << a.at<int>(y, x) << " vs " << b.at<int>(y, x);
          if (a.depth() == CV_8U && a.channels() == 1) f << ": " << int(a.at<std::uint8_t>(y, x)) << " vs " << int(b.at<std::uint8_t>(y, x));
          return f;
        }
    }
  return ::testing::AssertionSuccess();
}

// Labels equal up to a bijection that keeps 0 as 0.
::testing::AssertionResult same_partition(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != CV_32S || b.type() != CV_32S)
    return ::testing::AssertionFailure() << "size or type differs";
  std::map<int, int> ab, ba;
  for (int y = 0; y < a.rows; ++y)
    for (int x = 0; x < a.cols; ++x) {
      const int u = a.at<int>(y, x), v = b.at<int>(y, x);
      if ((u == 0) != (v == 0)) return ::testing::AssertionFailure() << "background differs at (" << y << ", " << x << ")";
      const auto [i, fresh_a] = ab.emplace(u, v);
      const auto [j, fresh_b] = ba.emplace(v, u);
      if (i->second != v || j->second != u)
        return ::testing::AssertionFailure() << "labels " << u << " / " << v << " are not a bijection at (" << y << ", "
                                             << x << ")";
      static_cast<void>(fresh_a);
      static_cast<void>(fresh_b);
    }
  return ::testing::AssertionSuccess();
}

// ---- inputs --------------------------------------------------------------------

cv::Mat random_u8(int rows, int cols, int type, std::uint32_t seed) {
  cv::Mat m(rows, cols, type);
  std::mt19937 rng(seed);
  for (int y = 0; y < rows; ++y) {
    std::uint8_t* p = m.ptr<std::uint8_t>(y);
    for (std::size_t i = 0; i < static_cast<std::size_t>(cols) * m.elemSize(); ++i) p[i] = static_cast<std::uint8_t>(rng() >> 24);
  }
  return m;
}

cv::Mat random_mask(int rows, int cols, double density, std::uint32_t seed) {
  cv::Mat m(rows, cols, CV_8U);
  std::mt19937 rng(seed);
  std::bernoulli_distribution b(density);
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x) m.at<std::uint8_t>(y, x) = b(rng) ? 255 : 0;
  return m;
}

// Discs, many touching or overlapping (nuclei-like clumps), some with holes.
cv::Mat blobs(int rows, int cols, std::uint32_t seed, bool holes = true) {
  cv::Mat m(rows, cols, CV_8U, cv::Scalar(0));
  std::mt19937 rng(seed);
  const int count = std::max(1, rows * cols / 600);
  for (int i = 0; i < count; ++i) {
    const int r = 2 + static_cast<int>(rng() % 12);
    const cv::Point c(static_cast<int>(rng() % static_cast<unsigned>(std::max(cols, 1))),
                      static_cast<int>(rng() % static_cast<unsigned>(std::max(rows, 1))));
    cv::circle(m, c, r, cv::Scalar(255), cv::FILLED);
    if (rng() % 3 == 0) cv::circle(m, c + cv::Point(r + r / 2, 0), r, cv::Scalar(255), cv::FILLED);  // touching pair
    if (holes && r > 5 && rng() % 4 == 0) cv::circle(m, c, r / 3, cv::Scalar(0), cv::FILLED);
  }
  return m;
}

struct Size {
  int rows, cols;
};
const std::vector<Size> kSizes = {{1, 1}, {1, 777}, {613, 1}, {2, 3}, {37, 1029}, {64, 64}, {255, 129}, {300, 301}};

// ---- per-pixel operations ---------------------------------------------------------

TEST(NucleiGpu, ColourMasksAndDeconvolution) {
  REQUIRE_GPU();
  Gpu gpu;
  std::uint32_t seed = 1;
  std::vector<Size> sizes = kSizes;
  sizes.push_back({2048, 2048});
  for (const Size s : sizes) {
    SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols));
    const cv::Mat rgb = random_u8(s.rows, s.cols, CV_8UC3, seed++);
    const auto in = gpu.upload(rgb);
    const auto out = gpu.alloc_like(s.rows, s.cols, CV_8U);
    for (const int level : {0, 100, 200, 256}) {
      ng::tissue_mask(gpu.launch(), Gpu::in<std::uint8_t>(in), level, Gpu::out<std::uint8_t>(out));
      EXPECT_TRUE(same_bits(gpu.download(out, CV_8U), nu::tissue_mask(rgb, level))) << "tissue " << level;
      ng::rbc_mask(gpu.launch(), Gpu::in<std::uint8_t>(in), 300, 280, level, Gpu::out<std::uint8_t>(out));
      EXPECT_TRUE(same_bits(gpu.download(out, CV_8U), nu::rbc_mask(rgb, 300, 280, level))) << "rbc " << level;
    }
    for (const int stain : {0, 1})
      for (const double od_max : {1.0, 2.5}) {
        const nu::StainWeights sw = nu::stain_weights(stain, od_max);
        ng::deconvolve(gpu.launch(), Gpu::in<std::uint8_t>(in), sw, Gpu::out<std::uint8_t>(out));
        EXPECT_TRUE(same_bits(gpu.download(out, CV_8U), nu::deconvolve(rgb, sw))) << "stain " << stain << " " << od_max;
      }
  }
}

TEST(NucleiGpu, DeconvolutionEveryColourOfACube) {
  REQUIRE_GPU();
  Gpu gpu;
  // All 2^24 colours would be 48 MiB; every 3rd level per channel covers the
  // LUT's range densely enough to hit each rounding boundary region.
  cv::Mat rgb(86 * 86, 86, CV_8UC3);
  for (int r = 0; r < 86; ++r)
    for (int g = 0; g < 86; ++g)
      for (int b = 0; b < 86; ++b)
        rgb.at<cv::Vec3b>(r * 86 + g, b) = cv::Vec3b(static_cast<std::uint8_t>(r * 3), static_cast<std::uint8_t>(g * 3),
                                                     static_cast<std::uint8_t>(b * 3));
  const auto in = gpu.upload(rgb);
  const auto out = gpu.alloc_like(rgb.rows, rgb.cols, CV_8U);
  for (const int stain : {0, 1}) {
    const nu::StainWeights sw = nu::stain_weights(stain, 1.7);
    ng::deconvolve(gpu.launch(), Gpu::in<std::uint8_t>(in), sw, Gpu::out<std::uint8_t>(out));
    EXPECT_TRUE(same_bits(gpu.download(out, CV_8U), nu::deconvolve(rgb, sw)));
  }
}

TEST(NucleiGpu, Open) {
  REQUIRE_GPU();
  Gpu gpu;
  std::uint32_t seed = 10;
  std::vector<Size> sizes = kSizes;
  sizes.push_back({2048, 2048});
  for (const Size s : sizes) {
    SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols));
    cv::Mat grey = random_u8(s.rows, s.cols, CV_8U, seed++);
    if (s.rows > 8) cv::max(grey, blobs(s.rows, s.cols, seed++), grey);
    const auto in = gpu.upload(grey);
    const auto out = gpu.alloc_like(s.rows, s.cols, CV_8U);
    for (const int radius : {0, 1, 2, 5, 11}) {
      if (s.rows * s.cols > 1 << 20 && radius != 5) continue;  // the CPU twin is the slow side
      ng::open(gpu.launch(), Gpu::in<std::uint8_t>(in), nu::disk_half_widths(radius), Gpu::out<std::uint8_t>(out));
      EXPECT_TRUE(same_bits(gpu.download(out, CV_8U), nu::open(grey, radius))) << "radius " << radius;
    }
  }
}

// ---- reconstruction --------------------------------------------------------------

void expect_reconstruct_u8(Gpu& gpu, const cv::Mat& marker, const cv::Mat& mask) {
  const auto m = gpu.upload(marker);
  const auto k = gpu.upload(mask);
  ng::reconstruct(gpu.launch(), Gpu::out<std::uint8_t>(m), Gpu::in<std::uint8_t>(k));
  EXPECT_TRUE(same_bits(gpu.download(m, CV_8U), nu::reconstruct(marker, mask)));
}
void expect_reconstruct_f32(Gpu& gpu, const cv::Mat& marker, const cv::Mat& mask) {
  const auto m = gpu.upload(marker);
  const auto k = gpu.upload(mask);
  ng::reconstruct(gpu.launch(), Gpu::out<float>(m), Gpu::in<float>(k));
  EXPECT_TRUE(same_bits(gpu.download(m, CV_32F), nu::reconstruct(marker, mask)));
}

TEST(NucleiGpu, ReconstructU8) {
  REQUIRE_GPU();
  Gpu gpu;
  std::uint32_t seed = 100;
  std::vector<Size> sizes = kSizes;
  sizes.push_back({2048, 2048});
  for (const Size s : sizes) {
    SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols));
    const cv::Mat mask = random_u8(s.rows, s.cols, CV_8U, seed++);
    // random marker (exceeds the mask in places: clamped first)
    expect_reconstruct_u8(gpu, random_u8(s.rows, s.cols, CV_8U, seed++), mask);
    // marker = mask - 40 (ReconToNuclei's shape) and a sparse marker
    cv::Mat lowered;
    cv::subtract(mask, cv::Scalar(40), lowered);
    expect_reconstruct_u8(gpu, lowered, mask);
    const cv::Mat sparse = random_mask(s.rows, s.cols, 0.001, seed++);
    expect_reconstruct_u8(gpu, sparse, mask);
    // binary: blobs reconstructed from a few seeds (long propagation paths)
    if (s.rows > 8 && s.cols > 8) {
      const cv::Mat b = blobs(s.rows, s.cols, seed++);
      expect_reconstruct_u8(gpu, sparse, b);
      cv::Mat snake(s.rows, s.cols, CV_8U, cv::Scalar(0));  // a serpentine: one path through the image
      for (int y = 0; y < s.rows; y += 2) snake.row(y).setTo(255);
      for (int y = 1; y < s.rows; y += 2) snake.at<std::uint8_t>(y, (y / 2) % 2 ? 0 : s.cols - 1) = 255;
      cv::Mat seed_px(s.rows, s.cols, CV_8U, cv::Scalar(0));
      seed_px.at<std::uint8_t>(0, 0) = 255;
      expect_reconstruct_u8(gpu, seed_px, snake);
    }
  }
}

TEST(NucleiGpu, ReconstructF32) {
  REQUIRE_GPU();
  Gpu gpu;
  std::uint32_t seed = 200;
  std::vector<Size> sizes = kSizes;
  sizes.push_back({2048, 2048});
  for (const Size s : sizes) {
    SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols));
    std::mt19937 rng(seed++);
    std::uniform_real_distribution<float> u(-50.0f, 200.0f);
    cv::Mat mask(s.rows, s.cols, CV_32F), marker(s.rows, s.cols, CV_32F);
    for (int y = 0; y < s.rows; ++y)
      for (int x = 0; x < s.cols; ++x) {
        mask.at<float>(y, x) = u(rng);
        marker.at<float>(y, x) = u(rng);
      }
    expect_reconstruct_f32(gpu, marker, mask);  // negative values included
    // the h-maxima shape: dist - h under dist
    const cv::Mat dist = nu::distance_transform(blobs(s.rows, s.cols, seed++));
    if (!std::isinf(dist.at<float>(0, 0))) {
      cv::Mat lowered = dist - 2.0f;
      expect_reconstruct_f32(gpu, lowered, dist);
    }
  }
}

// ---- components ------------------------------------------------------------------

TEST(NucleiGpu, LabelAreaThresholdFillHoles) {
  REQUIRE_GPU();
  Gpu gpu;
  std::uint32_t seed = 300;
  std::vector<Size> sizes = kSizes;
  sizes.push_back({2048, 2048});
  for (const Size s : sizes) {
    std::vector<cv::Mat> masks;
    for (const double density : {0.0, 0.1, 0.45, 0.6, 0.9, 1.0}) masks.push_back(random_mask(s.rows, s.cols, density, seed++));
    masks.push_back(blobs(s.rows, s.cols, seed++));
    for (std::size_t k = 0; k < masks.size(); ++k) {
      SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols) + " mask " + std::to_string(k));
      const cv::Mat& mask = masks[k];
      const auto in = gpu.upload(mask);
      const auto lab = gpu.alloc_like(s.rows, s.cols, CV_32S);
      const auto out = gpu.alloc_like(s.rows, s.cols, CV_8U);

      int cpu_count = -1;
      const cv::Mat cpu_labels = nu::label(mask, &cpu_count);
      const int gpu_count = ng::label(gpu.launch(), Gpu::in<std::uint8_t>(in), Gpu::out<std::int32_t>(lab));
      const cv::Mat gpu_labels = gpu.download(lab, CV_32S);
      EXPECT_EQ(gpu_count, cpu_count);
      EXPECT_TRUE(same_partition(gpu_labels, cpu_labels));
      EXPECT_TRUE(same_bits(gpu_labels, cpu_labels)) << "numbering (raster order of first pixels)";

      for (const auto& [lo, hi] : {std::pair{0, 0}, std::pair{2, 0}, std::pair{5, 40}, std::pair{30, 0}}) {
        ng::area_threshold(gpu.launch(), Gpu::in<std::uint8_t>(in), lo, hi, Gpu::out<std::uint8_t>(out));
        EXPECT_TRUE(same_bits(gpu.download(out, CV_8U), nu::area_threshold(mask, lo, hi))) << lo << ".." << hi;
      }
      ng::fill_holes(gpu.launch(), Gpu::in<std::uint8_t>(in), Gpu::out<std::uint8_t>(out));
      EXPECT_TRUE(same_bits(gpu.download(out, CV_8U), nu::fill_holes(mask)));
    }
  }
}

TEST(NucleiGpu, LabelLongComponents) {
  REQUIRE_GPU();
  Gpu gpu;
  // A spiral-free serpentine and a diagonal staircase: one component each,
  // whose pixels are linked only through long chains of unions.
  const int n = 513;
  cv::Mat snake(n, n, CV_8U, cv::Scalar(0)), stairs(n, n, CV_8U, cv::Scalar(0));
  for (int y = 0; y < n; y += 2) snake.row(y).setTo(255);
  for (int y = 1; y < n; y += 2) snake.at<std::uint8_t>(y, (y / 2) % 2 ? 0 : n - 1) = 255;
  for (int i = 0; i < n; ++i) stairs.at<std::uint8_t>(i, n - 1 - i) = 255;  // anti-diagonal: NE links only
  for (const cv::Mat& mask : {snake, stairs}) {
    const auto in = gpu.upload(mask);
    const auto lab = gpu.alloc_like(n, n, CV_32S);
    int cpu_count = -1;
    const cv::Mat cpu_labels = nu::label(mask, &cpu_count);
    EXPECT_EQ(ng::label(gpu.launch(), Gpu::in<std::uint8_t>(in), Gpu::out<std::int32_t>(lab)), cpu_count);
    EXPECT_TRUE(same_bits(gpu.download(lab, CV_32S), cpu_labels));
  }
}

// ---- distance, markers, watershed -------------------------------------------------

TEST(NucleiGpu, DistanceTransform) {
  REQUIRE_GPU();
  Gpu gpu;
  std::uint32_t seed = 400;
  std::vector<Size> sizes = kSizes;
  sizes.push_back({2048, 2048});
  for (const Size s : sizes) {
    std::vector<cv::Mat> masks;
    for (const double density : {0.5, 0.9, 0.999, 1.0, 0.0}) masks.push_back(random_mask(s.rows, s.cols, density, seed++));
    masks.push_back(blobs(s.rows, s.cols, seed++));
    cv::Mat one_zero(s.rows, s.cols, CV_8U, cv::Scalar(255));
    one_zero.at<std::uint8_t>(s.rows / 2, s.cols - 1) = 0;
    masks.push_back(one_zero);
    for (std::size_t k = 0; k < masks.size(); ++k) {
      SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols) + " mask " + std::to_string(k));
      const auto in = gpu.upload(masks[k]);
      const auto out = gpu.alloc_like(s.rows, s.cols, CV_32F);
      ng::distance_transform(gpu.launch(), Gpu::in<std::uint8_t>(in), Gpu::out<float>(out));
      EXPECT_TRUE(same_bits(gpu.download(out, CV_32F), nu::distance_transform(masks[k])));
    }
  }
}

TEST(NucleiGpu, MarkersAndWatershed) {
  REQUIRE_GPU();
  Gpu gpu;
  std::uint32_t seed = 500;
  std::vector<Size> sizes = kSizes;
  sizes.push_back({2048, 2048});
  for (const Size s : sizes) {
    std::vector<cv::Mat> masks = {blobs(s.rows, s.cols, seed++, false), random_mask(s.rows, s.cols, 0.8, seed++),
                                  cv::Mat(s.rows, s.cols, CV_8U, cv::Scalar(255))};
    for (std::size_t k = 0; k < masks.size(); ++k) {
      const cv::Mat& mask = masks[k];
      const cv::Mat dist = nu::distance_transform(mask);
      for (const float h : {0.5f, 1.0f, 2.0f}) {
        SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols) + " mask " + std::to_string(k) + " h " +
                     std::to_string(h));
        const auto d = gpu.upload(dist);
        const auto mk = gpu.alloc_like(s.rows, s.cols, CV_32S);
        const cv::Mat cpu_markers = nu::watershed_markers(dist, h);
        const int count = ng::watershed_markers(gpu.launch(), Gpu::in<float>(d), h, Gpu::out<std::int32_t>(mk));
        const cv::Mat gpu_markers = gpu.download(mk, CV_32S);
        double cpu_max = 0;
        cv::minMaxLoc(cpu_markers, nullptr, &cpu_max);
        EXPECT_EQ(count, static_cast<int>(cpu_max));
        EXPECT_TRUE(same_partition(gpu_markers, cpu_markers));

        // The watershed from the CPU's markers, so both see the same input.
        const auto m = gpu.upload(cpu_markers);
        const auto k8 = gpu.upload(mask);
        const auto out = gpu.alloc_like(s.rows, s.cols, CV_32S);
        ng::watershed(gpu.launch(), Gpu::in<float>(d), Gpu::in<std::int32_t>(m), Gpu::in<std::uint8_t>(k8),
                      Gpu::out<std::int32_t>(out));
        EXPECT_TRUE(same_bits(gpu.download(out, CV_32S), nu::watershed(dist, cpu_markers, mask)));
      }
    }
  }
}

TEST(NucleiGpu, WatershedPlateausAndOddInputs) {
  REQUIRE_GPU();
  Gpu gpu;
  // Flat distance (large plateaus: lc does the work), markers in a corner and
  // the centre, a mask that cuts the plateau, and a marker outside the mask.
  const int rows = 97, cols = 203;
  cv::Mat dist(rows, cols, CV_32F, cv::Scalar(3.0f));
  dist(cv::Rect(60, 20, 40, 40)).setTo(5.0f);
  cv::Mat markers(rows, cols, CV_32S, cv::Scalar(0));
  markers.at<int>(0, 0) = 7;
  markers(cv::Rect(70, 30, 3, 3)).setTo(2);
  markers.at<int>(90, 200) = 9;
  markers.at<int>(50, 150) = -4;  // not a marker (> 0 only)
  cv::Mat mask(rows, cols, CV_8U, cv::Scalar(255));
  mask.col(120).setTo(0);
  mask.at<std::uint8_t>(90, 200) = 0;
  const auto d = gpu.upload(dist);
  const auto m = gpu.upload(markers);
  const auto k = gpu.upload(mask);
  const auto out = gpu.alloc_like(rows, cols, CV_32S);
  ng::watershed(gpu.launch(), Gpu::in<float>(d), Gpu::in<std::int32_t>(m), Gpu::in<std::uint8_t>(k),
                Gpu::out<std::int32_t>(out));
  EXPECT_TRUE(same_bits(gpu.download(out, CV_32S), nu::watershed(dist, markers, mask)));
}

TEST(NucleiGpu, PartitionHelperRejectsNonBijections) {
  // Runs without a GPU: the helper the other tests rely on.
  cv::Mat a = (cv::Mat_<int>(1, 4) << 1, 1, 2, 0), b = (cv::Mat_<int>(1, 4) << 5, 5, 6, 0);
  EXPECT_TRUE(same_partition(a, b));
  cv::Mat merged = (cv::Mat_<int>(1, 4) << 5, 5, 5, 0);
  EXPECT_FALSE(same_partition(a, merged));
  EXPECT_FALSE(same_partition(merged, a));
  cv::Mat bg = (cv::Mat_<int>(1, 4) << 5, 5, 6, 6);
  EXPECT_FALSE(same_partition(a, bg));
}

}  // namespace

// image.gaussian's GPU variant (plugins/image/gaussian_gpu.cpp, gaussian_gpu.cu)
// against its CPU twin (OpenCV's GaussianBlur).
//
// Without a GPU, GaussianKernel.* still checks the half of the claim that
// does not need one: the integer kernels and the fixed-point arithmetic the
// CUDA kernels implement, recomputed here in plain C++, give OpenCV's
// results bit for bit. With a GPU, GaussianGpu.* compares the variant itself
// with the CPU variant: identical for u8 and u16, within 1e-5 relative for f32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "gaussian_kernel.hpp"
#include "gpu_support.hpp"

using namespace flowd;
using gputest::item;
using gputest::random_array;

namespace {

const double sigmas[] = {0.1, 0.5, 0.8, 1.5, 2.7, 5, 12.5, 33.3, 100};

// Images of every awkward size: one pixel, one row, one column, smaller than
// the kernel's radius, and ordinary ones.
const std::vector<std::vector<std::int64_t>> sizes = {{1, 1}, {1, 9}, {9, 1}, {2, 2},   {3, 5},
                                                      {5, 3}, {4, 17}, {33, 65}, {64, 48}, {131, 70}};

std::vector<std::int64_t> with_channels(std::vector<std::int64_t> rc, std::int64_t channels) {
  if (channels > 1) rc.push_back(channels);
  return rc;
}

// The same image as a strided view: a window of a larger array.
Array strided_copy(const Array& a, std::uint32_t seed) {
  std::vector<std::int64_t> big(a.shape().begin(), a.shape().end());
  big[0] += 3, big[1] += 5;
  Array b = random_array(a.dtype(), big, seed);
  Array view = b.slice(0, 2, 2 + a.shape(0)).slice(1, 3, 3 + a.shape(1));
  // Fill the window with a's pixels.
  const Array src = a.contiguous();
  const std::size_t isz = a.itemsize();
  const std::int64_t ch = a.ndim() == 3 ? a.shape(2) : 1;
  for (std::int64_t y = 0; y < a.shape(0); ++y)
    std::memcpy(static_cast<std::byte*>(view.raw()) + static_cast<std::size_t>(y * view.stride(0)) * isz,
                static_cast<const std::byte*>(src.raw()) + static_cast<std::size_t>(y * a.shape(1) * ch) * isz,
                static_cast<std::size_t>(a.shape(1) * ch) * isz);
  return view;
}

template <class T> T value_at(const Array& a, std::size_t i) { return a.data<T>()[i]; }

// Every element of `got` equals `want` (integers) or is within
// rel * max(|want|, 1) of it (f32); else the first that is not, and how many.
testing::AssertionResult same_pixels(const Array& want_in, const Array& got_in, double rel = 1e-5) {
  if (want_in.dtype() != got_in.dtype() || !std::equal(want_in.shape().begin(), want_in.shape().end(),
                                                       got_in.shape().begin(), got_in.shape().end()))
    return testing::AssertionFailure() << "expected " << want_in.describe() << ", got " << got_in.describe();
  const Array want = want_in.contiguous(), got = got_in.contiguous();
  const auto n = static_cast<std::size_t>(want.numel());
  std::size_t bad = 0, first = 0;
  double first_want = 0, first_got = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double w = 0, g = 0;
    bool ok = true;
    switch (want.dtype()) {
      case DType::u8: w = value_at<std::uint8_t>(want, i), g = value_at<std::uint8_t>(got, i), ok = w == g; break;
      case DType::u16: w = value_at<std::uint16_t>(want, i), g = value_at<std::uint16_t>(got, i), ok = w == g; break;
      case DType::f32:
        w = value_at<float>(want, i), g = value_at<float>(got, i);
        ok = std::abs(w - g) <= rel * std::max(std::abs(w), 1.0);
        break;
      default: return testing::AssertionFailure() << "unexpected " << want.describe();
    }
    if (!ok && bad++ == 0) first = i, first_want = w, first_got = g;
  }
  if (bad == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << bad << " of " << n << " elements of " << want.describe()
                                     << " differ; the first at element " << first << ": expected " << first_want
                                     << ", got " << first_got;
}

// ---- what gaussian_gpu.cu computes for u8 and u16, in plain C++ -----------

long reflect101(long p, long n) {
  if (p >= 0 && p < n) return p;
  if (n == 1) return 0;
  const long period = 2 * n - 2;
  p %= period;
  if (p < 0) p += period;
  return p < n ? p : period - p;
}

// Row pass then column pass with the integer half kernels, sums kept exact;
// also checks that every sum fits the type the CUDA kernels keep it in
// (u8: row sums u16, column sums u32; u16: row sums u32, column sums u64).
template <class T> Array model_blur(const Array& in, double sigma) {
  constexpr int bits = sizeof(T) == 1 ? 8 : 16;
  constexpr std::uint64_t mid_max = sizeof(T) == 1 ? 0xFFFFu : 0xFFFFFFFFu;
  constexpr std::uint64_t col_max = sizeof(T) == 1 ? 0xFFFFFFFFu : std::numeric_limits<std::uint64_t>::max();
  const long rows = in.shape(0), cols = in.shape(1), ch = in.ndim() == 3 ? in.shape(2) : 1;
  const int k = image::gaussian_kernel_size(sigma);
  const std::vector<double> half = image::gaussian_half_kernel(k, sigma, bits);
  const std::vector<double> unit = {static_cast<double>(1u << bits)};
  const std::vector<double>& hx = cols == 1 ? unit : half;
  const std::vector<double>& hy = rows == 1 ? unit : half;
  const long rx = static_cast<long>(hx.size()) - 1, ry = static_cast<long>(hy.size()) - 1;

  const T* src = in.data<T>();
  const long s0 = in.stride(0), s1 = in.stride(1), s2 = in.ndim() == 3 ? in.stride(2) : 1;
  std::vector<std::uint64_t> mid(static_cast<std::size_t>(rows * cols * ch));
  for (long y = 0; y < rows; ++y)
    for (long x = 0; x < cols; ++x)
      for (long c = 0; c < ch; ++c) {
        std::uint64_t s = 0;
        for (long j = -rx; j <= rx; ++j)
          s += static_cast<std::uint64_t>(hx[static_cast<std::size_t>(std::abs(j))]) *
               src[y * s0 + reflect101(x + j, cols) * s1 + c * s2];
        EXPECT_LE(s, mid_max);
        mid[static_cast<std::size_t>((y * cols + x) * ch + c)] = s;
      }
  Array out = Array::uninitialized(in.dtype(), in.shape());
  T* dst = out.data<T>();
  const long width = cols * ch;
  for (long y = 0; y < rows; ++y)
    for (long e = 0; e < width; ++e) {
      std::uint64_t s = 0;
      for (long j = -ry; j <= ry; ++j)
        s += static_cast<std::uint64_t>(hy[static_cast<std::size_t>(std::abs(j))]) *
             mid[static_cast<std::size_t>(reflect101(y + j, rows) * width + e)];
      EXPECT_LE(s, col_max);
      const std::uint64_t v = (s + (std::uint64_t{1} << (2 * bits - 1))) >> (2 * bits);
      dst[y * width + e] = static_cast<T>(std::min<std::uint64_t>(v, std::numeric_limits<T>::max()));
    }
  return out;
}

// A GpuContext calling the variant directly on a device array of our making
// (the harness uploads host arrays, which makes them contiguous).
class DirectGpuContext final : public GpuContext {
public:
  DirectGpuContext(const OperatorSpec& spec, memory::Device& dev, Item input)
      : spec_(spec), dev_(dev), input_(std::move(input)) {}
  const std::string& stage() const noexcept override { return stage_; }
  const OperatorSpec& spec() const noexcept override { return spec_; }
  flowd::Device device() const noexcept override { return flowd::Device::gpu; }
  bool cancelled() const noexcept override { return false; }
  void log(LogLevel, std::string_view) override {}
  void simulate_compute(double) override {}
  const Item* find_input(std::size_t port) const noexcept override { return port == 0 ? &input_ : nullptr; }
  void emit(std::size_t, Item item) override { out.push_back(std::move(item)); }
  int gpu() const noexcept override { return dev_.ordinal(); }
  void* stream() const noexcept override { return dev_.compute_stream(); }
  Array allocate(DType dtype, std::span<const std::int64_t> shape) override { return dev_.allocate(dtype, shape); }
  std::vector<Item> out;

private:
  std::string stage_ = "blur";
  const OperatorSpec& spec_;
  memory::Device& dev_;
  Item input_;
};

}  // namespace

// ---- without a GPU ----------------------------------------------------------

TEST(GaussianKernel, HalfKernelsAreOpenCvsAndSumToOne) {
  for (const double sigma : sigmas) {
    SCOPED_TRACE("sigma " + std::to_string(sigma));
    const int k = image::gaussian_kernel_size(sigma);
    EXPECT_EQ(k, 2 * static_cast<int>(std::ceil(3 * sigma)) + 1);
    const cv::Mat f = cv::getGaussianKernel(k, sigma, CV_32F);
    const auto hf = image::gaussian_half_kernel(k, sigma, 0);
    ASSERT_EQ(hf.size(), static_cast<std::size_t>(k / 2 + 1));
    for (int j = 0; j <= k / 2; ++j) {
      EXPECT_EQ(hf[static_cast<std::size_t>(j)], f.at<float>(k / 2 + j));
      EXPECT_EQ(hf[static_cast<std::size_t>(j)], f.at<float>(k / 2 - j));
    }
    for (const int bits : {8, 16}) {
      const auto h = image::gaussian_half_kernel(k, sigma, bits);
      double total = h[0];
      for (std::size_t j = 1; j < h.size(); ++j) total += 2 * h[j];
      EXPECT_EQ(total, std::ldexp(1.0, bits)) << bits << " fraction bits";
      for (const double w : h) {
        EXPECT_GE(w, 0);
        EXPECT_EQ(w, std::floor(w));
      }
      // The centre weight is the largest, weights never grow outwards by more
      // than the error diffusion's one unit.
      for (std::size_t j = 1; j < h.size(); ++j) EXPECT_LE(h[j], h[j - 1] + 1) << j;
    }
  }
}

TEST(GaussianKernel, FixedPointModelMatchesOpenCvBitExactly) {
  // The CPU variant is cv::GaussianBlur; the model is what the CUDA kernels
  // compute. Equal on every pixel => the GPU variant's integer kernels and
  // arithmetic are OpenCV's (the CUDA code itself is checked on a GPU below).
  std::uint32_t seed = 100;
  int compared = 0;
  for (const double sigma : sigmas) {
    auto h = gputest::gaussian(sigma);
    for (const auto& rc : sizes) {
      if (sigma > 20 && rc[0] * rc[1] > 2000) continue;  // keep the CPU time small
      for (const DType t : {DType::u8, DType::u16})
        for (const std::int64_t ch : {1, 3}) {
          Array in = random_array(t, with_channels(rc, ch), seed++);
          if (rc[0] == 33) in = strided_copy(in, seed++);  // one strided input per shape set
          SCOPED_TRACE("sigma " + std::to_string(sigma) + " " + in.describe() + (in.is_contiguous() ? "" : " strided"));
          const Array cpu = gputest::only_array(h.map({item("k", in)}));
          const Array model = t == DType::u8 ? model_blur<std::uint8_t>(in, sigma) : model_blur<std::uint16_t>(in, sigma);
          EXPECT_TRUE(same_pixels(cpu, model));
          ++compared;
        }
    }
  }
  EXPECT_GT(compared, 300);
}

TEST(GaussianGpu, VariantExistsIffBuiltWithCuda) {
  const auto handle = gputest::registry().open("image.gaussian");
  const auto& v = handle.spec().variants;
  const bool listed = std::find(v.begin(), v.end(), flowd::Device::gpu) != v.end();
  EXPECT_EQ(listed, FLOWD_HAVE_CUDA != 0);
  EXPECT_EQ(handle.factory().gpu_variant != nullptr, FLOWD_HAVE_CUDA != 0);
}

// ---- on a GPU ---------------------------------------------------------------

TEST(GaussianGpu, MatchesCpuTwinOnRandomImages) {
  FLOWD_REQUIRE_GPU(g);
  auto dev = gputest::cuda_device(g);
  std::uint32_t seed = 1;
  int compared = 0;
  for (const double sigma : sigmas) {
    auto h = gputest::gaussian(sigma);
    for (const auto& rc : sizes)
      for (const DType t : {DType::u8, DType::u16, DType::f32})
        for (const std::int64_t ch : {1, 3})
          for (const bool strided : {false, true}) {
            Array in = random_array(t, with_channels(rc, ch), seed++);
            if (strided) in = strided_copy(in, seed++);
            SCOPED_TRACE("sigma " + std::to_string(sigma) + " " + in.describe() + (strided ? " strided" : ""));
            const Array cpu = gputest::only_array(h.map({item("k", in)}));
            const Array gpu = gputest::only_array(h.map_on(*dev, {item("k", in)}));
            EXPECT_TRUE(gpu.placement().host_accessible());
            EXPECT_TRUE(same_pixels(cpu, gpu));
            ++compared;
          }
  }
  EXPECT_EQ(compared, 9 * 10 * 3 * 2 * 2);
}

TEST(GaussianGpu, LargeImagesMatchCpuTwin) {
  // Many blocks in both passes, row segments and column tiles that end
  // inside the image.
  FLOWD_REQUIRE_GPU(g);
  auto dev = gputest::cuda_device(g);
  std::uint32_t seed = 500;
  for (const double sigma : {1.5, 20.0})
    for (const DType t : {DType::u8, DType::u16, DType::f32}) {
      auto h = gputest::gaussian(sigma);
      const Array in = random_array(t, {1031, 1537, 3}, seed++);
      SCOPED_TRACE("sigma " + std::to_string(sigma) + " " + in.describe());
      EXPECT_TRUE(same_pixels(gputest::only_array(h.map({item("k", in)})),
                              gputest::only_array(h.map_on(*dev, {item("k", in)}))));
    }
}

TEST(GaussianGpu, TallImagesLoopOverTheGrid) {
  // More rows than a grid's 65535 blocks in y: the row pass loops over rows,
  // the column pass over its 64-row tiles (4.2 M rows > 65535 x 64).
  FLOWD_REQUIRE_GPU(g);
  auto dev = gputest::cuda_device(g);
  auto h = gputest::gaussian(1.5);
  std::uint32_t seed = 700;
  for (const DType t : {DType::u8, DType::f32}) {
    const Array in = random_array(t, {4200001, 2}, seed++);
    SCOPED_TRACE(in.describe());
    EXPECT_TRUE(same_pixels(gputest::only_array(h.map({item("k", in)})),
                            gputest::only_array(h.map_on(*dev, {item("k", in)}))));
  }
}

TEST(GaussianGpu, StridedDeviceInputMatchesCpuTwin) {
  // A device array that is a window of a larger one: the variant reads its
  // strides instead of assuming a contiguous image.
  FLOWD_REQUIRE_GPU(g);
  auto dev = gputest::cuda_device(g);
  const auto handle = gputest::registry().open("image.gaussian");
  std::uint32_t seed = 900;
  for (const DType t : {DType::u8, DType::u16, DType::f32})
    for (const std::int64_t ch : {1, 3}) {
      auto h = gputest::gaussian(2.5);
      const Array big = random_array(t, with_channels({60, 90}, ch), seed++);
      const Array host_view = big.slice(0, 7, 47).slice(1, 11, 80);
      const Array dev_view = dev->upload(big).slice(0, 7, 47).slice(1, 11, 80);
      ASSERT_FALSE(dev_view.is_contiguous());
      SCOPED_TRACE(host_view.describe());
      DirectGpuContext ctx(handle.spec(), *dev, item("k", dev_view));
      handle.factory().gpu_variant(h.op())->gpu(ctx);
      dev->synchronize();
      ASSERT_EQ(ctx.out.size(), 1u);
      const Array& out = ctx.out.front().array();
      EXPECT_EQ(out.placement().residency, Residency::device);
      EXPECT_TRUE(same_pixels(gputest::only_array(h.map({item("k", host_view)})), dev->download(out)));
    }
}

TEST(GaussianGpu, RefusesWhatTheCpuVariantRefuses) {
  FLOWD_REQUIRE_GPU(g);
  auto dev = gputest::cuda_device(g);
  const auto handle = gputest::registry().open("image.gaussian");
  auto h = gputest::gaussian(1.5);
  const GpuVariant& gv = *handle.factory().gpu_variant(h.op());
  auto run = [&](Array a) {
    DirectGpuContext ctx(handle.spec(), *dev, item("k", std::move(a)));
    gv.gpu(ctx);
  };
  // A host array (the engine uploads inputs first; a variant never reads host memory).
  EXPECT_THROW(run(random_array(DType::u8, {8, 8}, 1)), Error);
  // Empty images and more than 4 channels, as cv::GaussianBlur and as_mat refuse them.
  EXPECT_THROW(run(dev->upload(random_array(DType::u8, {0, 8}, 2))), Error);
  EXPECT_THROW(h.map({item("k", random_array(DType::u8, {0, 8}, 2))}), std::exception);
  EXPECT_THROW(run(dev->upload(random_array(DType::u8, {4, 4, 5}, 3))), Error);
  EXPECT_THROW(h.map({item("k", random_array(DType::u8, {4, 4, 5}, 3))}), std::exception);
}

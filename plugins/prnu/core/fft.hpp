#pragma once
// The 2-D real DFT the PRNU filters need, on FFTW (single precision).
//
// FFTW's planner is process-global and not thread-safe, while executing a
// plan is. So: plans are made (and destroyed) under one process-wide mutex,
// the only global state of this library, and are cached per size in an
// FftPlans object that the caller owns and may share between threads; every
// transform runs through the new-array execute functions on FftArray buffers.
// FftArray memory comes from fftwf_malloc, so every buffer has the alignment
// the plans were made for (the condition of new-array execution).
// FFTW_ESTIMATE keeps planning cheap and the results deterministic (the same
// plan, hence the same bits, in every process; FFTW_MEASURE was tried and
// saved under 10% at 3648 x 2736 for seconds of planning and plans, hence
// last bits, that may differ between processes).
//
// The 2-D transform is not FFTW's 2-D plan: that one walks the columns of a
// row-major half spectrum with a stride of a whole row, which at 3648 x 2736
// costs three times the row pass. Here the rows are transformed one at a time
// (1-D plans) and the columns in blocks of BlockSpectrum::kBlock: the half
// spectrum is kept as column blocks, each `height` rows of kBlock adjacent
// columns (350 KiB at the Dresden size, cache-resident), on which one
// plan_many runs kBlock interleaved column transforms in place. Filters that
// work on the spectrum elementwise (the DFT Wiener filter, the
// cross-correlation) use that layout directly and see the rows through
// callbacks, so that neither a transposed copy nor a real-valued image of
// the transform exists.
#include <complex>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>

namespace flowd::prnu {

namespace detail {
void* fft_alloc(std::size_t bytes);
void fft_free(void* p) noexcept;
struct FftFree {
  void operator()(void* p) const noexcept { fft_free(p); }
};
}  // namespace detail

// A zero-initialised, SIMD-aligned array of float or std::complex<float>.
template <class T>
class FftArray {
  using Owner = std::unique_ptr<T, detail::FftFree>;
  Owner data_;
  std::size_t size_ = 0;

  static T* allocate(std::size_t n) {
    T* p = static_cast<T*>(detail::fft_alloc(n == 0 ? sizeof(T) : n * sizeof(T)));
    for (std::size_t i = 0; i < n; ++i)
      p[i] = T{};
    return p;
  }

public:
  struct Uninitialised {};
  FftArray() = default;
  explicit FftArray(std::size_t n) : data_(allocate(n)), size_(n) {}
  // Contents left as they come (for buffers that are written before read).
  FftArray(std::size_t n, Uninitialised)
      : data_(static_cast<T*>(detail::fft_alloc(n == 0 ? sizeof(T) : n * sizeof(T)))), size_(n) {}
  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) noexcept { return data_.get()[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_.get()[i]; }
  std::span<T> span() noexcept { return {data_.get(), size_}; }
  std::span<const T> span() const noexcept { return {data_.get(), size_}; }
};

using RealArray = FftArray<float>;
using ComplexArray = FftArray<std::complex<float>>;

// Columns of the half spectrum of a real array `width` wide.
inline int half_width(int width) noexcept { return width / 2 + 1; }

// The half spectrum of a width x height real array in column blocks: element
// (y, x), 0 <= x < half_width(width), is block(x / kBlock)[y * kBlock + x %
// kBlock]. The columns of the last block past half_width are padding (zero
// after a forward transform).
class BlockSpectrum {
public:
  static constexpr int kBlock = 16;
  BlockSpectrum(int width, int height);
  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }
  int columns() const noexcept { return half_width(width_); }
  int blocks() const noexcept { return (columns() + kBlock - 1) / kBlock; }
  std::size_t block_size() const noexcept { return static_cast<std::size_t>(height_) * kBlock; }
  std::complex<float>* block(int b) noexcept { return data_.data() + static_cast<std::size_t>(b) * block_size(); }
  const std::complex<float>* block(int b) const noexcept {
    return data_.data() + static_cast<std::size_t>(b) * block_size();
  }
  std::complex<float>& at(int y, int x) noexcept {
    return block(x / kBlock)[static_cast<std::size_t>(y) * kBlock + static_cast<std::size_t>(x % kBlock)];
  }
  std::complex<float> at(int y, int x) const noexcept {
    return block(x / kBlock)[static_cast<std::size_t>(y) * kBlock + static_cast<std::size_t>(x % kBlock)];
  }

private:
  int width_;
  int height_;
  FftArray<std::complex<float>> data_;
};

// A per-size cache of r2c/c2r plans. Thread-safe; not copyable (it owns plans).
class FftPlans {
public:
  FftPlans();
  ~FftPlans();
  FftPlans(const FftPlans&) = delete;
  FftPlans& operator=(const FftPlans&) = delete;

  // spectrum (height x half_width(width), row-major) = DFT2(real) with
  // FFTW's sign (e^{-2 pi i ...}), unnormalised. `real` is left as it was.
  void forward(int width, int height, const RealArray& real, ComplexArray& spectrum);
  // real = unnormalised inverse DFT2 of the half spectrum, i.e. width*height
  // times the inverse. Overwrites `spectrum` (FFTW's c2r destroys its input).
  void inverse(int width, int height, ComplexArray& spectrum, RealArray& real);

  // The blocked forms. fill(y, row) writes row y (width samples, SIMD-aligned
  // scratch) of the real input, rows in order; after(b, block), if given,
  // sees each block once its column transforms are done.
  using RowFill = std::function<void(int y, float* row)>;
  using RowTake = std::function<void(int y, const float* row)>;
  using BlockVisit = std::function<void(int b, std::complex<float>* block)>;
  void forward(const RowFill& fill, BlockSpectrum& spectrum, const BlockVisit& after = {});
  // before(b, block), if given, may change each block before its inverse
  // column transforms; take(y, row) then receives the rows of the
  // unnormalised inverse in order. Overwrites `spectrum`.
  void inverse(BlockSpectrum& spectrum, const RowTake& take, const BlockVisit& before = {});

  // How many sizes have plans (for tests of the cache).
  std::size_t cached_sizes() const;

private:
  struct Plans;
  const Plans& plans_for(int width, int height);

  mutable std::mutex mutex_;
  std::map<std::pair<int, int>, std::unique_ptr<Plans>> cache_;
};

}  // namespace flowd::prnu

#include "fft.hpp"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>

#include <fftw3.h>

namespace flowd::prnu {

namespace detail {

void* fft_alloc(std::size_t bytes) {
  void* p = fftwf_malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void fft_free(void* p) noexcept { fftwf_free(p); }

}  // namespace detail

namespace {

// FFTW's planner (and fftwf_destroy_plan) touch process-global tables.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

fftwf_complex* as_fftw(std::complex<float>* p) noexcept { return reinterpret_cast<fftwf_complex*>(p); }

void check_sizes(int width, int height, std::size_t real, std::size_t spectrum) {
  if (width < 1 || height < 1)
    throw std::invalid_argument("prnu fft: size " + std::to_string(width) + "x" + std::to_string(height));
  const auto rows = static_cast<std::size_t>(height);
  if (real != rows * static_cast<std::size_t>(width) || spectrum != rows * static_cast<std::size_t>(half_width(width)))
    throw std::invalid_argument("prnu fft: buffers do not match the size " + std::to_string(width) + "x" +
                                std::to_string(height));
}

// One row's piece of a block: kBlock values, inline (a library call per
// 128 bytes costs more than the copy), or fewer at the last block.
void copy_piece(const std::complex<float>* src, std::complex<float>* dst, int n) noexcept {
  const auto* s = reinterpret_cast<const float*>(src);
  auto* d = reinterpret_cast<float*>(dst);
  if (n == BlockSpectrum::kBlock) {
    for (int i = 0; i < 2 * BlockSpectrum::kBlock; ++i)
      d[i] = s[i];
  } else {
    for (int i = 0; i < 2 * n; ++i)
      d[i] = s[i];
  }
}

}  // namespace

struct FftPlans::Plans {
  int width;
  int height;
  fftwf_plan row_r2c = nullptr;  // one row: width reals -> half_width complex
  fftwf_plan row_c2r = nullptr;
  fftwf_plan col_fwd = nullptr;  // kBlock interleaved columns of `height`, in place
  fftwf_plan col_inv = nullptr;

  Plans(int w, int h) : width(w), height(h) {
    // Planning with FFTW_ESTIMATE does not touch the arrays' contents; they
    // only fix the alignment every later buffer (fftwf_malloc, or a block
    // of a BlockSpectrum at a multiple of 128 bytes) shares.
    RealArray row(static_cast<std::size_t>(w));
    ComplexArray crow(static_cast<std::size_t>(half_width(w)));
    ComplexArray block(static_cast<std::size_t>(h) * BlockSpectrum::kBlock);
    const int n[1] = {h};
    constexpr int b = BlockSpectrum::kBlock;
    std::lock_guard lock(planner_mutex());
    row_r2c = fftwf_plan_dft_r2c_1d(w, row.data(), as_fftw(crow.data()), FFTW_ESTIMATE);
    row_c2r = fftwf_plan_dft_c2r_1d(w, as_fftw(crow.data()), row.data(), FFTW_ESTIMATE);
    col_fwd = fftwf_plan_many_dft(1, n, b, as_fftw(block.data()), nullptr, b, 1, as_fftw(block.data()), nullptr, b, 1,
                                  FFTW_FORWARD, FFTW_ESTIMATE);
    col_inv = fftwf_plan_many_dft(1, n, b, as_fftw(block.data()), nullptr, b, 1, as_fftw(block.data()), nullptr, b, 1,
                                  FFTW_BACKWARD, FFTW_ESTIMATE);
    if (row_r2c == nullptr || row_c2r == nullptr || col_fwd == nullptr || col_inv == nullptr) {
      destroy();
      throw std::runtime_error("prnu fft: FFTW could not plan " + std::to_string(w) + "x" + std::to_string(h));
    }
  }
  ~Plans() {
    std::lock_guard lock(planner_mutex());
    destroy();
  }
  Plans(const Plans&) = delete;
  Plans& operator=(const Plans&) = delete;

private:
  void destroy() noexcept {
    for (fftwf_plan* p : {&row_r2c, &row_c2r, &col_fwd, &col_inv}) {
      if (*p != nullptr) fftwf_destroy_plan(*p);
      *p = nullptr;
    }
  }
};

BlockSpectrum::BlockSpectrum(int width, int height) : width_(width), height_(height) {
  if (width < 1 || height < 1)
    throw std::invalid_argument("prnu fft: size " + std::to_string(width) + "x" + std::to_string(height));
  // Not zeroed as a whole (a forward transform writes every column); only
  // the padding columns of the last block, which nothing else writes.
  data_ = ComplexArray(static_cast<std::size_t>(blocks()) * block_size(), ComplexArray::Uninitialised{});
  const int used = columns() - (blocks() - 1) * kBlock;
  std::complex<float>* last = block(blocks() - 1);
  for (std::size_t y = 0; y < static_cast<std::size_t>(height); ++y)
    for (int x = used; x < kBlock; ++x)
      last[y * kBlock + static_cast<std::size_t>(x)] = {};
}

FftPlans::FftPlans() = default;
FftPlans::~FftPlans() = default;

const FftPlans::Plans& FftPlans::plans_for(int width, int height) {
  std::lock_guard lock(mutex_);  // always taken before the planner mutex
  const auto key = std::make_pair(width, height);
  if (auto it = cache_.find(key); it != cache_.end()) return *it->second;
  auto plans = std::make_unique<Plans>(width, height);
  return *cache_.emplace(key, std::move(plans)).first->second;
}

std::size_t FftPlans::cached_sizes() const {
  std::lock_guard lock(mutex_);
  return cache_.size();
}

void FftPlans::forward(const RowFill& fill, BlockSpectrum& spectrum, const BlockVisit& after) {
  const int w = spectrum.width();
  const int h = spectrum.height();
  const Plans& p = plans_for(w, h);
  constexpr int kb = BlockSpectrum::kBlock;
  const int hw = half_width(w);
  RealArray row(static_cast<std::size_t>(w));
  ComplexArray crow(static_cast<std::size_t>(hw));
  for (int y = 0; y < h; ++y) {
    fill(y, row.data());
    fftwf_execute_dft_r2c(p.row_r2c, row.data(), as_fftw(crow.data()));
    // Each row lands as kBlock-column pieces (128 bytes) in every block.
    const auto off = static_cast<std::size_t>(y) * kb;
    for (int x0 = 0, b = 0; x0 < hw; x0 += kb, ++b)
      copy_piece(crow.data() + x0, spectrum.block(b) + off, std::min(kb, hw - x0));
  }
  for (int b = 0; b < spectrum.blocks(); ++b) {
    fftwf_execute_dft(p.col_fwd, as_fftw(spectrum.block(b)), as_fftw(spectrum.block(b)));
    if (after) after(b, spectrum.block(b));
  }
}

void FftPlans::inverse(BlockSpectrum& spectrum, const RowTake& take, const BlockVisit& before) {
  const int w = spectrum.width();
  const int h = spectrum.height();
  const Plans& p = plans_for(w, h);
  constexpr int kb = BlockSpectrum::kBlock;
  const int hw = half_width(w);
  for (int b = 0; b < spectrum.blocks(); ++b) {
    if (before) before(b, spectrum.block(b));
    fftwf_execute_dft(p.col_inv, as_fftw(spectrum.block(b)), as_fftw(spectrum.block(b)));
  }
  RealArray row(static_cast<std::size_t>(w));
  ComplexArray crow(static_cast<std::size_t>(hw));
  for (int y = 0; y < h; ++y) {
    const auto off = static_cast<std::size_t>(y) * kb;
    for (int x0 = 0, b = 0; x0 < hw; x0 += kb, ++b)
      copy_piece(spectrum.block(b) + off, crow.data() + x0, std::min(kb, hw - x0));
    fftwf_execute_dft_c2r(p.row_c2r, as_fftw(crow.data()), row.data());
    take(y, row.data());
  }
}

void FftPlans::forward(int width, int height, const RealArray& real, ComplexArray& spectrum) {
  check_sizes(width, height, real.size(), spectrum.size());
  BlockSpectrum blocks(width, height);
  const auto uw = static_cast<std::size_t>(width);
  forward(
      [&](int y, float* row) {
        const float* src = real.data() + static_cast<std::size_t>(y) * uw;
        std::copy(src, src + uw, row);
      },
      blocks);
  const int hw = half_width(width);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < hw; ++x)
      spectrum[static_cast<std::size_t>(y) * static_cast<std::size_t>(hw) + static_cast<std::size_t>(x)] =
          blocks.at(y, x);
}

void FftPlans::inverse(int width, int height, ComplexArray& spectrum, RealArray& real) {
  check_sizes(width, height, real.size(), spectrum.size());
  BlockSpectrum blocks(width, height);
  const int hw = half_width(width);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < hw; ++x)
      blocks.at(y, x) =
          spectrum[static_cast<std::size_t>(y) * static_cast<std::size_t>(hw) + static_cast<std::size_t>(x)];
  const auto uw = static_cast<std::size_t>(width);
  inverse(blocks,
          [&](int y, const float* row) { std::copy(row, row + uw, real.data() + static_cast<std::size_t>(y) * uw); });
}

}  // namespace flowd::prnu

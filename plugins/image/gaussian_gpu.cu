// image.gaussian on a CUDA GPU: a separable blur in two passes through a
// scratch buffer (see gaussian_gpu.hpp for what is computed and why it
// matches OpenCV).
//
// Row pass: a block stages one row segment plus its halo in shared memory
// with coalesced loads (the mirrored border is resolved while loading, so the
// inner loop has no branches), then each thread sums the taps of its outputs
// from shared memory, pairing the mirror-image taps of the symmetric kernel.
// Channels are interleaved, so a row is a 1-d array whose taps sit C elements
// apart; C is a template parameter, which turns the pixel/channel split into
// multiplications.
//
// Column pass: a block computes a 64-row x 32-column tile. One warp spans the
// 32 columns, so every global load and shared-memory access of a warp is one
// contiguous row segment (coalesced, free of bank conflicts). The tile's
// input rows are staged in shared memory and reused by every tap; kernels
// wider than 64 taps go through shared memory in chunks of 64 taps with the
// partial sums kept in registers, so shared memory stays at 16 KiB for any
// sigma.
//
// The weights are launch parameters (constant bank, read uniformly by a warp),
// not __constant__ symbols: tasks with different sigmas may run at once on
// different streams, and a launch parameter belongs to its launch.
#include <cuda_runtime.h>

#include "cuda/device_scope.cuh"

#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "gaussian_gpu.hpp"

namespace flowd::image::gpu {

namespace {

// ---- per pixel type: what the passes store and sum in ------------------

template <class T> struct Arith;

// u8: OpenCV's ufixedpoint16 row sums (<= 255 * 256 = 65280) and ufixedpoint32
// column sums (<= 65280 * 256), rounded half up from 16 fraction bits.
template <> struct Arith<std::uint8_t> {
  using Mid = std::uint16_t;
  using Weight = std::uint32_t;
  using RowSum = std::uint32_t;
  using ColSum = std::uint32_t;
  __device__ static std::uint8_t finish(ColSum s) {
    const ColSum v = (s + (1u << 15)) >> 16;
    return static_cast<std::uint8_t>(v > 255u ? 255u : v);
  }
};

// u16: ufixedpoint32 row sums (<= 65535 * 65536 < 2^32; a pair of mirrored
// taps times its weight stays below 2^32 because that weight is <= 32768) and
// ufixedpoint64 column sums, rounded half up from 32 fraction bits.
template <> struct Arith<std::uint16_t> {
  using Mid = std::uint32_t;
  using Weight = std::uint32_t;
  using RowSum = std::uint32_t;
  using ColSum = std::uint64_t;
  __device__ static std::uint16_t finish(ColSum s) {
    const ColSum v = (s + (1ull << 31)) >> 32;
    return static_cast<std::uint16_t>(v > 65535ull ? 65535ull : v);
  }
};

template <> struct Arith<float> {
  using Mid = float;
  using Weight = float;
  using RowSum = float;
  using ColSum = float;
  __device__ static float finish(float s) { return s; }
};

template <class W> struct Taps {
  W w[max_radius + 1];
  int radius;
};

// OpenCV's borderInterpolate for BORDER_REFLECT_101 (…2 1 | 0 1 2 … n-1 | n-2 …),
// which is periodic with period 2n - 2: one modulo instead of its loop, so
// images smaller than the kernel reflect as often as OpenCV's loop does. The
// period is computed in 64 bits (2n - 2 overflows int for n > 2^30); only
// taps outside the image get that far.
__device__ __forceinline__ int reflect101(int p, int n) {
  if (static_cast<unsigned>(p) < static_cast<unsigned>(n)) return p;
  if (n == 1) return 0;
  const long long period = 2LL * n - 2;
  long long q = p % period;
  if (q < 0) q += period;
  return static_cast<int>(q < n ? q : period - q);
}

// ---- row pass ------------------------------------------------------------

constexpr int kRowThreads = 256;
constexpr int kRowSpan = 2 * kRowThreads;  // row elements (pixels x channels) one block computes

template <class T, int C>
__global__ void __launch_bounds__(kRowThreads)
    blur_rows(const T* __restrict__ src, long long stride_row, long long stride_col, long long stride_ch,
              typename Arith<T>::Mid* __restrict__ mid, int rows, int cols, Taps<typename Arith<T>::Weight> k) {
  using A = Arith<T>;
  using Sum = typename A::RowSum;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* line = reinterpret_cast<T*>(shared_bytes);

  const int width = cols * C;
  const int halo = k.radius * C;
  const int e0 = static_cast<int>(blockIdx.x) * kRowSpan;
  const int span = min(kRowSpan, width - e0);
  const int staged = span + 2 * halo;

  for (int y = static_cast<int>(blockIdx.y); y < rows; y += static_cast<int>(gridDim.y)) {
    const T* in = src + y * stride_row;
    for (int i = static_cast<int>(threadIdx.x); i < staged; i += kRowThreads) {
      const int f = e0 - halo + i;                      // element of the row, maybe outside it
      const int x = f >= 0 ? f / C : -((C - 1 - f) / C);  // floor(f / C)
      const int c = f - x * C;
      line[i] = in[reflect101(x, cols) * stride_col + c * stride_ch];
    }
    __syncthreads();
    for (int o = static_cast<int>(threadIdx.x); o < span; o += kRowThreads) {
      const T* p = line + halo + o;
      Sum s = static_cast<Sum>(k.w[0]) * static_cast<Sum>(p[0]);
#pragma unroll 4
      for (int j = 1; j <= k.radius; ++j)
        s += static_cast<Sum>(k.w[j]) * (static_cast<Sum>(p[-j * C]) + static_cast<Sum>(p[j * C]));
      mid[static_cast<long long>(y) * width + e0 + o] = static_cast<typename A::Mid>(s);
    }
    __syncthreads();  // the next row overwrites `line`
  }
}

// ---- column pass ---------------------------------------------------------

constexpr int kColWidth = 32;      // element columns per block: one warp
constexpr int kColThreadsY = 8;    // warps per block
constexpr int kColPerThread = 8;   // output rows per thread, kColThreadsY apart
constexpr int kColRows = kColThreadsY * kColPerThread;  // output rows per block
constexpr int kColChunk = 64;      // taps per trip through shared memory

template <class T>
__global__ void __launch_bounds__(kColWidth* kColThreadsY)
    blur_cols(const typename Arith<T>::Mid* __restrict__ mid, T* __restrict__ dst, long long dst_row_stride, int rows,
              int width, Taps<typename Arith<T>::Weight> k) {
  using A = Arith<T>;
  using Mid = typename A::Mid;
  using Sum = typename A::ColSum;
  __shared__ Mid tile[kColRows + kColChunk - 1][kColWidth];

  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int e = static_cast<int>(blockIdx.x) * kColWidth + tx;
  const bool inside = e < width;
  const int r = k.radius;

  for (int y0 = static_cast<int>(blockIdx.y) * kColRows; y0 < rows; y0 += static_cast<int>(gridDim.y) * kColRows) {
    Sum acc[kColPerThread];
#pragma unroll
    for (int q = 0; q < kColPerThread; ++q) acc[q] = Sum(0);

    for (int j0 = -r; j0 <= r; j0 += kColChunk) {
      const int taps = min(kColChunk, r - j0 + 1);
      const int staged = kColRows + taps - 1;  // input rows y0 + j0 .. y0 + j0 + staged - 1
      for (int i = ty; i < staged; i += kColThreadsY)
        tile[i][tx] = inside ? mid[static_cast<long long>(reflect101(y0 + j0 + i, rows)) * width + e] : Mid(0);
      __syncthreads();
      for (int t = 0; t < taps; ++t) {
        const Sum w = static_cast<Sum>(k.w[abs(j0 + t)]);
#pragma unroll
        for (int q = 0; q < kColPerThread; ++q) acc[q] += w * static_cast<Sum>(tile[ty + q * kColThreadsY + t][tx]);
      }
      __syncthreads();  // the next chunk overwrites `tile`
    }

    if (inside) {
#pragma unroll
      for (int q = 0; q < kColPerThread; ++q) {
        const int y = y0 + ty + q * kColThreadsY;
        if (y < rows) dst[static_cast<long long>(y) * dst_row_stride + e] = A::finish(acc[q]);
      }
    }
  }
}

// ---- host side -------------------------------------------------------------

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("image.gaussian on the GPU: ") + what + " failed: " + cudaGetErrorString(e));
}

// Launch parameters are limited to 4 KiB.
static_assert(sizeof(Taps<std::uint32_t>) + 64 <= 4096, "the half kernel no longer fits in the launch parameters");
static_assert(sizeof(Taps<float>) + 64 <= 4096, "the half kernel no longer fits in the launch parameters");

// The half kernel as the kernels take it, after checking what the arithmetic
// relies on: u8 and u16 weights are non-negative integers summing to exactly
// 2^8 or 2^16, which is what keeps every sum below its type's maximum.
template <class W> Taps<W> taps_of(const HalfKernel& h, Pixel pixel, const char* axis) {
  const std::string what = std::string("gaussian_blur: the kernel ") + axis;
  if (!h.weight || h.radius < 0 || h.radius > max_radius)
    throw std::invalid_argument(what + " needs a radius in [0, " + std::to_string(max_radius) + "] and weights");
  Taps<W> t{};
  t.radius = h.radius;
  double total = 0;
  for (int j = 0; j <= h.radius; ++j) {
    const double w = h.weight[j];
    if (!std::isfinite(w) || w < 0) throw std::invalid_argument(what + " has a negative or non-finite weight");
    if (pixel != Pixel::f32 && w != std::floor(w))
      throw std::invalid_argument(what + " has a non-integer fixed-point weight");
    t.w[j] = static_cast<W>(w);
    total += j == 0 ? w : 2 * w;
  }
  const double one = pixel == Pixel::u8 ? 256.0 : pixel == Pixel::u16 ? 65536.0 : 0.0;
  if (pixel != Pixel::f32 && total != one)
    throw std::invalid_argument(what + " sums to " + std::to_string(total) + " fixed-point units, not " +
                                std::to_string(one));
  return t;
}

template <class T, int C>
void launch_rows(const BlurJob& job, cudaStream_t stream, const Taps<typename Arith<T>::Weight>& k) {
  const int rows = static_cast<int>(job.rows), cols = static_cast<int>(job.cols);
  const int width = cols * C;
  const dim3 grid(static_cast<unsigned>((width + kRowSpan - 1) / kRowSpan), static_cast<unsigned>(rows < 65535 ? rows : 65535));
  const std::size_t shared = static_cast<std::size_t>(kRowSpan + 2 * k.radius * C) * sizeof(T);
  blur_rows<T, C><<<grid, kRowThreads, shared, stream>>>(
      static_cast<const T*>(job.src), job.src_stride[0], job.src_stride[1], job.src_stride[2],
      static_cast<typename Arith<T>::Mid*>(job.scratch), rows, cols, k);
  check(cudaGetLastError(), "launching the row pass");
}

template <class T> void run(const BlurJob& job, cudaStream_t stream) {
  using W = typename Arith<T>::Weight;
  const Taps<W> kx = taps_of<W>(job.along_cols, job.pixel, "along the columns");
  const Taps<W> ky = taps_of<W>(job.along_rows, job.pixel, "along the rows");
  switch (job.channels) {
    case 1: launch_rows<T, 1>(job, stream, kx); break;
    case 2: launch_rows<T, 2>(job, stream, kx); break;
    case 3: launch_rows<T, 3>(job, stream, kx); break;
    default: launch_rows<T, 4>(job, stream, kx); break;
  }
  const int rows = static_cast<int>(job.rows);
  const int width = static_cast<int>(job.cols * job.channels);
  const int row_tiles = (rows + kColRows - 1) / kColRows;
  const dim3 grid(static_cast<unsigned>((width + kColWidth - 1) / kColWidth),
                  static_cast<unsigned>(row_tiles < 65535 ? row_tiles : 65535));
  blur_cols<T><<<grid, dim3(kColWidth, kColThreadsY), 0, stream>>>(
      static_cast<const typename Arith<T>::Mid*>(job.scratch), static_cast<T*>(job.dst), width, rows, width, ky);
  check(cudaGetLastError(), "launching the column pass");
}

}  // namespace

std::size_t scratch_element_size(Pixel pixel) noexcept {
  switch (pixel) {
    case Pixel::u8: return sizeof(Arith<std::uint8_t>::Mid);
    case Pixel::u16: return sizeof(Arith<std::uint16_t>::Mid);
    case Pixel::f32: return sizeof(Arith<float>::Mid);
  }
  return 0;
}

std::size_t scratch_bytes(Pixel pixel, std::int64_t rows, std::int64_t cols, std::int64_t channels) noexcept {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * static_cast<std::size_t>(channels) *
         scratch_element_size(pixel);
}

void gaussian_blur(const BlurJob& job, void* stream) {
  // Index arithmetic in the kernels is 32-bit where it can be (it is cheaper);
  // these limits keep every such value, halo and tile overhang included, in range.
  constexpr std::int64_t int_room = INT_MAX - 4096;
  if (job.channels < 1 || job.channels > 4)
    throw std::invalid_argument("gaussian_blur: " + std::to_string(job.channels) + " channels (1 to 4 are supported)");
  if (job.rows < 0 || job.cols < 0 || job.rows > int_room || job.cols * job.channels > int_room)
    throw std::invalid_argument("gaussian_blur: " + std::to_string(job.rows) + " x " + std::to_string(job.cols) + " x " +
                                std::to_string(job.channels) + " is outside the supported size");
  if (job.rows == 0 || job.cols == 0) return;
  if (!job.src || !job.dst || !job.scratch) throw std::invalid_argument("gaussian_blur: a null device pointer");
  cuda::DeviceScope on(job.device, "image.gaussian");
  const auto s = static_cast<cudaStream_t>(stream);
  switch (job.pixel) {
    case Pixel::u8: run<std::uint8_t>(job, s); break;
    case Pixel::u16: run<std::uint16_t>(job, s); break;
    case Pixel::f32: run<float>(job, s); break;
  }
}

void synchronize(int device, void* stream) {
  cuda::DeviceScope on(device, "image.gaussian");
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "waiting for the stream");
}

}  // namespace flowd::image::gpu

#pragma once
// The CUDA side of image.gaussian's GPU variant, as plain C++: raw device
// pointers, sizes and strides in, kernels enqueued on a stream. It includes no
// flowd SDK, OpenCV or CUDA header, so gaussian_gpu.cu compiles without them
// and gaussian_gpu.cpp (Gaussian::gpu) without the CUDA toolkit's headers.
//
// What it computes is OpenCV's GaussianBlur with BORDER_REFLECT_101, pass for
// pass (rows, then columns, through a scratch buffer):
//   u8   bit-exact: integer weights in 1/256 units summing to 256 (OpenCV's
//        ufixedpoint16 kernel), row sums kept exactly in 16 bits, column sums
//        in 32 bits, rounded half up from 16 fraction bits;
//   u16  bit-exact: weights in 1/65536 units (ufixedpoint32), row sums in 32
//        bits, column sums in 64 bits, rounded half up from 32 fraction bits;
//   f32  float weights and float arithmetic, as OpenCV's sepFilter2D, but
//        summed in another order (results differ in the last bits).
// The weights come from the caller (gaussian_kernel.hpp builds them as
// OpenCV does), so this file makes no choice about them. An image of one row
// or column gets a radius-0 kernel along that axis from the caller, as in
// OpenCV.
#include <cstddef>
#include <cstdint>

namespace flowd::image::gpu {

enum class Pixel : std::uint8_t { u8, u16, f32 };

// Longest half kernel the kernels take (weights travel as kernel launch
// parameters, which hold 4 KiB). image.gaussian's sigma <= 100 needs 301.
inline constexpr int max_radius = 511;

// One axis of a symmetric kernel: weight[j] multiplies the pixels at offsets
// +j and -j, for j = 0 .. radius. u8 and u16: non-negative integers whose full
// kernel (weight[0] + 2 * the others) is exactly 256 (u8) or 65536 (u16);
// f32: the float kernel's values (doubles hold both exactly).
struct HalfKernel {
  const double* weight = nullptr;
  int radius = 0;
};

struct BlurJob {
  int device = 0;  // CUDA ordinal of every pointer below
  Pixel pixel = Pixel::u8;
  std::int64_t rows = 0, cols = 0, channels = 1;  // channels 1..4, interleaved
  const void* src = nullptr;                     // device memory
  std::int64_t src_stride[3] = {0, 0, 1};        // in elements: row, column, channel
  void* dst = nullptr;                           // device memory, rows x cols x channels, C order
  void* scratch = nullptr;                       // device memory, scratch_bytes(pixel, rows, cols, channels)
  HalfKernel along_cols{};                       // applied first, within each row
  HalfKernel along_rows{};                       // then within each column
};

// The row pass's output: u16 for u8 images, u32 for u16 images, f32 for f32.
std::size_t scratch_element_size(Pixel pixel) noexcept;
std::size_t scratch_bytes(Pixel pixel, std::int64_t rows, std::int64_t cols, std::int64_t channels) noexcept;

// Enqueues the two passes on `stream` (a cudaStream_t of job.device) and
// returns without waiting. src, dst and scratch must stay allocated until the
// stream has run them. Throws std::invalid_argument for a job it cannot run
// and std::runtime_error, with CUDA's message, when a CUDA call fails.
void gaussian_blur(const BlurJob& job, void* stream);

// Waits until everything enqueued on `stream` so far has run.
void synchronize(int device, void* stream);

}  // namespace flowd::image::gpu

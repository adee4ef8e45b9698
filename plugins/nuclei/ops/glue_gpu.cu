#include "ops/glue_gpu.hpp"

#include <cuda_runtime.h>

#include "cuda/device_scope.cuh"

#include <stdexcept>
#include <string>

namespace flowd::nuclei::gpu {

namespace {

constexpr int threads = 256;

void check(cudaError_t e, const char* op) { cuda::check(e, op, "a kernel launch"); }

int blocks_for(long long n) { return static_cast<int>((n + threads - 1) / threads); }

__global__ void mask_stain_kernel(const std::uint8_t* stain, long long sp, const std::uint8_t* tissue, long long tp,
                                  const std::uint8_t* rbc, long long rp, std::uint8_t* out, long long op, int rows,
                                  int cols) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(rows) * cols) return;
  const long long r = i / cols, c = i % cols;
  const bool on = (!tissue || tissue[r * tp + c] != 0) && (!rbc || rbc[r * rp + c] == 0);
  out[r * op + c] = on ? stain[r * sp + c] : 0;
}

__global__ void threshold_kernel(const std::uint8_t* grey, long long gp, int level, std::uint8_t* out, long long op,
                                 int rows, int cols) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(rows) * cols) return;
  const long long r = i / cols, c = i % cols;
  out[r * op + c] = grey[r * gp + c] >= level ? 255 : 0;
}

// mode 0: out = a && !b (the holes fill_holes filled); mode 1: out = a || b.
__global__ void combine_kernel(const std::uint8_t* a, long long ap, const std::uint8_t* b, long long bp,
                               std::uint8_t* out, long long op, int rows, int cols, int mode) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(rows) * cols) return;
  const long long r = i / cols, c = i % cols;
  const bool x = a[r * ap + c] != 0, y = b[r * bp + c] != 0;
  out[r * op + c] = (mode == 0 ? (x && !y) : (x || y)) ? 255 : 0;
}

void same_size(const char* op, int rows, int cols, int out_rows, int out_cols) {
  if (rows != out_rows || cols != out_cols)
    throw std::runtime_error(std::string(op) + " on the GPU: input and output differ in size");
}

}  // namespace

void mask_stain(const Launch& l, ConstImage<std::uint8_t> stain, const std::uint8_t* tissue, std::int64_t tissue_pitch,
                const std::uint8_t* rbc, std::int64_t rbc_pitch, Image<std::uint8_t> out) {
  same_size("nuclei.deconvolve", stain.rows, stain.cols, out.rows, out.cols);
  const long long n = static_cast<long long>(stain.rows) * stain.cols;
  if (n == 0) return;
  const cuda::DeviceScope on(l.device, "nuclei.deconvolve");
  mask_stain_kernel<<<blocks_for(n), threads, 0, static_cast<cudaStream_t>(l.stream)>>>(
      stain.data, stain.pitch, tissue, tissue_pitch, rbc, rbc_pitch, out.data, out.pitch, stain.rows, stain.cols);
  check(cudaGetLastError(), "nuclei.deconvolve");
}

void threshold(const Launch& l, ConstImage<std::uint8_t> grey, int level, Image<std::uint8_t> out) {
  same_size("nuclei.reconstruct", grey.rows, grey.cols, out.rows, out.cols);
  const long long n = static_cast<long long>(grey.rows) * grey.cols;
  if (n == 0) return;
  const cuda::DeviceScope on(l.device, "nuclei.reconstruct");
  threshold_kernel<<<blocks_for(n), threads, 0, static_cast<cudaStream_t>(l.stream)>>>(
      grey.data, grey.pitch, level, out.data, out.pitch, grey.rows, grey.cols);
  check(cudaGetLastError(), "nuclei.reconstruct");
}

void fill_small_holes(const Launch& l, ConstImage<std::uint8_t> mask, int max_hole_area, Image<std::uint8_t> out) {
  same_size("nuclei.fill_holes", mask.rows, mask.cols, out.rows, out.cols);
  const long long n = static_cast<long long>(mask.rows) * mask.cols;
  if (n == 0) return;
  const cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  const auto scratch = [&] {
    Image<std::uint8_t> img;
    img.data = static_cast<std::uint8_t*>(l.alloc(static_cast<std::size_t>(n)));
    img.rows = mask.rows, img.cols = mask.cols, img.pitch = mask.cols;
    return img;
  };
  const auto as_const = [](const Image<std::uint8_t>& i) {
    ConstImage<std::uint8_t> v;
    v.data = i.data, v.rows = i.rows, v.cols = i.cols, v.pitch = i.pitch;
    return v;
  };
  Image<std::uint8_t> filled = scratch(), holes = scratch(), small = scratch();
  fill_holes(l, mask, filled);
  const cuda::DeviceScope on(l.device, "nuclei.fill_holes");
  combine_kernel<<<blocks_for(n), threads, 0, s>>>(filled.data, filled.pitch, mask.data, mask.pitch, holes.data,
                                                   holes.pitch, mask.rows, mask.cols, 0);
  check(cudaGetLastError(), "nuclei.fill_holes");
  area_threshold(l, as_const(holes), 1, max_hole_area <= 0 ? 1 : max_hole_area, small);
  combine_kernel<<<blocks_for(n), threads, 0, s>>>(mask.data, mask.pitch, small.data, small.pitch, out.data, out.pitch,
                                                   mask.rows, mask.cols, 1);
  check(cudaGetLastError(), "nuclei.fill_holes");
}

}  // namespace flowd::nuclei::gpu

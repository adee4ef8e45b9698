#pragma once
// The CUDA twin of the PRNU core's hot paths (../filters.hpp, ../compare.hpp)
// on device buffers: the NFI residual (grey, FastNoise, ZeroMeanTotal, the
// DFT Wiener filter on cuFFT), NCC and the cross-correlation with its PCE.
// Each kernel mirrors its CPU function sample for sample, in the same float
// operations (this target is built with --fmad=false, so no multiply-add is
// fused where the CPU rounds twice) and the same window-sum order; what
// differs is cuFFT against FFTW and the order of the double reductions
// (means, variances, NCC sums). tests/prnu/test_prnu_gpu.cpp states the
// tolerances.
//
// C++17 (the .cu files are compiled as C++17), no CUDA header: cudaStream_t
// is declared as the CUDA headers declare it. Every function orders its work
// on `stream` (nullptr: the legacy default stream); those that return a value
// to the host wait for that stream. Errors throw std::runtime_error naming
// the step. A GpuPlans holds cuFFT plans per size and scratch buffers that
// the calls reuse: use one per stream (it is not thread-safe), on its device.
#include <cstddef>
#include <memory>
#include <string>

typedef struct CUstream_st* cudaStream_t;  // as in driver_types.h

namespace flowd::prnu::gpu {

// How many CUDA devices can be used; 0 with the reason in *why.
int device_count(std::string* why);

class GpuPlans {
public:
  // The device the plans and buffers live on; -1: the current one.
  explicit GpuPlans(int device = -1);
  ~GpuPlans();
  GpuPlans(const GpuPlans&) = delete;
  GpuPlans& operator=(const GpuPlans&) = delete;

  int device() const noexcept;
  // How many sizes have cuFFT plans.
  std::size_t cached_sizes() const noexcept;

  struct Impl;
  Impl& impl() noexcept { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

// A float buffer in device memory (on the current device), for the host API,
// the tests and the benchmark.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  float* data() noexcept { return data_; }
  const float* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  // Copies (ordered on stream; upload returns at once, download waits).
  void upload(const float* host, std::size_t count, cudaStream_t stream = nullptr);
  void download(float* host, std::size_t count, cudaStream_t stream = nullptr) const;

private:
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

// residual_nfi: rgb holds width * height * channels floats (channels 1 or
// 3, interleaved, 0..255); out receives width * height floats. Nothing is
// waited for.
void residual_nfi(const float* rgb, int width, int height, int channels, float* out, GpuPlans& plans,
                  cudaStream_t stream);

// ncc of n floats at a and b (sums in double: per-thread, then a block
// reduction, then one block over the block sums; a fixed grid, so the same
// bits on every device). Waits for the stream.
double ncc(const float* a, const float* b, std::size_t n, GpuPlans& plans, cudaStream_t stream);

// crosscorr_2d of two width x height patterns into cc (width * height
// floats). Nothing is waited for.
void crosscorr_2d(const float* a, const float* b, int width, int height, float* cc, GpuPlans& plans,
                  cudaStream_t stream);

// pce of a cross-correlation laid out as crosscorr_2d's (the fields and
// rules of prnu::PceResult / PceOptions). Waits for the stream.
struct Pce {
  double pce = 0.0, peak = 0.0, energy = 0.0;
  int peak_x = 0, peak_y = 0, shift_x = 0, shift_y = 0;
};
Pce pce(const float* cc, int width, int height, int neighbourhood, int search_radius, GpuPlans& plans,
        cudaStream_t stream);

// A width x height pattern turned by half a turn (rotate_ccw twice,
// ../geometry.hpp) into out. Nothing is waited for.
void rotate_180(const float* in, int width, int height, float* out, GpuPlans& plans, cudaStream_t stream);

}  // namespace flowd::prnu::gpu

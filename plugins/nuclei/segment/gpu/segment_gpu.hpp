#pragma once
// GPU twins of ../segment.hpp: CUDA kernels written for flowd. Same
// definitions, same results (see each CPU function's comment). No CUDA
// headers here: streams are cudaStream_t passed as void*, device memory is
// plain pointers.
//
// Images are row-major with a row pitch in *elements* (>= cols). All work is
// enqueued on `stream`; a function that must read a device value to decide
// (e.g. whether a queue is empty) copies it to the host and waits for the
// stream. Errors throw std::runtime_error naming the operation.
//
// Temporary device memory comes from `alloc` (the engine's pool in a plugin,
// cudaMalloc in tests): it stays valid until the caller has waited for the
// stream after the call returns.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../stain.hpp"

namespace flowd::nuclei::gpu {

using DeviceAlloc = std::function<void*(std::size_t bytes)>;

// A 2-D device image view.
template <class T> struct Image {
  T* data = nullptr;
  int rows = 0, cols = 0;
  std::int64_t pitch = 0;  // elements between rows
};
template <class T> struct ConstImage {
  const T* data = nullptr;
  int rows = 0, cols = 0;
  std::int64_t pitch = 0;
  std::int64_t channel_stride = 1;  // RGB: elements between channels of a pixel (interleaved: 1)
  std::int64_t col_stride = 1;      // elements between neighbouring pixels of a row (RGB interleaved: 3)
};

struct Launch {
  int device = 0;
  void* stream = nullptr;  // cudaStream_t
  DeviceAlloc alloc;
};

void tissue_mask(const Launch& l, ConstImage<std::uint8_t> rgb, int level, Image<std::uint8_t> out);
void rbc_mask(const Launch& l, ConstImage<std::uint8_t> rgb, int rg_q8, int rb_q8, int level, Image<std::uint8_t> out);
void deconvolve(const Launch& l, ConstImage<std::uint8_t> rgb, const StainWeights& sw, Image<std::uint8_t> out);
// half_widths: disk_half_widths(radius) (computed on the host with OpenCV).
void open(const Launch& l, ConstImage<std::uint8_t> grey, const std::vector<int>& half_widths, Image<std::uint8_t> out);
// Irregular wavefront propagation (queue-based), in place: `marker` becomes
// the reconstruction; it may exceed `mask` on entry (clamped first).
void reconstruct(const Launch& l, Image<std::uint8_t> marker, ConstImage<std::uint8_t> mask);
void reconstruct(const Launch& l, Image<float> marker, ConstImage<float> mask);
void area_threshold(const Launch& l, ConstImage<std::uint8_t> mask, int min_area, int max_area, Image<std::uint8_t> out);
void fill_holes(const Launch& l, ConstImage<std::uint8_t> mask, Image<std::uint8_t> out);
void distance_transform(const Launch& l, ConstImage<std::uint8_t> mask, Image<float> out);
// Returns the number of markers (labels 1..n, numbered as the CPU twin would
// up to renumbering).
int watershed_markers(const Launch& l, ConstImage<float> dist, float h, Image<std::int32_t> markers);
void watershed(const Launch& l, ConstImage<float> dist, ConstImage<std::int32_t> markers,
               ConstImage<std::uint8_t> mask, Image<std::int32_t> out);
// Union-find labelling; returns the count; labels compact 1..n in raster
// order of each component's first pixel.
int label(const Launch& l, ConstImage<std::uint8_t> mask, Image<std::int32_t> out);

// Number of usable CUDA devices (0 without a driver or device), and why none.
int device_count(std::string* why_none = nullptr);

}  // namespace flowd::nuclei::gpu

#pragma once
// The CUDA side of the per-nucleus features (features_kernels.cu): plain
// pointers and sizes, no OpenCV and no CUDA headers, so the host code that
// drives it (features_gpu.cpp) and the kernels share this one header.
// Device pointers are memory of `device`; work is enqueued on `stream` (a
// cudaStream_t of that device, as void*). Sizes are in elements unless named
// *_bytes. Every function throws std::runtime_error on a CUDA error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "../feature_math.hpp"

namespace flowd::nuclei::features::gpu {

// The input tile as the engine hands it over: strided device arrays.
struct TileView {
  int device = 0;
  int rows = 0, cols = 0;
  const std::uint8_t* rgb = nullptr;  // rows x cols x 3, R first
  std::int64_t rgb_stride[3] = {0, 0, 0};
  const std::int32_t* labels = nullptr;  // rows x cols
  std::int64_t label_stride[2] = {0, 0};
};

// Per-tile derived channels, contiguous rows x cols (written by derive()).
struct Derived {
  std::uint8_t* grey = nullptr;
  std::uint8_t* h = nullptr;
  std::uint8_t* e = nullptr;
  std::int32_t* labels = nullptr;  // a contiguous copy of the labels
  const double* tables = nullptr;  // StainTables (features.hpp), uploaded by the caller
};

// grey (BT.601, OpenCV's fixed point), H and E (the tabulated deconvolution),
// and the contiguous labels: one thread per pixel.
void derive(const TileView& tile, const Derived& out, void* stream);

// A nucleus's box in the tile (local coordinates).
struct Box {
  std::int32_t label, row, col, height, width;
};

struct NucleiJob {
  int device = 0;
  int rows = 0, cols = 0;
  int count = 0;       // nuclei (boxes)
  int levels = 32;     // GLCM grey levels
  int ring = 0;        // ring radius in pixels
  const std::uint8_t *grey = nullptr, *h = nullptr, *e = nullptr;
  const std::uint8_t* edges = nullptr;       // 0 / non-zero, rows x cols
  const std::int32_t* labels = nullptr;      // contiguous rows x cols
  const Box* boxes = nullptr;                // count
  const std::int32_t* disc = nullptr;        // 2 ring + 1 half widths (disc_half_widths); unused if ring = 0
  // Workspace and outputs, laid out bin-major across nuclei (element e of
  // nucleus i at e * count + i) so kernel 2's threads read adjacent words.
  NucleusSums* sums = nullptr;               // count
  std::uint32_t* hist = nullptr;             // kHistCount * kBins * count
  std::uint32_t* grad = nullptr;             // kGradBins * count
  std::uint32_t* glcm = nullptr;             // kDirections * levels^2 * count
  double* values = nullptr;                  // count * kFeatureCount, row-major
};

// Kernel 1 (one block per nucleus box: histograms, co-occurrence counts and
// moment sums in shared memory) then kernel 2 (one thread per nucleus:
// finish_nucleus()). Leaves perimeter, solidity and circularity 0.
void nuclei(const NucleiJob& job, void* stream);

std::size_t glcm_elements(int levels, int count);

// Helpers for the host side (and tests): all on `device`.
void copy_to_device(int device, void* dst, const void* src, std::size_t bytes, void* stream);
// Returns when the copy is complete (the stream's earlier work included).
void copy_to_host(int device, void* dst, const void* src, std::size_t bytes, void* stream);
void synchronize(int device, void* stream);
// Number of CUDA devices; 0 with the runtime's reason in *why.
int device_count(std::string* why);
void* device_malloc(int device, std::size_t bytes);
void device_free(int device, void* p) noexcept;
void* stream_create(int device);
void stream_destroy(int device, void* stream) noexcept;

}  // namespace flowd::nuclei::features::gpu

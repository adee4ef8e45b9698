#pragma once
// Internal to flowd_nuclei_segment_gpu: error checks, the per-call context,
// index helpers, and the shared building blocks (reconstruction on ordered
// keys, union-find, compact labelling) that several operations reuse.
#include <cuda_runtime.h>

#include <climits>
#include <cstring>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/device_scope.cuh"
#include "segment_gpu.hpp"

namespace flowd::nuclei::gpu::detail {

constexpr int kThreads = 256;

[[noreturn]] inline void fail(const char* op, const std::string& what) {
  throw std::runtime_error(std::string("nuclei.") + op + " on the GPU: " + what);
}

inline void check(cudaError_t e, const char* op, const char* what) {
  if (e != cudaSuccess) fail(op, std::string(what) + " failed: " + cudaGetErrorString(e));
}


// One operation's call: its name for errors, the stream, the allocator and
// the grid size that fills the device.
using cuda::DeviceScope;

struct Ctx {
  const char* op;
  cudaStream_t stream;
  const Launch* launch;
  int max_blocks;

  Ctx(const Launch& l, const char* name) : op(name), stream(static_cast<cudaStream_t>(l.stream)), launch(&l) {
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, l.device), op, "cudaDeviceGetAttribute");
    max_blocks = (sms > 0 ? sms : 1) * 16;
  }

  template <class T> T* alloc(long long count) const {
    if (!launch->alloc) fail(op, "Launch::alloc is empty");
    const std::size_t bytes = static_cast<std::size_t>(count > 0 ? count : 1) * sizeof(T);
    void* p = launch->alloc(bytes);
    if (!p) fail(op, "Launch::alloc returned null for " + std::to_string(bytes) + " bytes");
    return static_cast<T*>(p);
  }

  // Blocks for a grid-stride loop over n items.
  unsigned blocks(long long n) const {
    const long long b = (n + kThreads - 1) / kThreads;
    return static_cast<unsigned>(b < 1 ? 1 : b > max_blocks ? max_blocks : b);
  }

  void launched(const char* what) const { check(cudaGetLastError(), op, what); }
  void memset(void* p, int v, std::size_t bytes, const char* what) const {
    check(cudaMemsetAsync(p, v, bytes, stream), op, what);
  }
  // Copies a device value to the host and waits for the stream: the only
  // places the host learns anything (queue sizes, convergence, counts).
  template <class T> T read(const T* device_value, const char* what) const {
    T v{};
    check(cudaMemcpyAsync(&v, device_value, sizeof(T), cudaMemcpyDeviceToHost, stream), op, what);
    check(cudaStreamSynchronize(stream), op, what);
    return v;
  }
};

// Sizes: every operation indexes pixels with 32-bit linear indices (labels
// are CV_32S), so rows * cols must fit in an int.
template <class A> long long checked_pixels(const char* op, const A& a) {
  if (a.rows < 0 || a.cols < 0) fail(op, "negative image size");
  const long long n = static_cast<long long>(a.rows) * a.cols;
  if (n > INT_MAX - 1) fail(op, "image of " + std::to_string(n) + " pixels is too large (at most 2^31 - 2)");
  if (n > 0 && !a.data) fail(op, "null image data");
  return n;
}
template <class A, class B> void same_size(const char* op, const A& a, const B& b) {
  if (a.rows != b.rows || a.cols != b.cols)
    fail(op, "size mismatch: " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " vs " +
                 std::to_string(b.rows) + "x" + std::to_string(b.cols));
}
template <class T> void check_out(const char* op, const Image<T>& o) {
  checked_pixels(op, o);
  if (o.rows > 0 && o.cols > 0 && o.pitch < o.cols) fail(op, "output pitch smaller than its width");
}
template <class T> void check_in(const char* op, const ConstImage<T>& in) {
  checked_pixels(op, in);
  if (in.rows > 0 && in.cols > 0 && (in.pitch < 1 || in.col_stride < 1)) fail(op, "input pitch or column stride < 1");
}

// Device views, by value into kernels.
template <class T> struct In {
  const T* data;
  long long pitch, col_stride, channel_stride;
  __device__ T at(int y, int x) const { return data[y * pitch + x * col_stride]; }
  __device__ T at(int y, int x, int c) const { return data[y * pitch + x * col_stride + c * channel_stride]; }
};
template <class T> In<T> in_view(const ConstImage<T>& c) { return {c.data, c.pitch, c.col_stride, c.channel_stride}; }
template <class T> struct Out {
  T* data;
  long long pitch;
  __device__ T& at(int y, int x) const { return data[y * pitch + x]; }
};
template <class T> Out<T> out_view(const Image<T>& o) { return {o.data, o.pitch}; }

// Neighbour offsets in the order N, NE, E, SE, S, SW, W, NW (the watershed's
// tie order); 4-connected neighbours are the even entries.
__device__ __forceinline__ int ndy(int k) { return (k == 0 || k == 1 || k == 7) ? -1 : (k == 2 || k == 6) ? 0 : 1; }
__device__ __forceinline__ int ndx(int k) { return (k == 0 || k == 4) ? 0 : k <= 3 ? 1 : -1; }

// ---- order-preserving keys -------------------------------------------------
// Reconstruction and the plateau tests compare values only; mapping them to
// unsigned keys with the same order lets one atomicMax serve u8 and f32
// (negative floats included: dist - h is negative where dist < h).
__host__ __device__ inline std::uint32_t float_key(float f) {
  std::uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__host__ __device__ inline float key_float(std::uint32_t k) {
  const std::uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// ---- shared building blocks (defined in reconstruct.cu / components.cu) -----

// Reconstruction by dilation in place on dense (pitch = cols) key images:
// j becomes the largest image <= i reachable from min(j, i), 8-connected.
void reconstruct_keys(const Ctx& c, std::uint32_t* j, const std::uint32_t* i, int rows, int cols);

// Union-find forests over dense images: parent[p] <= p, roots are the
// smallest linear index of their component; non-members get -1.
enum class Connect { eight_foreground, four_background };
// eight_foreground: members are mask != 0, 8-connected.
// four_background: members are mask == 0, 4-connected.
void union_find_mask(const Ctx& c, In<std::uint8_t> mask, int rows, int cols, Connect how, int* parent);
// Members: member[p] != 0; neighbours join when their keys are equal (8-connected).
void union_find_equal(const Ctx& c, const std::uint8_t* member, const std::uint32_t* key, int rows, int cols,
                      int* parent);
// Labels 1..n in raster order of each component's root (its first pixel);
// 0 for non-members. Returns n.
int compact_labels(const Ctx& c, const int* parent, int rows, int cols, Out<std::int32_t> out);

}  // namespace flowd::nuclei::gpu::detail

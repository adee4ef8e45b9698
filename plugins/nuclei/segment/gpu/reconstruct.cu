// Grey-level reconstruction by dilation, 8-connected, by irregular wavefront
// propagation (Teodoro et al.; the queue formulation of Vincent's hybrid
// algorithm):
//   1. j = min(marker, mask), as order-preserving 32-bit keys (u8 widened,
//      f32 mapped so that unsigned order is float order), so one atomicMax
//      serves both types and never loses a concurrent raise;
//   2. raster/anti-raster sweeps along columns and rows (one thread per line,
//      so no two threads touch one pixel) move most of the value cheaply;
//   3. the wavefront: every pixel that could still raise a neighbour is
//      queued; a round processes its queue in parallel, raising neighbours q
//      to min(j(p), mask(q)) with atomicMax and queueing each pixel it raised;
//      rounds repeat until a round queues nothing.
// Every raise is sound (j stays <= the reconstruction) and, at the end, no
// pixel can raise a neighbour (each pixel's final value was processed: either
// it was queued after its last raise, or it could raise nobody when the
// initial queue was built). The result is then the reconstruction, which is
// unique, so it equals the CPU's bit for bit whatever the order of the races.
//
// Rounds are separate kernel launches, so a round reads the previous round's
// values after a kernel boundary. Within a round a pixel is queued for the
// next round at most once: stamp[q] holds the last round q was queued for,
// and atomicMax on it lets exactly one raiser append q. So a queue never
// holds more than rows * cols entries. The host reads the queue size only
// every few rounds (kernels read it from device memory), doubling the
// stride as the wavefront thins out.
#include <algorithm>

#include "common.cuh"

namespace flowd::nuclei::gpu {

namespace detail {
namespace {

template <class T> __device__ __forceinline__ std::uint32_t key_of(T v);
template <> __device__ __forceinline__ std::uint32_t key_of<std::uint8_t>(std::uint8_t v) { return v; }
template <> __device__ __forceinline__ std::uint32_t key_of<float>(float v) { return float_key(v); }
template <class T> __device__ __forceinline__ T value_of(std::uint32_t k);
template <> __device__ __forceinline__ std::uint8_t value_of<std::uint8_t>(std::uint32_t k) {
  return static_cast<std::uint8_t>(k);
}
template <> __device__ __forceinline__ float value_of<float>(std::uint32_t k) { return key_float(k); }

template <class T>
__global__ void to_keys(Out<T> marker, In<T> mask, std::uint32_t* j, std::uint32_t* i, int cols, long long n) {
  for (long long p = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int y = static_cast<int>(p / cols), x = static_cast<int>(p % cols);
    const std::uint32_t m = key_of<T>(mask.at(y, x));
    const std::uint32_t k = key_of<T>(marker.at(y, x));
    i[p] = m;
    j[p] = k < m ? k : m;
  }
}

template <class T> __global__ void from_keys(const std::uint32_t* j, Out<T> marker, int cols, long long n) {
  for (long long p = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int y = static_cast<int>(p / cols), x = static_cast<int>(p % cols);
    marker.at(y, x) = value_of<T>(j[p]);
  }
}

// One thread per line: `lines` lines of `len` pixels, pixel k of line t at
// t * line_step + k * step; forward then backward.
__global__ void sweep(std::uint32_t* j, const std::uint32_t* i, int lines, int len, long long line_step,
                      long long step) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= lines || len < 2) return;
  std::uint32_t* jl = j + t * line_step;
  const std::uint32_t* il = i + t * line_step;
  std::uint32_t prev = jl[0];
  for (int k = 1; k < len; ++k) {
    const long long o = k * step;
    const std::uint32_t m = il[o], cand = prev < m ? prev : m;
    std::uint32_t v = jl[o];
    if (cand > v) jl[o] = v = cand;
    prev = v;
  }
  for (int k = len - 2; k >= 0; --k) {
    const long long o = k * step;
    const std::uint32_t m = il[o], cand = prev < m ? prev : m;
    std::uint32_t v = jl[o];
    if (cand > v) jl[o] = v = cand;
    prev = v;
  }
}

// Queues every pixel that can raise a neighbour (nothing is written to j, so
// plain reads are exact).
__global__ void seed_queue(const std::uint32_t* j, const std::uint32_t* i, int rows, int cols, int* queue,
                           int* count) {
  const long long n = static_cast<long long>(rows) * cols;
  for (long long p = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int y = static_cast<int>(p / cols), x = static_cast<int>(p % cols);
    const std::uint32_t v = j[p];
    bool raises = false;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int yy = y + ndy(k), xx = x + ndx(k);
      if (yy < 0 || yy >= rows || xx < 0 || xx >= cols) continue;
      const long long q = static_cast<long long>(yy) * cols + xx;
      const std::uint32_t jq = j[q];
      raises |= jq < v && jq < i[q];
    }
    if (raises) queue[atomicAdd(count, 1)] = static_cast<int>(p);
  }
}

// One round. j is read through L2 (__ldcg): other SMs raise it with atomics
// during the round, and a stale L1 line would only cost extra work, but the
// freshest value saves rounds.
__global__ void propagate(std::uint32_t* j, const std::uint32_t* i, int rows, int cols, const int* queue,
                          const int* count, int* next, int* next_count, int* stamp, int round) {
  const int size = *count;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < size;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int p = queue[t];
    const int y = p / cols, x = p % cols;
    const std::uint32_t v = __ldcg(j + p);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int yy = y + ndy(k), xx = x + ndx(k);
      if (yy < 0 || yy >= rows || xx < 0 || xx >= cols) continue;
      const int q = yy * cols + xx;
      const std::uint32_t iq = i[q];
      const std::uint32_t nv = v < iq ? v : iq;
      if (__ldcg(j + q) >= nv) continue;
      const std::uint32_t old = atomicMax(j + q, nv);
      if (old < nv && atomicMax(stamp + q, round) < round) next[atomicAdd(next_count, 1)] = q;
    }
  }
}

}  // namespace

void reconstruct_keys(const Ctx& c, std::uint32_t* j, const std::uint32_t* i, int rows, int cols) {
  const long long n = static_cast<long long>(rows) * cols;
  if (n == 0) return;
  // Sweeps: rows (pixels `1` apart), then columns (`cols` apart), twice, so
  // straight runs and L-shaped paths need no queue rounds.
  for (int pass = 0; pass < 2; ++pass) {
    sweep<<<(rows + 127) / 128, 128, 0, c.stream>>>(j, i, rows, cols, cols, 1);
    c.launched("launching the row sweep");
    sweep<<<(cols + 127) / 128, 128, 0, c.stream>>>(j, i, cols, rows, 1, cols);
    c.launched("launching the column sweep");
  }
  int* queue[2] = {c.alloc<int>(n), c.alloc<int>(n)};
  int* counts = c.alloc<int>(2);
  int* stamp = c.alloc<int>(n);
  c.memset(counts, 0, 2 * sizeof(int), "clearing the queue sizes");
  c.memset(stamp, 0, static_cast<std::size_t>(n) * sizeof(int), "clearing the queue stamps");
  seed_queue<<<c.blocks(n), kThreads, 0, c.stream>>>(j, i, rows, cols, queue[0], counts);
  c.launched("launching the queue seeding");
  if (c.read(counts, "reading the initial queue size") == 0) return;
  int round = 0;
  int stride = 4;
  for (;;) {
    for (int s = 0; s < stride; ++s) {
      const int cur = round & 1, nxt = cur ^ 1;
      c.memset(counts + nxt, 0, sizeof(int), "clearing the next queue size");
      ++round;
      propagate<<<static_cast<unsigned>(c.max_blocks), kThreads, 0, c.stream>>>(
          j, i, rows, cols, queue[cur], counts + cur, queue[nxt], counts + nxt, stamp, round);
      c.launched("launching a propagation round");
    }
    // An empty round leaves every later round of the stride empty, so the
    // last size tells whether the wavefront died.
    if (c.read(counts + (round & 1), "reading the queue size") == 0) return;
    stride = std::min(stride * 2, 64);
  }
}

}  // namespace detail

namespace {
using namespace detail;

template <class T> void reconstruct_impl(const Launch& l, Image<T> marker, ConstImage<T> mask) {
  const char* op = "reconstruct";
  check_out(op, marker);
  check_in(op, mask);
  same_size(op, marker, mask);
  const long long n = static_cast<long long>(marker.rows) * marker.cols;
  if (n == 0) return;
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  auto* j = c.alloc<std::uint32_t>(n);
  auto* i = c.alloc<std::uint32_t>(n);
  to_keys<T><<<c.blocks(n), kThreads, 0, c.stream>>>(out_view(marker), in_view(mask), j, i, marker.cols, n);
  c.launched("launching the key conversion");
  reconstruct_keys(c, j, i, marker.rows, marker.cols);
  from_keys<T><<<c.blocks(n), kThreads, 0, c.stream>>>(j, out_view(marker), marker.cols, n);
  c.launched("launching the value conversion");
}

}  // namespace

void reconstruct(const Launch& l, Image<std::uint8_t> marker, ConstImage<std::uint8_t> mask) {
  reconstruct_impl(l, marker, mask);
}
void reconstruct(const Launch& l, Image<float> marker, ConstImage<float> mask) { reconstruct_impl(l, marker, mask); }

}  // namespace flowd::nuclei::gpu

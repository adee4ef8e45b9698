// Per-nucleus features on a CUDA GPU, in Region Templates' two steps:
//
//  kernel 1 (accumulate): one block per nucleus bounding box. The block's
//    threads stride over the box (and, for the cytoplasm ring, over the box
//    grown by the ring radius) and build the nucleus's histograms (H, E,
//    grey, floor of the gradient magnitude, ring H/E/grey) and its four
//    co-occurrence matrices with shared-memory atomics, and its moment sums
//    with warp shuffles. The gradient's central moments take a second pass
//    over the box once the block knows the mean (no cancellation, as on the
//    CPU). The block then writes everything out bin-major across nuclei.
//  kernel 2 (finish): one thread per nucleus turns those into the feature
//    row with finish_nucleus() - the CPU variant's own code - so the variants
//    differ only in the summation order of the gradient's double sums and
//    in the last bit of log/exp/atan. Bin-major storage makes a warp's 32
//    threads read 32 adjacent words for every bin.
//
// Derived channels (grey, H, E) come from a per-pixel kernel with the CPU's
// integer / tabulated-double arithmetic, so they are bit-identical; the
// Sobel magnitude is recomputed in kernel 1 from grey (integers).
// Compiled with --fmad=false: no FMA contraction, as on the CPU.
#include <cuda_runtime.h>

#include "cuda/device_scope.cuh"

#include <climits>
#include <stdexcept>
#include <string>

#include "features_kernels.hpp"

namespace flowd::nuclei::features::gpu {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("nuclei features on the GPU: ") + what + " failed: " + cudaGetErrorString(e));
}


// ---- derived channels ------------------------------------------------------

__device__ __forceinline__ unsigned char quantise(double t) {
  return t <= 0 ? 0 : t >= 255 ? 255 : static_cast<unsigned char>(static_cast<int>(t + 0.5));
}

__global__ void derive_kernel(TileView t, Derived out) {
  const long long n = static_cast<long long>(t.rows) * t.cols;
  for (long long p = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = p / t.cols, c = p % t.cols;
    const std::uint8_t* px = t.rgb + r * t.rgb_stride[0] + c * t.rgb_stride[1];
    const int R = px[0], G = px[t.rgb_stride[2]], B = px[2 * t.rgb_stride[2]];
    out.grey[p] = static_cast<std::uint8_t>((9798 * R + 19235 * G + 3735 * B + 16384) >> 15);
    // tables: [stain][channel][v], as StainTables::t.
    const double* th = out.tables;
    const double* te = out.tables + 3 * 256;
    out.h[p] = quantise((__ldg(th + R) + __ldg(th + 256 + G)) + __ldg(th + 512 + B));
    out.e[p] = quantise((__ldg(te + R) + __ldg(te + 256 + G)) + __ldg(te + 512 + B));
    out.labels[p] = t.labels[r * t.label_stride[0] + c * t.label_stride[1]];
  }
}

// ---- kernel 1 --------------------------------------------------------------

constexpr int kThreads = 256;

__device__ __forceinline__ int reflect101(int p, int n) {
  if (p < 0) return n == 1 ? 0 : -p;
  if (p >= n) return n == 1 ? 0 : 2 * n - 2 - p;
  return p;
}

__device__ __forceinline__ unsigned sobel_m2(const std::uint8_t* g, int r, int c, int rows, int cols) {
  const long long ru = reflect101(r - 1, rows), rm = r, rd = reflect101(r + 1, rows);
  const int cl = reflect101(c - 1, cols), cr = reflect101(c + 1, cols);
  const std::uint8_t *u = g + ru * cols, *m = g + rm * cols, *d = g + rd * cols;
  const int gx = (u[cr] + 2 * m[cr] + d[cr]) - (u[cl] + 2 * m[cl] + d[cl]);
  const int gy = (d[cl] + 2 * d[c] + d[cr]) - (u[cl] + 2 * u[c] + u[cr]);
  return static_cast<unsigned>(gx * gx + gy * gy);
}

template <class T> __device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// Adds a thread's value into a shared accumulator: one atomic per warp.
__device__ __forceinline__ void block_add(unsigned long long* acc, unsigned long long v) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0 && v != 0) atomicAdd(acc, v);
}
__device__ __forceinline__ void block_add(double* acc, double v) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) atomicAdd(acc, v);
}

enum U64 : int { uArea, uSr, uSc, uSrr, uScc, uSrc, uEdges, uRing, uCount };
enum F64 : int { fGsum, fM2, fM3, fM4, fCount };

__global__ void __launch_bounds__(kThreads) accumulate_kernel(NucleiJob j) {
  extern __shared__ unsigned int smem[];
  unsigned int* hist = smem;                          // kHistCount * kBins
  unsigned int* grad = hist + kHistCount * kBins;     // kGradBins
  unsigned int* glcm = grad + kGradBins;              // kDirections * L * L
  __shared__ unsigned long long su[uCount];
  __shared__ double sd[fCount];
  __shared__ unsigned smin, smax;

  const int i = static_cast<int>(blockIdx.x);
  const Box b = j.boxes[i];
  const int L = j.levels, LL = L * L;
  const int shared_words = kHistCount * kBins + kGradBins + kDirections * LL;
  for (int k = static_cast<int>(threadIdx.x); k < shared_words; k += kThreads) smem[k] = 0;
  if (threadIdx.x < uCount) su[threadIdx.x] = 0;
  if (threadIdx.x < fCount) sd[threadIdx.x] = 0;
  if (threadIdx.x == 0) smin = UINT_MAX, smax = 0;
  __syncthreads();

  const long long cols = j.cols;
  const long long box_pixels = static_cast<long long>(b.height) * b.width;
  unsigned long long area = 0, sr = 0, sc = 0, srr = 0, scc = 0, src = 0, edges = 0;
  double gsum = 0;
  unsigned mn = UINT_MAX, mx = 0;
  for (long long p = threadIdx.x; p < box_pixels; p += kThreads) {
    const int y = static_cast<int>(p / b.width), x = static_cast<int>(p % b.width);
    const int r = b.row + y, c = b.col + x;
    const long long idx = r * cols + c;
    if (j.labels[idx] != b.label) continue;
    const unsigned long long uy = static_cast<unsigned long long>(y), ux = static_cast<unsigned long long>(x);
    ++area;
    sr += uy, sc += ux, srr += uy * uy, scc += ux * ux, src += uy * ux;
    edges += j.edges[idx] != 0;
    const unsigned g = j.grey[idx];
    atomicAdd(&hist[kHistH * kBins + j.h[idx]], 1u);
    atomicAdd(&hist[kHistE * kBins + j.e[idx]], 1u);
    atomicAdd(&hist[kHistGrey * kBins + g], 1u);
    const unsigned m2 = sobel_m2(j.grey, r, c, j.rows, j.cols);
    mn = min(mn, m2);
    mx = max(mx, m2);
    const double G = sqrt(static_cast<double>(m2));
    gsum += G;
    atomicAdd(&grad[static_cast<int>(G)], 1u);
    const int q = static_cast<int>((g * static_cast<unsigned>(L)) >> 8);
    for (int d = 0; d < kDirections; ++d) {
      const int rr = r + dir_row(d), cc = c + dir_col(d);
      if (rr < 0 || rr >= j.rows || cc < 0 || cc >= j.cols) continue;
      const long long n = rr * cols + cc;
      if (j.labels[n] != b.label) continue;
      const int q2 = static_cast<int>((static_cast<unsigned>(j.grey[n]) * static_cast<unsigned>(L)) >> 8);
      atomicAdd(&glcm[d * LL + q * L + q2], 1u);
    }
  }
  block_add(&su[uArea], area);
  block_add(&su[uSr], sr);
  block_add(&su[uSc], sc);
  block_add(&su[uSrr], srr);
  block_add(&su[uScc], scc);
  block_add(&su[uSrc], src);
  block_add(&su[uEdges], edges);
  block_add(&sd[fGsum], gsum);
  if (mx >= mn) {  // this thread saw a pixel
    atomicMin(&smin, mn);
    atomicMax(&smax, mx);
  }
  __syncthreads();

  // Second pass: central moments of G about the block's mean.
  const double mean = su[uArea] > 0 ? sd[fGsum] / static_cast<double>(su[uArea]) : 0.0;
  double m2s = 0, m3s = 0, m4s = 0;
  for (long long p = threadIdx.x; p < box_pixels; p += kThreads) {
    const int r = b.row + static_cast<int>(p / b.width), c = b.col + static_cast<int>(p % b.width);
    if (j.labels[r * cols + c] != b.label) continue;
    const double d = sqrt(static_cast<double>(sobel_m2(j.grey, r, c, j.rows, j.cols))) - mean, d2 = d * d;
    m2s += d2;
    m3s += d2 * d;
    m4s += d2 * d2;
  }
  block_add(&sd[fM2], m2s);
  block_add(&sd[fM3], m3s);
  block_add(&sd[fM4], m4s);

  // The ring: background pixels of the grown box with a pixel of this
  // nucleus in the disc around them (the nucleus lies inside its box, so the
  // search is clipped to the box).
  unsigned long long ring = 0;
  const int R = j.ring;
  if (R > 0) {
    const int hr0 = max(0, b.row - R), hc0 = max(0, b.col - R);
    const int hr1 = min(j.rows, b.row + b.height + R), hc1 = min(j.cols, b.col + b.width + R);
    const int hw = hc1 - hc0;
    const long long halo_pixels = static_cast<long long>(hr1 - hr0) * hw;
    const int br1 = b.row + b.height - 1, bc1 = b.col + b.width - 1;
    for (long long p = threadIdx.x; p < halo_pixels; p += kThreads) {
      const int r = hr0 + static_cast<int>(p / hw), c = hc0 + static_cast<int>(p % hw);
      const long long idx = r * cols + c;
      if (j.labels[idx] > 0) continue;
      bool near = false;
      const int dy0 = max(-R, b.row - r), dy1 = min(R, br1 - r);
      for (int dy = dy0; dy <= dy1 && !near; ++dy) {
        const int w = __ldg(j.disc + dy + R);
        const int dx0 = max(-w, b.col - c), dx1 = min(w, bc1 - c);
        const std::int32_t* row = j.labels + (r + dy) * cols + c;
        for (int dx = dx0; dx <= dx1; ++dx)
          if (row[dx] == b.label) {
            near = true;
            break;
          }
      }
      if (!near) continue;
      ++ring;
      atomicAdd(&hist[kHistRingH * kBins + j.h[idx]], 1u);
      atomicAdd(&hist[kHistRingE * kBins + j.e[idx]], 1u);
      atomicAdd(&hist[kHistRingGrey * kBins + j.grey[idx]], 1u);
    }
  }
  block_add(&su[uRing], ring);
  __syncthreads();

  const long long n = j.count;
  for (int k = static_cast<int>(threadIdx.x); k < kHistCount * kBins; k += kThreads) j.hist[k * n + i] = hist[k];
  for (int k = static_cast<int>(threadIdx.x); k < kGradBins; k += kThreads) j.grad[k * n + i] = grad[k];
  for (int k = static_cast<int>(threadIdx.x); k < kDirections * LL; k += kThreads) j.glcm[k * n + i] = glcm[k];
  if (threadIdx.x == 0) {
    NucleusSums s;
    s.area = su[uArea];
    s.sr = su[uSr], s.sc = su[uSc], s.srr = su[uSrr], s.scc = su[uScc], s.src = su[uSrc];
    s.edges = su[uEdges];
    s.ring_area = su[uRing];
    s.grad_mean = mean;
    s.grad_m2 = sd[fM2], s.grad_m3 = sd[fM3], s.grad_m4 = sd[fM4];
    s.grad_min2 = smin, s.grad_max2 = smax;
    s.box_height = b.height, s.box_width = b.width;
    j.sums[i] = s;
  }
}

// ---- kernel 2 --------------------------------------------------------------

__global__ void finish_kernel(NucleiJob j) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= j.count) return;
  const long long n = j.count;
  Counts hc[kHistCount];
  for (int k = 0; k < kHistCount; ++k) hc[k] = Counts{j.hist + k * kBins * n + i, n};
  finish_nucleus(j.sums[i], hc, Counts{j.grad + i, n}, Counts{j.glcm + i, n}, j.levels,
                 j.values + static_cast<long long>(i) * kFeatureCount);
}

std::size_t shared_bytes(int levels) {
  return static_cast<std::size_t>(kHistCount * kBins + kGradBins + kDirections * levels * levels) * sizeof(unsigned);
}

}  // namespace

std::size_t glcm_elements(int levels, int count) {
  return static_cast<std::size_t>(kDirections) * static_cast<std::size_t>(levels) * static_cast<std::size_t>(levels) *
         static_cast<std::size_t>(count);
}

void derive(const TileView& t, const Derived& out, void* stream) {
  if (t.rows <= 0 || t.cols <= 0) return;
  if (!t.rgb || !t.labels || !out.grey || !out.h || !out.e || !out.labels || !out.tables)
    throw std::invalid_argument("nuclei features (gpu): derive: a null device pointer");
  cuda::DeviceScope on(t.device, "nuclei.features");
  const long long n = static_cast<long long>(t.rows) * t.cols;
  const long long blocks = (n + kThreads - 1) / kThreads;
  derive_kernel<<<static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16), kThreads, 0,
                  static_cast<cudaStream_t>(stream)>>>(t, out);
  check(cudaGetLastError(), "launching the derived-channel kernel");
}

void nuclei(const NucleiJob& j, void* stream) {
  if (j.count <= 0) return;
  if (j.levels < kMinLevels || j.levels > kMaxLevels) throw std::invalid_argument("nuclei features (gpu): levels out of range");
  if (j.ring < 0 || (j.ring > 0 && !j.disc)) throw std::invalid_argument("nuclei features (gpu): bad ring");
  if (!j.grey || !j.h || !j.e || !j.edges || !j.labels || !j.boxes || !j.sums || !j.hist || !j.grad || !j.glcm ||
      !j.values)
    throw std::invalid_argument("nuclei features (gpu): nuclei: a null device pointer");
  cuda::DeviceScope on(j.device, "nuclei.features");
  const auto s = static_cast<cudaStream_t>(stream);
  const std::size_t shared = shared_bytes(j.levels);
  // Above 48 KiB a kernel must opt in (64 levels: 77.5 KiB; H100 allows 227).
  check(cudaFuncSetAttribute(accumulate_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)),
        "raising the shared-memory limit");
  accumulate_kernel<<<static_cast<unsigned>(j.count), kThreads, shared, s>>>(j);
  check(cudaGetLastError(), "launching kernel 1 (accumulate)");
  constexpr int kFinishThreads = 64;
  finish_kernel<<<static_cast<unsigned>((j.count + kFinishThreads - 1) / kFinishThreads), kFinishThreads, 0, s>>>(j);
  check(cudaGetLastError(), "launching kernel 2 (finish)");
}

void copy_to_device(int device, void* dst, const void* src, std::size_t bytes, void* stream) {
  if (bytes == 0) return;
  cuda::DeviceScope on(device, "nuclei.features");
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)), "uploading");
}

void copy_to_host(int device, void* dst, const void* src, std::size_t bytes, void* stream) {
  cuda::DeviceScope on(device, "nuclei.features");
  if (bytes > 0)
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream)), "downloading");
  // The host buffer may be pageable or pinned: only the sync makes it safe to read.
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "waiting for a download");
}

void synchronize(int device, void* stream) {
  cuda::DeviceScope on(device, "nuclei.features");
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "waiting for the stream");
}

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount reports 0 devices";
  return n;
}

void* device_malloc(int device, std::size_t bytes) {
  cuda::DeviceScope on(device, "nuclei.features");
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
  return p;
}

void device_free(int device, void* p) noexcept {
  if (!p) return;
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  if (previous != device) static_cast<void>(cudaSetDevice(device));
  static_cast<void>(cudaFree(p));
  if (previous != device) static_cast<void>(cudaSetDevice(previous));
}

void* stream_create(int device) {
  cuda::DeviceScope on(device, "nuclei.features");
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

void stream_destroy(int device, void* stream) noexcept {
  if (!stream) return;
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  if (previous != device) static_cast<void>(cudaSetDevice(device));
  static_cast<void>(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
  if (previous != device) static_cast<void>(cudaSetDevice(previous));
}

}  // namespace flowd::nuclei::features::gpu

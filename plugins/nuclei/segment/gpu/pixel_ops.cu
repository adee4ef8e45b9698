// Per-pixel operations (tissue and red-blood-cell masks, colour
// deconvolution) and the grey-level opening by a disk; device_count.
//
// The masks are the CPU's integer tests verbatim. Deconvolution performs the
// CPU's float operations in the CPU's order with explicit round-to-nearest
// intrinsics, so nvcc cannot contract a multiply and an add into an FMA (which
// rounds once instead of twice). The opening is a direct min/max over the
// disk's row spans clipped to the image: min and max are exact and
// order-independent, so any evaluation order gives the CPU's result.
#include <string>
#include <vector>

#include "common.cuh"

namespace flowd::nuclei::gpu {

namespace {
using namespace detail;

__global__ void tissue_kernel(In<std::uint8_t> rgb, Out<std::uint8_t> out, int cols, long long n, int limit) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int y = static_cast<int>(i / cols), x = static_cast<int>(i % cols);
    const int sum = rgb.at(y, x, 0) + rgb.at(y, x, 1) + rgb.at(y, x, 2);
    out.at(y, x) = sum < limit ? 255 : 0;
  }
}

__global__ void rbc_kernel(In<std::uint8_t> rgb, Out<std::uint8_t> out, int cols, long long n, int rg_q8, int rb_q8,
                           int limit) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int y = static_cast<int>(i / cols), x = static_cast<int>(i % cols);
    const int r = rgb.at(y, x, 0), g = rgb.at(y, x, 1), b = rgb.at(y, x, 2);
    const bool red = 256 * r >= rg_q8 * g && 256 * r >= rb_q8 * b;
    out.at(y, x) = (red && r + g + b < limit) ? 255 : 0;
  }
}

// Launch parameters, not __constant__ symbols: calls with different stains
// may run at once on different streams, and a launch parameter belongs to
// its launch.
struct Stain {
  float w[3];
  float scale;
  float lut[256];
};
static_assert(sizeof(Stain) + 128 <= 4096, "the stain no longer fits in the launch parameters");

__global__ void deconvolve_kernel(In<std::uint8_t> rgb, Out<std::uint8_t> out, int cols, long long n, Stain st) {
  // w[c] * lut[v] tabulated per channel as the CPU does (one float product
  // each, so the same rounding); shared memory because a dynamically indexed
  // parameter array would be copied to local memory.
  __shared__ float t[3][256];
  for (int k = static_cast<int>(threadIdx.x); k < 3 * 256; k += static_cast<int>(blockDim.x))
    t[k / 256][k % 256] = __fmul_rn(st.w[k / 256], st.lut[k % 256]);
  __syncthreads();
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int y = static_cast<int>(i / cols), x = static_cast<int>(i % cols);
    const float sum = __fadd_rn(__fadd_rn(t[0][rgb.at(y, x, 0)], t[1][rgb.at(y, x, 1)]), t[2][rgb.at(y, x, 2)]);
    const float q = __fmul_rn(sum, st.scale);
    out.at(y, x) = q <= 0.0f ? 0 : q >= 255.0f ? 255 : static_cast<std::uint8_t>(static_cast<int>(__fadd_rn(q, 0.5f)));
  }
}

constexpr int kMaxRadius = 255;
struct Disk {
  int radius;
  int half[2 * kMaxRadius + 1];
};
static_assert(sizeof(Disk) + 128 <= 4096, "the disk no longer fits in the launch parameters");

// Erosion (min) or dilation (max) over the disk's spans clipped to the image:
// out-of-image pixels take no part, as OpenCV's default morphology border.
template <bool Erode, class Src>
__global__ void morph_kernel(Src src, Out<std::uint8_t> dst, int rows, int cols, long long n, Disk d) {
  __shared__ int half[2 * kMaxRadius + 1];
  for (int k = static_cast<int>(threadIdx.x); k <= 2 * d.radius; k += static_cast<int>(blockDim.x)) half[k] = d.half[k];
  __syncthreads();
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int y = static_cast<int>(i / cols), x = static_cast<int>(i % cols);
    int v = Erode ? 255 : 0;
    const int y0 = y - d.radius < 0 ? 0 : y - d.radius;
    const int y1 = y + d.radius >= rows ? rows - 1 : y + d.radius;
    for (int yy = y0; yy <= y1; ++yy) {
      const int h = half[yy - y + d.radius];
      const int x0 = x - h < 0 ? 0 : x - h;
      const int x1 = x + h >= cols ? cols - 1 : x + h;
      for (int xx = x0; xx <= x1; ++xx) {
        const int s = src.at(yy, xx);
        v = Erode ? (s < v ? s : v) : (s > v ? s : v);
      }
    }
    dst.at(y, x) = static_cast<std::uint8_t>(v);
  }
}

// The dense scratch image as a source of the dilation pass.
struct Dense {
  const std::uint8_t* data;
  int cols;
  __device__ std::uint8_t at(int y, int x) const { return data[static_cast<long long>(y) * cols + x]; }
};

void check_rgb(const char* op, const ConstImage<std::uint8_t>& rgb, const Image<std::uint8_t>& out) {
  check_in(op, rgb);
  check_out(op, out);
  same_size(op, rgb, out);
}

}  // namespace

void tissue_mask(const Launch& l, ConstImage<std::uint8_t> rgb, int level, Image<std::uint8_t> out) {
  const char* op = "tissue_mask";
  check_rgb(op, rgb, out);
  const long long n = static_cast<long long>(rgb.rows) * rgb.cols;
  if (n == 0) return;
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  tissue_kernel<<<c.blocks(n), kThreads, 0, c.stream>>>(in_view(rgb), out_view(out), rgb.cols, n, 3 * level);
  c.launched("launching the kernel");
}

void rbc_mask(const Launch& l, ConstImage<std::uint8_t> rgb, int rg_q8, int rb_q8, int level, Image<std::uint8_t> out) {
  const char* op = "rbc_mask";
  check_rgb(op, rgb, out);
  const long long n = static_cast<long long>(rgb.rows) * rgb.cols;
  if (n == 0) return;
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  rbc_kernel<<<c.blocks(n), kThreads, 0, c.stream>>>(in_view(rgb), out_view(out), rgb.cols, n, rg_q8, rb_q8,
                                                     3 * level);
  c.launched("launching the kernel");
}

void deconvolve(const Launch& l, ConstImage<std::uint8_t> rgb, const StainWeights& sw, Image<std::uint8_t> out) {
  const char* op = "deconvolve";
  check_rgb(op, rgb, out);
  const long long n = static_cast<long long>(rgb.rows) * rgb.cols;
  if (n == 0) return;
  Stain st{};
  for (int k = 0; k < 3; ++k) st.w[k] = sw.w[static_cast<std::size_t>(k)];
  st.scale = sw.scale;
  for (int v = 0; v < 256; ++v) st.lut[v] = sw.lut[static_cast<std::size_t>(v)];
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  deconvolve_kernel<<<c.blocks(n), kThreads, 0, c.stream>>>(in_view(rgb), out_view(out), rgb.cols, n, st);
  c.launched("launching the kernel");
}

void open(const Launch& l, ConstImage<std::uint8_t> grey, const std::vector<int>& half_widths, Image<std::uint8_t> out) {
  const char* op = "open";
  check_in(op, grey);
  check_out(op, out);
  same_size(op, grey, out);
  const std::size_t h = half_widths.size();
  if (h % 2 != 1 || h > 2 * kMaxRadius + 1)
    fail(op, "half_widths must have 2r+1 entries with r <= " + std::to_string(kMaxRadius) + ", got " +
                 std::to_string(h));
  Disk d{};
  d.radius = static_cast<int>(h / 2);
  for (std::size_t k = 0; k < h; ++k) {
    if (half_widths[k] < 0 || half_widths[k] > d.radius) fail(op, "a half width outside [0, r]");
    d.half[k] = half_widths[k];
  }
  const long long n = static_cast<long long>(grey.rows) * grey.cols;
  if (n == 0) return;
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  auto* eroded = c.alloc<std::uint8_t>(n);
  morph_kernel<true><<<c.blocks(n), kThreads, 0, c.stream>>>(in_view(grey), Out<std::uint8_t>{eroded, grey.cols},
                                                              grey.rows, grey.cols, n, d);
  c.launched("launching the erosion");
  morph_kernel<false><<<c.blocks(n), kThreads, 0, c.stream>>>(Dense{eroded, grey.cols}, out_view(out), grey.rows,
                                                               grey.cols, n, d);
  c.launched("launching the dilation");
}

int device_count(std::string* why_none) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // not sticky, but leave no error behind for the next caller
    if (why_none) *why_none = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return 0;
  }
  if (n == 0 && why_none) *why_none = "the CUDA driver reports no device";
  return n;
}

}  // namespace flowd::nuclei::gpu

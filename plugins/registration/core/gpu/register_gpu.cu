#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/device_scope.cuh"
#include "kernels.hpp"
#include "register_gpu.hpp"

namespace flowd::registration::gpu {

namespace {

constexpr const char* who = "registration";

void check(cudaError_t e, const char* what) { flowd::cuda::check(e, who, what); }

struct Free {
  void operator()(void* p) const noexcept { static_cast<void>(cudaFree(p)); }
};

template <class T>
class Buffer {
public:
  Buffer() = default;
  explicit Buffer(std::size_t n) : n_(n) {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
    p_.reset(p);
  }
  T* get() const noexcept { return static_cast<T*>(p_.get()); }
  std::size_t size() const noexcept { return n_; }

private:
  std::unique_ptr<void, Free> p_;
  std::size_t n_ = 0;
};

struct DevPlane {
  Buffer<float> data;
  int w = 0, h = 0;
};

DevPlane make_plane(int w, int h) {
  return {Buffer<float>(static_cast<std::size_t>(w) * static_cast<std::size_t>(h)), w, h};
}

__device__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// gaussian_blur: rows then columns, taps centred on `centre`.
__global__ void blur_rows(const float* in, float* out, int w, int h, const float* taps, int k, int centre) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const float* src = in + static_cast<std::ptrdiff_t>(y) * w;
  float s = 0.0f;
  for (int t = 0; t < k; ++t)
    s += taps[t] * src[clampi(x + t - centre, 0, w - 1)];
  out[static_cast<std::ptrdiff_t>(y) * w + x] = s;
}

__global__ void blur_cols(const float* in, float* out, int w, int h, const float* taps, int k, int centre) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float s = 0.0f;
  for (int t = 0; t < k; ++t)
    s += taps[t] * in[static_cast<std::ptrdiff_t>(clampi(y + t - centre, 0, h - 1)) * w + x];
  out[static_cast<std::ptrdiff_t>(y) * w + x] = s;
}

// pyramid_down: the binomial [1 5 10 10 5 1]/32 at 2i - 2 ... 2i + 3.
__constant__ float down_taps[6] = {1.0f / 32, 5.0f / 32, 10.0f / 32, 10.0f / 32, 5.0f / 32, 1.0f / 32};

__global__ void down_rows(const float* in, float* out, int win, int h, int wout) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= wout || y >= h) return;
  const float* src = in + static_cast<std::ptrdiff_t>(y) * win;
  float s = 0.0f;
  for (int t = 0; t < 6; ++t)
    s += down_taps[t] * src[clampi(2 * x - 2 + t, 0, win - 1)];
  out[static_cast<std::ptrdiff_t>(y) * wout + x] = s;
}

__global__ void down_cols(const float* in, float* out, int w, int hin, int hout) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= hout) return;
  float s = 0.0f;
  for (int t = 0; t < 6; ++t)
    s += down_taps[t] * in[static_cast<std::ptrdiff_t>(clampi(2 * y - 2 + t, 0, hin - 1)) * w + x];
  out[static_cast<std::ptrdiff_t>(y) * w + x] = s;
}

__global__ void gradient_kernel(const float* in, float* gx, float* gy, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const float* src = in + static_cast<std::ptrdiff_t>(y) * w;
  const float* up = in + static_cast<std::ptrdiff_t>(max(y - 1, 0)) * w;
  const float* down = in + static_cast<std::ptrdiff_t>(min(y + 1, h - 1)) * w;
  const float dy_scale = (y == 0 || y == h - 1) ? 1.0f : 0.5f;
  const int l = max(x - 1, 0), r = min(x + 1, w - 1);
  const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(y) * w + x;
  gx[o] = (r - l) > 0 ? (src[r] - src[l]) / static_cast<float>(r - l) : 0.0f;
  gy[o] = h > 1 ? (down[x] - up[x]) * dy_scale : 0.0f;
}

// The 21 sums of NccSums, in its field order.
constexpr int n_sums = 21;
constexpr int sums_threads = 256;
constexpr int sums_blocks = 240;

struct WarpArgs {
  double c, s, cx, cy, tx, ty;
};

__device__ double warp_sum(double v) {
  for (int off = 16; off > 0; off /= 2)
    v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

// ncc_sums: a grid-stride loop over the reference's pixels, each pixel's
// terms as on the CPU, reduced per block (warp shuffles, then the warps);
// one row of n_sums partials per block, summed on the host.
__global__ void sums_kernel(const float* ref, int rw, int rh, const float* tmpl, const float* gxp, const float* gyp,
                            int tw, int th, WarpArgs p, bool jac, double* partials) {
  double acc[n_sums];
  for (int i = 0; i < n_sums; ++i)
    acc[i] = 0.0;
  const double xmax = tw - 1, ymax = th - 1;
  const long long total = static_cast<long long>(rw) * rh;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int y = static_cast<int>(i / rw), x = static_cast<int>(i % rw);
    const double dy = y - p.cy;
    const double px = p.cx + p.c * (0.0 - p.cx) - p.s * dy + p.tx;
    const double py = p.cy + p.s * (0.0 - p.cx) + p.c * dy + p.ty;
    const double qx = px + p.c * x, qy = py + p.s * x;
    if (qx < 0.0 || qy < 0.0 || qx > xmax || qy > ymax) continue;
    const int ix = min(static_cast<int>(qx), tw - 2 < 0 ? 0 : tw - 2);
    const int iy = min(static_cast<int>(qy), th - 2 < 0 ? 0 : th - 2);
    const double fx = qx - ix, fy = qy - iy;
    const double w00 = (1 - fx) * (1 - fy), w10 = fx * (1 - fy), w01 = (1 - fx) * fy, w11 = fx * fy;
    const long long o = static_cast<long long>(iy) * tw + ix;
    const int ox = tw > 1 ? 1 : 0, oy = th > 1 ? tw : 0;
    auto sample = [&](const float* d) { return w00 * d[o] + w10 * d[o + ox] + w01 * d[o + oy] + w11 * d[o + ox + oy]; };
    const double r = ref[i];
    const double v = sample(tmpl);
    acc[0] += 1;
    acc[1] += r;
    acc[2] += r * r;
    acc[3] += v;
    acc[4] += v * v;
    acc[5] += r * v;
    if (!jac) continue;
    const double g_x = sample(gxp), g_y = sample(gyp);
    const double ja = -g_x * (qy - p.cy - p.ty) + g_y * (qx - p.cx - p.tx);
    const double jv[3] = {ja, g_x, g_y};
    for (int k = 0; k < 3; ++k) {
      acc[6 + k] += jv[k];
      acc[9 + k] += jv[k] * v;
      acc[12 + k] += jv[k] * r;
    }
    acc[15] += ja * ja;
    acc[16] += ja * g_x;
    acc[17] += ja * g_y;
    acc[18] += g_x * g_x;
    acc[19] += g_x * g_y;
    acc[20] += g_y * g_y;
  }
  __shared__ double warps[sums_threads / 32][n_sums];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int k = 0; k < n_sums; ++k) {
    const double v = warp_sum(acc[k]);
    if (lane == 0) warps[warp][k] = v;
  }
  __syncthreads();
  if (threadIdx.x < n_sums) {
    double s = 0.0;
    for (int w = 0; w < sums_threads / 32; ++w)
      s += warps[w][threadIdx.x];
    partials[static_cast<std::size_t>(blockIdx.x) * n_sums + threadIdx.x] = s;
  }
}

dim3 grid_for(int w, int h) { return dim3((w + 31) / 32, (h + 7) / 8); }
const dim3 block2d(32, 8);

void launched(const char* what) { check(cudaGetLastError(), what); }

}  // namespace

struct DevicePyramid::Impl {
  int width = 0, height = 0;
  int device = 0;
  cudaStream_t stream = nullptr;  // what the pyramid was built on; its sums run there too
  std::vector<DevPlane> image, gx, gy;
};

int device_count(std::string* why) { return flowd::cuda::device_count(why); }

namespace {

// The frame as contiguous floats, as frame_image() converts on the host.
template <class T>
__global__ void to_float(const T* in, std::ptrdiff_t stride, float* out, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  out[static_cast<std::ptrdiff_t>(y) * w + x] = static_cast<float>(in[static_cast<std::ptrdiff_t>(y) * stride + x]);
}

// Level 0 (smoothed when options.smooth > 0), the levels below and every
// level's gradients, from the frame as floats; all on `stream`.
void build(DevicePyramid::Impl& m, DevPlane raw, const PyramidOptions& options) {
  const cudaStream_t st = m.stream;
  const int n = Pyramid::level_count(m.width, m.height, options);
  if (options.smooth > 0.0) {
    const std::vector<float> taps = gaussian_taps(options.smooth);
    Buffer<float> dtaps(taps.size());
    check(cudaMemcpyAsync(dtaps.get(), taps.data(), taps.size() * sizeof(float), cudaMemcpyHostToDevice, st),
          "uploading taps");
    const int k = static_cast<int>(taps.size()), centre = k / 2;
    DevPlane tmp = make_plane(m.width, m.height), out = make_plane(m.width, m.height);
    blur_rows<<<grid_for(m.width, m.height), block2d, 0, st>>>(raw.data.get(), tmp.data.get(), m.width, m.height,
                                                               dtaps.get(), k, centre);
    launched("blur_rows");
    blur_cols<<<grid_for(m.width, m.height), block2d, 0, st>>>(tmp.data.get(), out.data.get(), m.width, m.height,
                                                               dtaps.get(), k, centre);
    launched("blur_cols");
    // The temporaries are freed on return: cudaFree waits for the device.
    m.image.push_back(std::move(out));
  } else {
    m.image.push_back(std::move(raw));
  }
  for (int l = 1; l < n; ++l) {
    const DevPlane& prev = m.image.back();
    const int w = prev.w / 2, h = prev.h / 2;
    DevPlane half = make_plane(w, prev.h), out = make_plane(w, h);
    down_rows<<<grid_for(w, prev.h), block2d, 0, st>>>(prev.data.get(), half.data.get(), prev.w, prev.h, w);
    launched("down_rows");
    down_cols<<<grid_for(w, h), block2d, 0, st>>>(half.data.get(), out.data.get(), w, prev.h, h);
    launched("down_cols");
    m.image.push_back(std::move(out));
  }
  for (const DevPlane& p : m.image) {
    DevPlane gx = make_plane(p.w, p.h), gy = make_plane(p.w, p.h);
    gradient_kernel<<<grid_for(p.w, p.h), block2d, 0, st>>>(p.data.get(), gx.data.get(), gy.data.get(), p.w, p.h);
    launched("gradient");
    m.gx.push_back(std::move(gx));
    m.gy.push_back(std::move(gy));
  }
}

}  // namespace

DevicePyramid::DevicePyramid(const ImageView& frame, const PyramidOptions& options, void* stream)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.width = frame.width;
  m.height = frame.height;
  m.stream = static_cast<cudaStream_t>(stream);
  check(cudaGetDevice(&m.device), "cudaGetDevice");
  // Uploaded row by row (its stride may differ); waited for before the host
  // frame may go away.
  DevPlane raw = make_plane(frame.width, frame.height);
  check(cudaMemcpy2DAsync(raw.data.get(), sizeof(float) * static_cast<std::size_t>(frame.width), frame.data,
                          sizeof(float) * static_cast<std::size_t>(frame.stride),
                          sizeof(float) * static_cast<std::size_t>(frame.width),
                          static_cast<std::size_t>(frame.height), cudaMemcpyHostToDevice, m.stream),
        "uploading a frame");
  check(cudaStreamSynchronize(m.stream), "uploading a frame");
  build(m, std::move(raw), options);
}

DevicePyramid::DevicePyramid(const DeviceFrame& frame, const PyramidOptions& options, void* stream)
    : impl_(std::make_unique<Impl>()) {
  if (frame.width < 1 || frame.height < 1 || frame.stride < frame.width)
    throw std::invalid_argument("device frame " + std::to_string(frame.width) + "x" + std::to_string(frame.height) +
                                " with row stride " + std::to_string(frame.stride));
  Impl& m = *impl_;
  m.width = frame.width;
  m.height = frame.height;
  m.device = frame.device;
  m.stream = static_cast<cudaStream_t>(stream);
  const flowd::cuda::DeviceScope on(m.device, who);
  DevPlane raw = make_plane(frame.width, frame.height);
  const dim3 grid = grid_for(frame.width, frame.height);
  switch (frame.pixel) {
    case DeviceFrame::Pixel::u8:
      to_float<<<grid, block2d, 0, m.stream>>>(static_cast<const std::uint8_t*>(frame.data), frame.stride,
                                               raw.data.get(), frame.width, frame.height);
      break;
    case DeviceFrame::Pixel::u16:
      to_float<<<grid, block2d, 0, m.stream>>>(static_cast<const std::uint16_t*>(frame.data), frame.stride,
                                               raw.data.get(), frame.width, frame.height);
      break;
    case DeviceFrame::Pixel::f32:
      to_float<<<grid, block2d, 0, m.stream>>>(static_cast<const float*>(frame.data), frame.stride, raw.data.get(),
                                               frame.width, frame.height);
      break;
  }
  launched("to_float");
  build(m, std::move(raw), options);
}

DevicePyramid::~DevicePyramid() = default;
DevicePyramid::DevicePyramid(DevicePyramid&&) noexcept = default;
DevicePyramid& DevicePyramid::operator=(DevicePyramid&&) noexcept = default;

int DevicePyramid::levels() const noexcept { return static_cast<int>(impl_->image.size()); }
int DevicePyramid::width() const noexcept { return impl_->width; }
int DevicePyramid::height() const noexcept { return impl_->height; }

Image DevicePyramid::download(int level, Plane plane) const {
  const flowd::cuda::DeviceScope on(impl_->device, who);
  const auto l = static_cast<std::size_t>(level);
  const auto& src = plane == Plane::image ? impl_->image.at(l) : plane == Plane::gx ? impl_->gx.at(l) : impl_->gy.at(l);
  Image out(src.w, src.h);
  check(cudaMemcpyAsync(out.data(), src.data.get(), sizeof(float) * src.data.size(), cudaMemcpyDeviceToHost,
                        impl_->stream),
        "download");
  check(cudaStreamSynchronize(impl_->stream), "download");
  return out;
}

namespace {

// The per-block partial sums of sums_kernel, reused across the calls of one
// registration (an allocation per call would cost a device-wide wait).
class Partials {
public:
  Partials() : device_(static_cast<std::size_t>(sums_blocks) * n_sums), host_(device_.size()) {}

  NccSums sums(const DevicePyramid& reference, const DevicePyramid& tmpl, int level, const WarpParams& p,
               bool with_jacobian) {
    const auto l = static_cast<std::size_t>(level);
    const auto& r = reference.impl().image.at(l);
    const auto& t = tmpl.impl().image.at(l);
    const cudaStream_t st = reference.impl().stream;
    const flowd::cuda::DeviceScope on(reference.impl().device, who);
    sums_kernel<<<sums_blocks, sums_threads, 0, st>>>(
        r.data.get(), r.w, r.h, t.data.get(), tmpl.impl().gx.at(l).data.get(), tmpl.impl().gy.at(l).data.get(), t.w,
        t.h, WarpArgs{p.cos_a, p.sin_a, p.cx, p.cy, p.tx, p.ty}, with_jacobian, device_.get());
    launched("ncc_sums");
    check(cudaMemcpyAsync(host_.data(), device_.get(), host_.size() * sizeof(double), cudaMemcpyDeviceToHost, st),
          "ncc_sums");
    check(cudaStreamSynchronize(st), "ncc_sums");
    double s[n_sums] = {};
    for (int b = 0; b < sums_blocks; ++b)
      for (int k = 0; k < n_sums; ++k)
        s[k] += host_[static_cast<std::size_t>(b) * n_sums + static_cast<std::size_t>(k)];
    NccSums out;
    out.n = s[0], out.r = s[1], out.rr = s[2], out.w = s[3], out.ww = s[4], out.rw = s[5];
    for (int k = 0; k < 3; ++k) {
      out.j[k] = s[6 + k];
      out.jw[k] = s[9 + k];
      out.jr[k] = s[12 + k];
    }
    for (int k = 0; k < 6; ++k)
      out.jj[k] = s[15 + k];
    return out;
  }

private:
  Buffer<double> device_;
  std::vector<double> host_;
};

}  // namespace

NccSums ncc_sums(const DevicePyramid& reference, const DevicePyramid& tmpl, int level, const WarpParams& p,
                 bool with_jacobian) {
  return Partials().sums(reference, tmpl, level, p, with_jacobian);
}

namespace {

class GpuPair final : public LevelSums {
public:
  GpuPair(const DevicePyramid& reference, const DevicePyramid& tmpl) : ref_(reference), tmpl_(tmpl) {}
  int levels() const override { return std::min(ref_.levels(), tmpl_.levels()); }
  int frame_width() const override { return ref_.width(); }
  int frame_height() const override { return ref_.height(); }
  int level_pixels(int level) const override {
    const auto& p = ref_.impl().image.at(static_cast<std::size_t>(level));
    return p.w * p.h;
  }
  NccSums sums(int level, const WarpParams& p, bool with_jacobian) const override {
    return partials_.sums(ref_, tmpl_, level, p, with_jacobian);
  }

private:
  mutable Partials partials_;
  const DevicePyramid& ref_;
  const DevicePyramid& tmpl_;
};

}  // namespace

Result register_pair(const DevicePyramid& reference, const DevicePyramid& tmpl, const Rigid& initial,
                     const Options& options) {
  if (reference.width() != tmpl.width() || reference.height() != tmpl.height())
    throw std::invalid_argument("frames of different sizes: " + std::to_string(reference.width()) + "x" +
                                std::to_string(reference.height()) + " and " + std::to_string(tmpl.width()) + "x" +
                                std::to_string(tmpl.height()));
  const flowd::cuda::DeviceScope on(reference.impl().device, who);
  return optimise(GpuPair(reference, tmpl), initial, options);
}

}  // namespace flowd::registration::gpu

// The kernels of the PRNU core's CUDA twin (prnu_gpu_device.hpp). Each
// mirrors a CPU function of ../filters.cpp or ../compare.cpp; the comments
// name it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cufft.h>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cuda/device_scope.cuh>

#include "prnu_gpu_device.hpp"

namespace flowd::prnu::gpu {

namespace {

constexpr const char* kWho = "prnu";

void check(cudaError_t e, const char* what) { flowd::cuda::check(e, kWho, what); }

void check_fft(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS)
    throw std::runtime_error(std::string("prnu on the GPU: ") + what + " failed: cuFFT error " +
                             std::to_string(static_cast<int>(r)));
}

void check_launch(const char* what) { check(cudaGetLastError(), what); }

constexpr int kThreads = 256;
// The reductions run on a fixed grid (the same partial sums, hence the same
// bits, on every device).
constexpr int kReduceBlocks = 1024;

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 1u << 30));
}

// ---------------------------------------------------------------------------
// Block reductions of doubles (shared memory, a fixed tree: deterministic).

template <int N>
__device__ void block_sum(double (&v)[N], double (*shared)[kThreads]) {
  const int t = threadIdx.x;
  for (int k = 0; k < N; ++k)
    shared[k][t] = v[k];
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride)
      for (int k = 0; k < N; ++k)
        shared[k][t] += shared[k][t + stride];
    __syncthreads();
  }
  for (int k = 0; k < N; ++k)
    v[k] = shared[k][0];
}

// out[k] = sum over blocks of partials[b * N + k] (one block).
template <int N>
__global__ void k_reduce(const double* partials, int blocks, double* out) {
  __shared__ double shared[N][kThreads];
  double v[N] = {};
  for (int b = threadIdx.x; b < blocks; b += kThreads)
    for (int k = 0; k < N; ++k)
      v[k] += partials[static_cast<std::size_t>(b) * N + k];
  block_sum<N>(v, shared);
  if (threadIdx.x == 0)
    for (int k = 0; k < N; ++k)
      out[k] = v[k];
}

// ---------------------------------------------------------------------------
// residual_nfi: grey_nfi, fast_noise, zero_mean_total, nfi_noise_variance,
// wiener_dft.

// grey_nfi (weighted_grey): 0.299 R + 0.587 G + 0.114 B, left to right.
__global__ void k_grey(const float* rgb, int channels, std::size_t n, float* grey) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  if (channels == 1) {
    grey[i] = rgb[i];
    return;
  }
  const float* p = rgb + 3 * i;
  grey[i] = 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
}

// FastNoise's derivative at i of n samples `stride` apart (derivative()).
__device__ float derivative_at(const float* v, int i, int n, std::size_t stride) {
  if (n == 1) return 0.0f;
  if (i == 0) return v[stride] - v[0];
  if (i == n - 1) return v[(n - 1) * stride] - v[(n - 2) * stride];
  return 0.5f * (v[(i + 1) * stride] - v[(i - 1) * stride]);
}

// The scaled gradient of fast_noise_rows' scaled_row.
__global__ void k_gradient(const float* grey, int w, int h, float* sdx, float* sdy) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w) return;
  for (int y = blockIdx.y; y < h; y += gridDim.y) {
    const std::size_t row = static_cast<std::size_t>(y) * w;
    const float dx = derivative_at(grey + row, x, w, 1);
    float dy = 0.0f;
    if (h > 1) {
      const int below = y == h - 1 ? y : y + 1;
      const int above = y == 0 ? 0 : y - 1;
      const float scale = (y == 0 || y == h - 1) ? 1.0f : 0.5f;
      dy = scale * (grey[static_cast<std::size_t>(below) * w + x] - grey[static_cast<std::size_t>(above) * w + x]);
    }
    const float s = 1.0f / (1.0f + sqrtf(dx * dx + dy * dy));
    sdx[row + x] = dx * s;
    sdy[row + x] = dy * s;
  }
}

// The divergence of fast_noise_rows' output_row.
__global__ void k_divergence(const float* sdx, const float* sdy, int w, int h, float* out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w) return;
  for (int y = blockIdx.y; y < h; y += gridDim.y) {
    const std::size_t row = static_cast<std::size_t>(y) * w;
    float v = derivative_at(sdx + row, x, w, 1);
    if (h > 1) {
      const int below = y == h - 1 ? y : y + 1;
      const int above = y == 0 ? 0 : y - 1;
      const float scale = (y == 0 || y == h - 1) ? 1.0f : 0.5f;
      v = v + scale * (sdy[static_cast<std::size_t>(below) * w + x] - sdy[static_cast<std::size_t>(above) * w + x]);
    }
    out[row + x] = v;
  }
}

// ZeroMeanTotal's row step (zero_mean_row): the even and odd means of each
// row (one block per row), subtracted in place.
__global__ void k_row_zero_mean(float* p, int w) {
  __shared__ double shared[2][kThreads];
  float* row = p + static_cast<std::size_t>(blockIdx.x) * w;
  double v[2] = {0.0, 0.0};
  for (int x = threadIdx.x; x < w; x += kThreads)
    v[x & 1] += row[x];
  block_sum<2>(v, shared);
  const int count[2] = {(w + 1) / 2, w / 2};
  const float mean[2] = {static_cast<float>(v[0] / count[0]), count[1] ? static_cast<float>(v[1] / count[1]) : 0.0f};
  for (int x = threadIdx.x; x < w; x += kThreads)
    row[x] -= mean[x & 1];
}

// Its column step (column_means): thread x sums column x over the even and
// the odd rows.
__global__ void k_column_means(const float* p, int w, int h, float* mean) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w) return;
  double sum[2] = {0.0, 0.0};
  for (int y = 0; y < h; ++y)
    sum[y & 1] += p[static_cast<std::size_t>(y) * w + x];
  const int count[2] = {(h + 1) / 2, h / 2};
  for (int parity = 0; parity < 2; ++parity)
    mean[parity * w + x] = count[parity] > 0 ? static_cast<float>(sum[parity] / count[parity]) : 0.0f;
}

// The column means subtracted, and the partial sums of squares of the result
// (nfi_noise_variance).
__global__ void k_column_zero_mean(float* p, int w, std::size_t n, const float* mean, double* partials) {
  __shared__ double shared[1][kThreads];
  double v[1] = {0.0};
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(kThreads) * gridDim.x) {
    const std::size_t y = i / w;
    const std::size_t x = i - y * w;
    const float r = p[i] - mean[(y & 1) * w + x];
    p[i] = r;
    v[0] += static_cast<double>(r) * r;
  }
  block_sum<1>(v, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = v[0];
}

// noise_var = sum / (n - 1) as float, on the device (no round trip).
__global__ void k_noise_variance(const double* sum, std::size_t n, float* noise_var) {
  *noise_var = n < 2 ? 0.0f : static_cast<float>(*sum / static_cast<double>(n - 1));
}

// The power half spectrum |F|^2 / N with four mirrored columns after each row
// (wiener_dft_into): P(y, x) = P(-y mod h, w - x), zero past the array.
__global__ void k_power(const float2* f, int w, int h, int hw, int stride, float inv_n, float* power) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= stride) return;
  for (int y = blockIdx.y; y < h; y += gridDim.y) {
    float v = 0.0f;
    if (x < hw) {
      const float2 c = f[static_cast<std::size_t>(y) * hw + x];
      v = (c.x * c.x + c.y * c.y) * inv_n;
    } else if (x < w) {
      const float2 c = f[static_cast<std::size_t>((h - y) % h) * hw + (w - x)];
      v = (c.x * c.x + c.y * c.y) * inv_n;
    }
    power[static_cast<std::size_t>(y) * stride + x] = v;
  }
}

// The estimate at k (min_local_mean's estimate_row, same order: column sums
// over rows y-1, y, y+1, then y-2, y+2, ...; window sums left to right;
// absent rows and columns count as the zeros the CPU pads with).
__device__ float estimate_at(const float* p, int stride, int h, int y, int x) {
  float col[4][9];  // col[R-1][dx+4]: the column sum over 2R+1 rows
  for (int dx = -4; dx <= 4; ++dx) {
    const int i = x + dx;
    float r[9];
    for (int dy = -4; dy <= 4; ++dy) {
      const int j = y + dy;
      r[dy + 4] = (i >= 0 && i < stride && j >= 0 && j < h) ? p[static_cast<std::size_t>(j) * stride + i] : 0.0f;
    }
    float c = (r[3] + r[4]) + r[5];
    col[0][dx + 4] = c;
    for (int half = 2; half <= 4; ++half) {
      c = (c + r[4 - half]) + r[4 + half];
      col[half - 1][dx + 4] = c;
    }
  }
  float best = 0.0f;
  for (int half = 1; half <= 4; ++half) {
    float s = col[half - 1][4 - half];
    for (int d = -half + 1; d <= half; ++d)
      s += col[half - 1][4 + d];
    const float mean = s * (1.0f / static_cast<float>((2 * half + 1) * (2 * half + 1)));
    best = half == 1 ? mean : fminf(best, mean);
  }
  return best;
}

// The estimate at -k for samples near a border (mirrored_estimate).
__device__ float mirrored_estimate_at(const float* p, int stride, int w, int h, int y, int x) {
  const int hw = w / 2 + 1;
  const int row_lo = y == 0 ? 1 - h : 1, row_hi = y == 0 ? 0 : h;
  const int col_lo = x == 0 ? 1 - w : 1, col_hi = x == 0 ? 0 : w;
  float v[9][9];
  for (int dy = -4; dy <= 4; ++dy) {
    const int j = y + dy;
    for (int dx = -4; dx <= 4; ++dx) {
      const int i = x + dx;
      float value = 0.0f;
      if (j >= row_lo && j <= row_hi && i >= col_lo && i <= col_hi) {
        const int jm = (j % h + h) % h;
        const int im = (i % w + w) % w;
        value = im < hw ? p[static_cast<std::size_t>(jm) * stride + im]
                        : p[static_cast<std::size_t>((h - jm) % h) * stride + (w - im)];
      }
      v[dy + 4][dx + 4] = value;
    }
  }
  float best = 0.0f;
  for (int half = 1; half <= 4; ++half) {
    float s = 0.0f;
    for (int dx = -half; dx <= half; ++dx) {
      float col = 0.0f;
      for (int dy = -half; dy <= half; ++dy)
        col += v[dy + 4][dx + 4];
      s += col;
    }
    const float mean = s * (1.0f / static_cast<float>((2 * half + 1) * (2 * half + 1)));
    best = half == 1 ? mean : fminf(best, mean);
  }
  return best;
}

// F *= (g(k) + g(-k)) / 2, g = nv / max(nv, estimate), then the 1/N of the
// inverse; zeros when the noise variance is not positive.
__global__ void k_wiener_gain(float2* f, const float* power, int w, int h, int hw, int stride, const float* noise_var,
                              float inv_n) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= hw) return;
  const float nv = *noise_var;
  for (int y = blockIdx.y; y < h; y += gridDim.y) {
    float2& c = f[static_cast<std::size_t>(y) * hw + x];
    if (!(nv > 0.0f)) {
      c = make_float2(0.0f, 0.0f);
      continue;
    }
    const float e = estimate_at(power, stride, h, y, x);
    float g = nv / (nv < e ? e : nv);
    const bool border = y - 4 <= 0 || y + 4 >= h || x - 4 <= 0 || x + 4 >= w;
    if (border) {
      const float em = mirrored_estimate_at(power, stride, w, h, y, x);
      g = 0.5f * (g + nv / (nv < em ? em : nv));
    }
    c.x = c.x * g * inv_n;
    c.y = c.y * g * inv_n;
  }
}

// ---------------------------------------------------------------------------
// ncc, crosscorr_2d, pce.

__global__ void k_ncc_partials(const float* a, const float* b, std::size_t n, bool vector4, double* partials) {
  __shared__ double shared[3][kThreads];
  double v[3] = {0.0, 0.0, 0.0};
  const std::size_t step = static_cast<std::size_t>(kThreads) * gridDim.x;
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x;
  std::size_t tail = 0;
  if (vector4) {
    const auto* a4 = reinterpret_cast<const float4*>(a);
    const auto* b4 = reinterpret_cast<const float4*>(b);
    const std::size_t n4 = n / 4;
    for (std::size_t i = first; i < n4; i += step) {
      const float4 x = a4[i];
      const float4 y = b4[i];
      v[0] += static_cast<double>(x.x) * y.x + static_cast<double>(x.y) * y.y + static_cast<double>(x.z) * y.z +
              static_cast<double>(x.w) * y.w;
      v[1] += static_cast<double>(x.x) * x.x + static_cast<double>(x.y) * x.y + static_cast<double>(x.z) * x.z +
              static_cast<double>(x.w) * x.w;
      v[2] += static_cast<double>(y.x) * y.x + static_cast<double>(y.y) * y.y + static_cast<double>(y.z) * y.z +
              static_cast<double>(y.w) * y.w;
    }
    tail = n4 * 4;
  }
  for (std::size_t i = tail + first; i < n; i += step) {
    const double x = a[i];
    const double y = b[i];
    v[0] += x * y;
    v[1] += x * x;
    v[2] += y * y;
  }
  block_sum<3>(v, shared);
  if (threadIdx.x == 0)
    for (int k = 0; k < 3; ++k)
      partials[blockIdx.x * 3 + k] = v[k];
}

__global__ void k_sum_partials(const float* a, std::size_t n, double* partials) {
  __shared__ double shared[1][kThreads];
  double v[1] = {0.0};
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(kThreads) * gridDim.x)
    v[0] += a[i];
  block_sum<1>(v, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = v[0];
}

// real = a - mean(a), the mean (float, as the CPU's) from the device sum.
__global__ void k_minus_mean(const float* a, std::size_t n, const double* sum, float* out) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a[i] - static_cast<float>(*sum / static_cast<double>(n));
}

// fa = fa * conj(fb) / N.
// rotate_ccw applied twice (../geometry.cpp): element (x, y) of the result
// is (w-1-x, h-1-y) of the input, i.e. the samples in reverse order.
__global__ void k_rotate_180(const float* in, std::size_t n, float* out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = in[n - 1 - i];
}

__global__ void k_cross_spectrum(float2* fa, const float2* fb, std::size_t n, float inv_n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float2 p = fa[i];
  const float2 q = fb[i];
  fa[i] = make_float2((p.x * q.x + p.y * q.y) * inv_n, (p.y * q.x - p.x * q.y) * inv_n);
}

// The search window of pce: shifts (dx, dy) in [-rx, rx] x [-ry, ry], row by
// row from the top.
__global__ void k_gather_window(const float* cc, int w, int h, int rx, int ry, float* out) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const int side = 2 * rx + 1;
  if (k >= side * (2 * ry + 1)) return;
  const int dx = k % side - rx;
  const int dy = k / side - ry;
  const int x = ((dx % w) + w) % w;
  const int y = ((dy % h) + h) % h;
  out[k] = cc[static_cast<std::size_t>(y) * w + x];
}

__device__ int signed_shift(int index, int size) { return index <= size / 2 ? index : index - size; }

// The energy sum of pce: C^2 outside the box (bx x by) around (px, py),
// wrapped round the borders.
__global__ void k_energy_partials(const float* cc, int w, int h, int px, int py, int half, int bx, int by,
                                  double* partials) {
  __shared__ double shared[1][kThreads];
  double v[1] = {0.0};
  const std::size_t n = static_cast<std::size_t>(w) * h;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(kThreads) * gridDim.x) {
    const int y = static_cast<int>(i / w);
    const int x = static_cast<int>(i - static_cast<std::size_t>(y) * w);
    const bool row_in = by == h || abs(signed_shift(((y - py) % h + h) % h, h)) <= half;
    const bool col_in = bx == w || abs(signed_shift(((x - px) % w + w) % w, w)) <= half;
    if (row_in && col_in) continue;
    const double c = cc[i];
    v[0] += c * c;
  }
  block_sum<1>(v, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = v[0];
}

// ---------------------------------------------------------------------------

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

// A device allocation of bytes, grown on demand (contents not kept).
struct Scratch {
  void* data = nullptr;
  std::size_t bytes = 0;
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (data != nullptr) static_cast<void>(cudaFree(data));
  }
  template <class T>
  T* get(std::size_t count) {
    const std::size_t need = std::max<std::size_t>(count, 1) * sizeof(T);
    if (need > bytes) {
      if (data != nullptr) check(cudaFree(data), "cudaFree");
      data = nullptr;
      bytes = 0;
      check(cudaMalloc(&data, need), "cudaMalloc");
      bytes = need;
    }
    return static_cast<T*>(data);
  }
};

}  // namespace

struct GpuPlans::Impl {
  int device = 0;
  struct Fft {
    cufftHandle r2c = 0, c2r = 0;
  };
  std::map<std::pair<int, int>, Fft> ffts;
  // Scratch: named by use; a call takes what it needs, sizes grow.
  Scratch grey, sdx, sdy, spectrum, spectrum2, power, means, partials, scalars, window;

  ~Impl() {
    int previous = 0;
    const bool switched =
        cudaGetDevice(&previous) == cudaSuccess && previous != device && cudaSetDevice(device) == cudaSuccess;
    for (auto& [size, f] : ffts) {
      static_cast<void>(cufftDestroy(f.r2c));
      static_cast<void>(cufftDestroy(f.c2r));
    }
    if (switched) static_cast<void>(cudaSetDevice(previous));
  }

  // cuFFT plans for width x height (rows of width reals, row-major), on
  // `stream` for this call.
  const Fft& fft(int w, int h, cudaStream_t stream) {
    auto it = ffts.find({w, h});
    if (it == ffts.end()) {
      Fft f;
      check_fft(cufftPlan2d(&f.r2c, h, w, CUFFT_R2C), "cufftPlan2d (R2C)");
      const cufftResult r = cufftPlan2d(&f.c2r, h, w, CUFFT_C2R);
      if (r != CUFFT_SUCCESS) {
        static_cast<void>(cufftDestroy(f.r2c));
        check_fft(r, "cufftPlan2d (C2R)");
      }
      it = ffts.emplace(std::make_pair(w, h), f).first;
    }
    check_fft(cufftSetStream(it->second.r2c, stream), "cufftSetStream");
    check_fft(cufftSetStream(it->second.c2r, stream), "cufftSetStream");
    return it->second;
  }
};

int device_count(std::string* why) { return flowd::cuda::device_count(why); }

GpuPlans::GpuPlans(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device < 0 ? current_device() : device;
}
GpuPlans::~GpuPlans() = default;
int GpuPlans::device() const noexcept { return impl_->device; }
std::size_t GpuPlans::cached_sizes() const noexcept { return impl_->ffts.size(); }

DeviceBuffer::DeviceBuffer(std::size_t count) : size_(count) {
  check(cudaMalloc(reinterpret_cast<void**>(&data_), std::max<std::size_t>(count, 1) * sizeof(float)), "cudaMalloc");
}
DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) static_cast<void>(cudaFree(data_));
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) static_cast<void>(cudaFree(data_));
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}
void DeviceBuffer::upload(const float* host, std::size_t count, cudaStream_t stream) {
  if (count > size_)
    throw std::invalid_argument("prnu gpu: upload of " + std::to_string(count) + " floats to a buffer of " +
                                std::to_string(size_));
  check(cudaMemcpyAsync(data_, host, count * sizeof(float), cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync (upload)");
}
void DeviceBuffer::download(float* host, std::size_t count, cudaStream_t stream) const {
  if (count > size_)
    throw std::invalid_argument("prnu gpu: download of " + std::to_string(count) + " floats from a buffer of " +
                                std::to_string(size_));
  check(cudaMemcpyAsync(host, data_, count * sizeof(float), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (download)");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void residual_nfi(const float* rgb, int w, int h, int channels, float* out, GpuPlans& plans, cudaStream_t stream) {
  if (w < 1 || h < 1 || (channels != 1 && channels != 3))
    throw std::invalid_argument("prnu gpu residual_nfi: shape " + std::to_string(w) + "x" + std::to_string(h) + "x" +
                                std::to_string(channels));
  GpuPlans::Impl& p = plans.impl();
  flowd::cuda::DeviceScope scope(p.device, kWho);
  const std::size_t n = static_cast<std::size_t>(w) * h;
  const int hw = w / 2 + 1;
  const int stride = hw + 4;
  const float inv_n = 1.0f / static_cast<float>(n);
  float* grey = p.grey.get<float>(n);
  float* sdx = p.sdx.get<float>(n);
  float* sdy = p.sdy.get<float>(n);
  float2* spectrum = p.spectrum.get<float2>(static_cast<std::size_t>(h) * hw);
  float* power = p.power.get<float>(static_cast<std::size_t>(h) * stride);
  float* means = p.means.get<float>(2 * static_cast<std::size_t>(w));
  double* partials = p.partials.get<double>(kReduceBlocks);
  double* sum = p.scalars.get<double>(2);
  auto* noise_var = reinterpret_cast<float*>(sum + 1);
  const auto& fft = p.fft(w, h, stream);

  const unsigned grid_rows = static_cast<unsigned>(std::min(h, 65535));  // kernels loop over the rest
  const dim3 rows_grid((w + kThreads - 1) / kThreads, grid_rows);
  k_grey<<<blocks_for(n), kThreads, 0, stream>>>(rgb, channels, n, grey);
  check_launch("grey");
  k_gradient<<<rows_grid, kThreads, 0, stream>>>(grey, w, h, sdx, sdy);
  check_launch("fast_noise gradient");
  float* pattern = grey;  // the grey is no longer needed
  k_divergence<<<rows_grid, kThreads, 0, stream>>>(sdx, sdy, w, h, pattern);
  check_launch("fast_noise divergence");
  k_row_zero_mean<<<h, kThreads, 0, stream>>>(pattern, w);
  check_launch("zero_mean_total rows");
  k_column_means<<<(w + kThreads - 1) / kThreads, kThreads, 0, stream>>>(pattern, w, h, means);
  check_launch("zero_mean_total column means");
  k_column_zero_mean<<<kReduceBlocks, kThreads, 0, stream>>>(pattern, w, n, means, partials);
  check_launch("zero_mean_total columns");
  k_reduce<1><<<1, kThreads, 0, stream>>>(partials, kReduceBlocks, sum);
  check_launch("noise variance");
  k_noise_variance<<<1, 1, 0, stream>>>(sum, n, noise_var);
  check_launch("noise variance");

  check_fft(cufftExecR2C(fft.r2c, pattern, reinterpret_cast<cufftComplex*>(spectrum)), "cufftExecR2C");
  const dim3 power_grid((stride + kThreads - 1) / kThreads, grid_rows);
  k_power<<<power_grid, kThreads, 0, stream>>>(spectrum, w, h, hw, stride, inv_n, power);
  check_launch("wiener power");
  const dim3 gain_grid((hw + kThreads - 1) / kThreads, grid_rows);
  k_wiener_gain<<<gain_grid, kThreads, 0, stream>>>(spectrum, power, w, h, hw, stride, noise_var, inv_n);
  check_launch("wiener gain");
  check_fft(cufftExecC2R(fft.c2r, reinterpret_cast<cufftComplex*>(spectrum), out), "cufftExecC2R");
}

double ncc(const float* a, const float* b, std::size_t n, GpuPlans& plans, cudaStream_t stream) {
  GpuPlans::Impl& p = plans.impl();
  flowd::cuda::DeviceScope scope(p.device, kWho);
  double* partials = p.partials.get<double>(3 * kReduceBlocks);
  double* sums = p.scalars.get<double>(3);
  const bool vector4 = reinterpret_cast<std::uintptr_t>(a) % 16 == 0 && reinterpret_cast<std::uintptr_t>(b) % 16 == 0;
  k_ncc_partials<<<kReduceBlocks, kThreads, 0, stream>>>(a, b, n, vector4, partials);
  check_launch("ncc sums");
  k_reduce<3><<<1, kThreads, 0, stream>>>(partials, kReduceBlocks, sums);
  check_launch("ncc sums");
  double host[3] = {0.0, 0.0, 0.0};
  check(cudaMemcpyAsync(host, sums, sizeof host, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (ncc)");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const double den = std::sqrt(host[1] * host[2]);
  return den > 0.0 ? host[0] / den : 0.0;
}

void crosscorr_2d(const float* a, const float* b, int w, int h, float* cc, GpuPlans& plans, cudaStream_t stream) {
  if (w < 1 || h < 1)
    throw std::invalid_argument("prnu gpu crosscorr_2d: size " + std::to_string(w) + "x" + std::to_string(h));
  GpuPlans::Impl& p = plans.impl();
  flowd::cuda::DeviceScope scope(p.device, kWho);
  const std::size_t n = static_cast<std::size_t>(w) * h;
  const int hw = w / 2 + 1;
  const std::size_t half = static_cast<std::size_t>(h) * hw;
  float* real = p.grey.get<float>(n);
  float2* fa = p.spectrum.get<float2>(half);
  float2* fb = p.spectrum2.get<float2>(half);
  double* partials = p.partials.get<double>(kReduceBlocks);
  double* sums = p.scalars.get<double>(2);
  const auto& fft = p.fft(w, h, stream);
  const float* input[2] = {a, b};
  float2* spectra[2] = {fa, fb};
  for (int k = 0; k < 2; ++k) {
    k_sum_partials<<<kReduceBlocks, kThreads, 0, stream>>>(input[k], n, partials);
    check_launch("crosscorr mean");
    k_reduce<1><<<1, kThreads, 0, stream>>>(partials, kReduceBlocks, sums + k);
    check_launch("crosscorr mean");
    k_minus_mean<<<blocks_for(n), kThreads, 0, stream>>>(input[k], n, sums + k, real);
    check_launch("crosscorr mean");
    check_fft(cufftExecR2C(fft.r2c, real, reinterpret_cast<cufftComplex*>(spectra[k])), "cufftExecR2C");
  }
  k_cross_spectrum<<<blocks_for(half), kThreads, 0, stream>>>(fa, fb, half, 1.0f / static_cast<float>(n));
  check_launch("crosscorr spectrum");
  check_fft(cufftExecC2R(fft.c2r, reinterpret_cast<cufftComplex*>(fa), cc), "cufftExecC2R");
}

Pce pce(const float* cc, int w, int h, int neighbourhood, int search_radius, GpuPlans& plans, cudaStream_t stream) {
  if (w < 1 || h < 1 || neighbourhood < 1 || neighbourhood % 2 == 0 || search_radius < 0)
    throw std::invalid_argument("prnu gpu pce: the neighbourhood must be odd and positive, the search radius >= 0");
  GpuPlans::Impl& p = plans.impl();
  flowd::cuda::DeviceScope scope(p.device, kWho);
  // The peak: the search window comes to the host and is scanned as pce()
  // scans it (ties: the smaller ring, then the first in row order).
  const int ry = std::min(search_radius, h / 2);
  const int rx = std::min(search_radius, w / 2);
  const int side = 2 * rx + 1;
  const int count = side * (2 * ry + 1);
  float* window = p.window.get<float>(static_cast<std::size_t>(count));
  k_gather_window<<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(cc, w, h, rx, ry, window);
  check_launch("pce window");
  std::vector<float> host(static_cast<std::size_t>(count));
  check(cudaMemcpyAsync(host.data(), window, host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (pce window)");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  auto wrap = [](int i, int size) { return ((i % size) + size) % size; };
  auto shift = [](int index, int size) { return index <= size / 2 ? index : index - size; };
  auto at = [&](int dx, int dy) { return host[static_cast<std::size_t>((dy + ry) * side + (dx + rx))]; };
  int px = 0, py = 0;
  float best = std::abs(at(0, 0));
  for (int dy = -ry; dy <= ry; ++dy)
    for (int dx = -rx; dx <= rx; ++dx) {
      const float v = std::abs(at(dx, dy));
      const int ring = std::max(std::abs(dx), std::abs(dy));
      const int best_ring = std::max(std::abs(shift(px, w)), std::abs(shift(py, h)));
      if (v > best || (v == best && ring < best_ring)) {
        best = v;
        px = wrap(dx, w);
        py = wrap(dy, h);
      }
    }
  Pce r;
  r.peak_x = px;
  r.peak_y = py;
  r.shift_x = shift(px, w);
  r.shift_y = shift(py, h);
  r.peak = at(r.shift_x, r.shift_y);

  const int half = neighbourhood / 2;
  const int by = std::min(neighbourhood, h);
  const int bx = std::min(neighbourhood, w);
  double* partials = p.partials.get<double>(kReduceBlocks);
  double* sum = p.scalars.get<double>(1);
  k_energy_partials<<<kReduceBlocks, kThreads, 0, stream>>>(cc, w, h, px, py, half, bx, by, partials);
  check_launch("pce energy");
  k_reduce<1><<<1, kThreads, 0, stream>>>(partials, kReduceBlocks, sum);
  check_launch("pce energy");
  double energy = 0.0;
  check(cudaMemcpyAsync(&energy, sum, sizeof energy, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (pce)");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const std::size_t outside = static_cast<std::size_t>(w) * h - static_cast<std::size_t>(by) * bx;
  if (outside == 0) return r;
  r.energy = energy / static_cast<double>(outside);
  if (r.energy > 0.0) r.pce = (r.peak >= 0 ? 1.0 : -1.0) * r.peak * r.peak / r.energy;
  return r;
}

void rotate_180(const float* in, int w, int h, float* out, GpuPlans& plans, cudaStream_t stream) {
  if (w < 1 || h < 1)
    throw std::invalid_argument("prnu gpu rotate_180: size " + std::to_string(w) + "x" + std::to_string(h));
  flowd::cuda::DeviceScope scope(plans.impl().device, kWho);
  const std::size_t n = static_cast<std::size_t>(w) * h;
  k_rotate_180<<<blocks_for(n), kThreads, 0, stream>>>(in, n, out);
  check_launch("rotate_180");
}

}  // namespace flowd::prnu::gpu

// The merge-path cosine of cvtree_gpu.hpp.
#include <algorithm>
#include <stdexcept>
#include <string>

#include <cuda/device_scope.cuh>

#include "cvtree_gpu.hpp"

namespace flowd::cvtree::gpu {

namespace {

constexpr const char* kWho = "cvtree";
constexpr int kThreads = 256;
// A fixed grid: the same stretches, hence the same sums, on every device.
constexpr int kBlocks = 1024;

void check(cudaError_t e, const char* what) { flowd::cuda::check(e, kWho, what); }

// How many of A's keys are among the first d of the merge of A and B, A's
// first on equal keys.
__device__ std::size_t merge_split(const double* a, std::size_t na, const double* b, std::size_t nb, std::size_t d) {
  std::size_t lo = d > nb ? d - nb : 0;
  std::size_t hi = d < na ? d : na;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (a[mid] <= b[d - 1 - mid])
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

__device__ void block_sum(double& v, double* shared) {
  const int t = threadIdx.x;
  shared[t] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) shared[t] += shared[t + stride];
    __syncthreads();
  }
  v = shared[0];
}

// Each thread: its stretch [d0, d1) of the merge. For each of A's keys in
// it, B's pointer moves up to the first key not below it; the keys of B it
// passes are in the stretch too (the merge puts them before A's key), and
// it never passes B's key at the stretch's end (that one is not below the
// last A key of the stretch).
__global__ void k_merge_dot(const double* ka, const double* va, std::size_t na, const double* kb, const double* vb,
                            std::size_t nb, std::size_t per, double* partials) {
  __shared__ double shared[kThreads];
  const std::size_t total = na + nb;
  const std::size_t t = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::size_t d0 = min(t * per, total), d1 = min(d0 + per, total);
  double sum = 0.0;
  if (d0 < d1) {
    const std::size_t i0 = merge_split(ka, na, kb, nb, d0), i1 = merge_split(ka, na, kb, nb, d1);
    std::size_t j = d0 - i0;
    for (std::size_t i = i0; i < i1; ++i) {
      const double key = ka[i];
      while (j < nb && kb[j] < key) ++j;
      if (j < nb && kb[j] == key) sum += va[i] * vb[j];
    }
  }
  block_sum(sum, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void k_sum_blocks(const double* partials, double* out) {
  __shared__ double shared[kThreads];
  double sum = 0.0;
  for (int i = threadIdx.x; i < kBlocks; i += kThreads) sum += partials[i];
  block_sum(sum, shared);
  if (threadIdx.x == 0) *out = sum;
}

int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

}  // namespace

int device_count(std::string* why) { return flowd::cuda::device_count(why); }

struct Scratch::Impl {
  int device = 0;
  double* partials = nullptr;  // kBlocks block sums, then the result
  double* host = nullptr;      // pinned: the result comes back without staging
  ~Impl() {
    if (partials) static_cast<void>(cudaFree(partials));
    if (host) static_cast<void>(cudaFreeHost(host));
  }
};

Scratch::Scratch(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device < 0 ? current_device() : device;
  flowd::cuda::DeviceScope scope(impl_->device, kWho);
  check(cudaMalloc(reinterpret_cast<void**>(&impl_->partials), (kBlocks + 1) * sizeof(double)), "cudaMalloc");
  check(cudaMallocHost(reinterpret_cast<void**>(&impl_->host), sizeof(double)), "cudaMallocHost");
}

Scratch::~Scratch() = default;

int Scratch::device() const noexcept { return impl_->device; }

double cosine(const double* keys_a, const double* values_a, std::size_t na, const double* keys_b,
              const double* values_b, std::size_t nb, Scratch& scratch, cudaStream_t stream) {
  Scratch::Impl& s = scratch.impl();
  flowd::cuda::DeviceScope scope(s.device, kWho);
  const std::size_t threads = std::size_t{kBlocks} * kThreads;
  const std::size_t per = std::max<std::size_t>(1, (na + nb + threads - 1) / threads);
  k_merge_dot<<<kBlocks, kThreads, 0, stream>>>(keys_a, values_a, na, keys_b, values_b, nb, per, s.partials);
  check(cudaGetLastError(), "merge-path dot product");
  k_sum_blocks<<<1, kThreads, 0, stream>>>(s.partials, s.partials + kBlocks);
  check(cudaGetLastError(), "sum of the block sums");
  check(cudaMemcpyAsync(s.host, s.partials + kBlocks, sizeof(double), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (cosine)");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return *s.host;
}

DeviceDoubles::DeviceDoubles(const double* host, std::size_t count) : size_(count) {
  check(cudaMalloc(reinterpret_cast<void**>(&data_), std::max<std::size_t>(size_, 1) * sizeof(double)), "cudaMalloc");
  if (size_ > 0) check(cudaMemcpy(data_, host, size_ * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy");
}

DeviceDoubles::~DeviceDoubles() {
  if (data_) static_cast<void>(cudaFree(data_));
}

}  // namespace flowd::cvtree::gpu

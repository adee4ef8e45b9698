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
constexpr std::uint64_t kLetters = (std::uint64_t{1} << 20) - 1;

void check(cudaError_t e, const char* what) { flowd::cuda::check(e, kWho, what); }

// How many of A's middles are among the first d of the merge of A and B,
// A's first on equal middles.
__device__ std::size_t merge_split(const std::uint64_t* a, std::size_t na, const std::uint64_t* b, std::size_t nb,
                                   std::size_t d) {
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

__device__ bool expected(std::uint64_t mask, std::uint16_t e) {
  return ((mask & kLetters) >> (e >> 5) & (mask >> 32) >> (e & 31) & 1) != 0;
}

__device__ void block_sum(double& v, double* shared) {
  const int t = threadIdx.x;
  __syncthreads();  // the last call's readers of shared[0] are done
  shared[t] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) shared[t] += shared[t + stride];
    __syncthreads();
  }
  v = shared[0];
}

// One middle both vectors have (A's i, B's j), as cvtree::cosine walks it:
// adds the products to *sum and the k-mers both expect and neither saw to
// *both_unseen.
__device__ void middle_dot(const DeviceVector& a, std::size_t i, const DeviceVector& b, std::size_t j, double ua,
                           double ub, double* sum, unsigned long long* both_unseen) {
  const std::uint64_t ma = a.masks[i], mb = b.masks[j], shared = ma & mb;
  unsigned long long common = static_cast<unsigned long long>(__popcll(shared & kLetters)) *
                              static_cast<unsigned long long>(__popcll(shared >> 32));
  if (common == 0) return;
  std::size_t p = a.starts[i], q = b.starts[j];
  const std::size_t pe = a.starts[i + 1], qe = b.starts[j + 1];
  while (p < pe || q < qe) {
    const std::uint16_t ea = p < pe ? a.ends[p] : 0xffff, eb = q < qe ? b.ends[q] : 0xffff;
    if (ea < eb) {
      if (expected(mb, ea)) {
        *sum += a.values[p] * ub;
        --common;
      }
      ++p;
    } else if (eb < ea) {
      if (expected(ma, eb)) {
        *sum += ua * b.values[q];
        --common;
      }
      ++q;
    } else {
      *sum += a.values[p] * b.values[q];
      --common;
      ++p;
      ++q;
    }
  }
  *both_unseen += common;
}

// Each thread: its stretch [d0, d1) of the merge of the middles. For each
// of A's middles in it, B's pointer moves up to the first middle not below
// it; the middles of B it passes are in the stretch too (the merge puts them
// before A's), and it never passes B's middle at the stretch's end (that one
// is not below the stretch's last middle of A).
__global__ void k_merge_dot(DeviceVector a, DeviceVector b, std::size_t per, double* partials) {
  __shared__ double shared[kThreads];
  const std::size_t na = a.n_middles, nb = b.n_middles, total = na + nb;
  const std::size_t t = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
  const std::size_t d0 = min(t * per, total), d1 = min(d0 + per, total);
  double sum = 0.0;
  unsigned long long both_unseen = 0;
  if (d0 < d1) {
    const double ua = *a.unseen, ub = *b.unseen;
    const std::size_t i0 = merge_split(a.middles, na, b.middles, nb, d0);
    const std::size_t i1 = merge_split(a.middles, na, b.middles, nb, d1);
    std::size_t j = d0 - i0;
    for (std::size_t i = i0; i < i1; ++i) {
      const std::uint64_t m = a.middles[i];
      while (j < nb && b.middles[j] < m)
        ++j;
      if (j < nb && b.middles[j] == m) middle_dot(a, i, b, j, ua, ub, &sum, &both_unseen);
    }
  }
  block_sum(sum, shared);
  // Counts below 2^53 (any proteome's) are exact in double.
  double count = static_cast<double>(both_unseen);
  block_sum(count, shared);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = sum;
    partials[kBlocks + blockIdx.x] = count;
  }
}

// C = Σ block sums + u_A·u_B·(k-mers both expect and neither saw), as the
// CPU adds its last term.
__global__ void k_sum_blocks(const double* partials, const double* unseen_a, const double* unseen_b, double* out) {
  __shared__ double shared[kThreads];
  double sum = 0.0, count = 0.0;
  for (int i = threadIdx.x; i < kBlocks; i += kThreads) {
    sum += partials[i];
    count += partials[kBlocks + i];
  }
  block_sum(sum, shared);
  block_sum(count, shared);
  if (threadIdx.x == 0) *out = sum + *unseen_a * *unseen_b * count;
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
  double* partials = nullptr;  // kBlocks block sums, kBlocks block counts, then the result
  double* host = nullptr;      // pinned: the result comes back without staging
  ~Impl() {
    if (partials) static_cast<void>(cudaFree(partials));
    if (host) static_cast<void>(cudaFreeHost(host));
  }
};

Scratch::Scratch(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device < 0 ? current_device() : device;
  flowd::cuda::DeviceScope scope(impl_->device, kWho);
  check(cudaMalloc(reinterpret_cast<void**>(&impl_->partials), (2 * kBlocks + 1) * sizeof(double)), "cudaMalloc");
  check(cudaMallocHost(reinterpret_cast<void**>(&impl_->host), sizeof(double)), "cudaMallocHost");
}

Scratch::~Scratch() = default;

int Scratch::device() const noexcept { return impl_->device; }

double cosine(const DeviceVector& a, const DeviceVector& b, Scratch& scratch, cudaStream_t stream) {
  Scratch::Impl& s = scratch.impl();
  flowd::cuda::DeviceScope scope(s.device, kWho);
  const std::size_t threads = std::size_t{kBlocks} * kThreads;
  const std::size_t per = std::max<std::size_t>(1, (a.n_middles + b.n_middles + threads - 1) / threads);
  k_merge_dot<<<kBlocks, kThreads, 0, stream>>>(a, b, per, s.partials);
  check(cudaGetLastError(), "merge-path dot product");
  k_sum_blocks<<<1, kThreads, 0, stream>>>(s.partials, a.unseen, b.unseen, s.partials + 2 * kBlocks);
  check(cudaGetLastError(), "sum of the block sums");
  check(cudaMemcpyAsync(s.host, s.partials + 2 * kBlocks, sizeof(double), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (cosine)");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return *s.host;
}

DeviceBytes::DeviceBytes(const void* host, std::size_t bytes) : size_(bytes) {
  check(cudaMalloc(&data_, std::max<std::size_t>(size_, 1)), "cudaMalloc");
  if (size_ > 0) check(cudaMemcpy(data_, host, size_, cudaMemcpyHostToDevice), "cudaMemcpy");
}

DeviceBytes::~DeviceBytes() {
  if (data_) static_cast<void>(cudaFree(data_));
}

}  // namespace flowd::cvtree::gpu

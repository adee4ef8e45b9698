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

// The index of the middle whose seen k-mers hold seen k-mer p: the last i
// with starts[i] <= p (middles may have no seen k-mer, so starts repeat).
__device__ std::size_t middle_of(const std::uint32_t* starts, std::size_t n_middles, std::size_t p) {
  std::size_t lo = 0, hi = n_middles;  // starts[0] = 0 <= p < starts[n_middles]
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (starts[mid] <= p)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// Where x is among the sorted v[from, to), or `to` (middles in a vector's
// list, end pairs in a middle's).
template <typename T>
__device__ std::size_t find_sorted(const T* v, std::size_t from, std::size_t to, T x) {
  std::size_t lo = from, hi = to;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < to && v[lo] == x ? lo : to;
}

// The same sum walked by k-mer rather than by middle, for vectors with few
// middles and many seen k-mers each (k = 5: 8 000 middles would keep only
// 16 000 of the grid's threads busy). One grid-stride range over three
// lists: A's seen k-mers (a·b when B saw it too, else a·u_B when B expects
// it), B's seen k-mers (u_A·b when A expects it and did not see it), and A's
// middles (the k-mers both expect, from the masks). Every seen k-mer that
// both expect is taken off the last count, which leaves those neither saw.
__global__ void k_kmer_dot(DeviceVector a, DeviceVector b, double* partials) {
  __shared__ double shared[kThreads];
  const std::size_t sa = a.n_seen, sb = b.n_seen, total = sa + sb + a.n_middles;
  const double ua = *a.unseen, ub = *b.unseen;
  double sum = 0.0;
  long long both_unseen = 0;  // the k-mers both expect, less those seen in either
  for (std::size_t w = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x; w < total;
       w += std::size_t{kBlocks} * kThreads) {
    if (w < sa) {
      const std::size_t i = middle_of(a.starts, a.n_middles, w);
      const std::size_t j = find_sorted(b.middles, 0, b.n_middles, a.middles[i]);
      if (j == b.n_middles || !expected(b.masks[j], a.ends[w])) continue;
      const std::size_t to = b.starts[j + 1];
      const std::size_t q = find_sorted<std::uint16_t>(b.ends, b.starts[j], to, a.ends[w]);
      sum += a.values[w] * (q < to ? b.values[q] : ub);
      --both_unseen;
    } else if (w < sa + sb) {
      const std::size_t q = w - sa;
      const std::size_t j = middle_of(b.starts, b.n_middles, q);
      const std::size_t i = find_sorted(a.middles, 0, a.n_middles, b.middles[j]);
      if (i == a.n_middles || !expected(a.masks[i], b.ends[q])) continue;
      const std::size_t to = a.starts[i + 1];
      if (find_sorted<std::uint16_t>(a.ends, a.starts[i], to, b.ends[q]) < to) continue;  // A's turn
      sum += ua * b.values[q];
      --both_unseen;
    } else {
      const std::size_t i = w - sa - sb;
      const std::size_t j = find_sorted(b.middles, 0, b.n_middles, a.middles[i]);
      if (j == b.n_middles) continue;
      const std::uint64_t shared_letters = a.masks[i] & b.masks[j];
      both_unseen += static_cast<long long>(__popcll(shared_letters & kLetters)) *
                     static_cast<long long>(__popcll(shared_letters >> 32));
    }
  }
  block_sum(sum, shared);
  double count = static_cast<double>(both_unseen);  // exact: |count| < 2^53
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

Walk walk_for(const DeviceVector& a, const DeviceVector& b) noexcept {
  return a.n_middles + b.n_middles < kMiddlesForMergePath ? Walk::by_kmer : Walk::by_middle;
}

double cosine(const DeviceVector& a, const DeviceVector& b, Scratch& scratch, cudaStream_t stream, Walk walk) {
  Scratch::Impl& s = scratch.impl();
  flowd::cuda::DeviceScope scope(s.device, kWho);
  if (walk == Walk::automatic) walk = walk_for(a, b);
  if (walk == Walk::by_kmer) {
    k_kmer_dot<<<kBlocks, kThreads, 0, stream>>>(a, b, s.partials);
    check(cudaGetLastError(), "dot product by k-mer");
  } else {
    const std::size_t threads = std::size_t{kBlocks} * kThreads;
    const std::size_t per = std::max<std::size_t>(1, (a.n_middles + b.n_middles + threads - 1) / threads);
    k_merge_dot<<<kBlocks, kThreads, 0, stream>>>(a, b, per, s.partials);
    check(cudaGetLastError(), "merge-path dot product");
  }
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

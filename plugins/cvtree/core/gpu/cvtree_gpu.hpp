#pragma once
// The CUDA twin of cvtree::cosine (../vector.hpp): the dot product of two
// composition vectors in device memory, stored by middle (../layout.hpp).
// The merge of the two sorted lists of middles is cut into equal stretches
// along its diagonals (a binary search each), one per thread; a middle of A
// is matched with the equal middle of B by the thread whose stretch holds
// A's, so no middle is counted twice or missed at a cut. That thread walks
// the two middles' seen k-mers as the CPU does, adding a·b, a·u_B and u_A·b
// and counting the k-mers both expect and neither saw. For vectors with few
// middles a second kernel walks by seen k-mer instead (Walk below). Sums in double: per
// thread, a fixed block tree, then one block over the block sums (a fixed
// grid, so the same bits on every device). Differs from the CPU's
// compensated sum only in the order of the additions
// (tests/cvtree/test_cvtree_gpu.cpp: ≤ 1e-12).
//
// C++17, no CUDA header (cudaStream_t declared as the CUDA headers do).
// Errors throw std::runtime_error naming the step.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "layout.hpp"

typedef struct CUstream_st* cudaStream_t;  // as in driver_types.h

namespace flowd::cvtree::gpu {

// How many CUDA devices can be used; 0 with the reason in *why.
int device_count(std::string* why);

// The block sums and the result of one cosine at a time, on one device:
// use one per stream.
class Scratch {
public:
  explicit Scratch(int device = -1);  // -1: the current device
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  int device() const noexcept;

  struct Impl;
  Impl& impl() noexcept { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

// A composition vector's arrays in device memory.
struct DeviceVector {
  const std::uint64_t* middles = nullptr;
  const std::uint64_t* masks = nullptr;
  const std::uint32_t* starts = nullptr;
  const std::uint16_t* ends = nullptr;
  const double* values = nullptr;
  const double* unseen = nullptr;  // the header's
  std::size_t n_middles = 0;
  std::size_t n_seen = 0;
};

// The arrays of a vector's bytes (layout.hpp) at `bytes` in device memory,
// whose header says `middles` and `seen`.
inline DeviceVector device_vector(const void* bytes, std::size_t middles, std::size_t seen) {
  const auto* at = static_cast<const unsigned char*>(bytes);
  const layout::Offsets o = layout::offsets(middles, seen);
  DeviceVector v;
  v.middles = reinterpret_cast<const std::uint64_t*>(at + o.middles);
  v.masks = reinterpret_cast<const std::uint64_t*>(at + o.masks);
  v.starts = reinterpret_cast<const std::uint32_t*>(at + o.starts);
  v.ends = reinterpret_cast<const std::uint16_t*>(at + o.ends);
  v.values = reinterpret_cast<const double*>(at + o.values);
  v.unseen = reinterpret_cast<const double*>(at + offsetof(layout::Header, unseen));
  v.n_middles = middles;
  v.n_seen = seen;
  return v;
}

// How the kernel walks the two vectors. by_middle: the merge path above, a
// thread per stretch of middles, each walking its middles' seen k-mers.
// by_kmer: a thread per seen k-mer (and per middle of A for the counts),
// each finding its partner by binary searches; for vectors with few middles
// (k = 5 has at most 8 000), where by_middle leaves most of the grid idle.
// automatic: by_kmer below kMiddlesForMergePath middles in the two vectors
// together (measured on an H100: docs/benchmarks.md §14.5).
enum class Walk { automatic, by_middle, by_kmer };
inline constexpr std::size_t kMiddlesForMergePath = 65536;
Walk walk_for(const DeviceVector& a, const DeviceVector& b) noexcept;

// Σ over the k-mers expected in both of a·b, on the scratch's device. The
// vectors must be of the same k. Waits for `stream`.
double cosine(const DeviceVector& a, const DeviceVector& b, Scratch& scratch, cudaStream_t stream,
              Walk walk = Walk::automatic);

// Device copies of host bytes (for the tests and the benchmark).
class DeviceBytes {
public:
  DeviceBytes(const void* host, std::size_t bytes);  // on the current device
  ~DeviceBytes();
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  const void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace flowd::cvtree::gpu

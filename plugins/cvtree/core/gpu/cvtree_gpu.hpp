#pragma once
// The CUDA twin of cvtree::cosine (../vector.hpp): the sparse dot product of
// two sorted composition vectors in device memory by merge path. The merge
// of the two key arrays is cut into equal stretches along its diagonals
// (a binary search each), one per thread, so every thread walks the same
// number of keys whatever the vectors' overlap; a key of A is matched with
// the equal key of B by the thread whose stretch holds A's, so no pair is
// counted twice or missed at a cut. Sums in double: per thread, a fixed
// block tree, then one block over the block sums (a fixed grid, so the
// same bits on every device). Differs from the CPU's sequential sum only in
// the order of the additions (tests/cvtree/test_cvtree_gpu.cpp: ≤ 1e-12).
//
// C++17, no CUDA header (cudaStream_t declared as the CUDA headers do).
// Errors throw std::runtime_error naming the step.
#include <cstddef>
#include <memory>
#include <string>

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

// Σ over keys in both of a·b, the vectors' keys (exact integers as doubles,
// ascending, unique) and values in device memory on the scratch's device.
// Waits for `stream`.
double cosine(const double* keys_a, const double* values_a, std::size_t na, const double* keys_b,
              const double* values_b, std::size_t nb, Scratch& scratch, cudaStream_t stream);

// Device copies of host doubles (for the tests and the benchmark).
class DeviceDoubles {
public:
  DeviceDoubles(const double* host, std::size_t count);  // on the current device
  ~DeviceDoubles();
  DeviceDoubles(const DeviceDoubles&) = delete;
  DeviceDoubles& operator=(const DeviceDoubles&) = delete;
  const double* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

private:
  double* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace flowd::cvtree::gpu

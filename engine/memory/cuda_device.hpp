#pragma once
// A CUDA GPU's memory and copy engine: three streams (upload, compute,
// download) so copies of neighbouring tasks overlap computation, a caching
// allocator for device memory and a pool of pinned host buffers for staging.
// Built only when flowd is built with CUDA.
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "memory/device.hpp"

namespace flowd::memory {

// Device or pinned blocks reused by size class (powers of two): cudaMalloc and
// cudaMallocHost synchronise the device and take milliseconds; a run reuses a
// few sizes over and over.
class BlockPool : public std::enable_shared_from_this<BlockPool> {
public:
  enum class Kind { device, pinned };
  BlockPool(Kind kind, int ordinal) : kind_(kind), ordinal_(ordinal) {}
  ~BlockPool();
  // A block of at least `bytes`, returned to the pool when the owner dies.
  std::shared_ptr<void> get(std::size_t bytes);
  // Makes device blocks freed so far reusable: call after the compute stream
  // has been synchronised.
  void reclaim() noexcept;

private:
  void put(void* p, std::size_t size_class) noexcept;
  Kind kind_;
  int ordinal_;
  std::mutex m_;
  std::map<std::size_t, std::vector<void*>> free_;
  std::vector<std::pair<void*, std::size_t>> pending_;  // freed device blocks, not yet reusable
};

class CudaDevice final : public Device {
public:
  explicit CudaDevice(int ordinal, std::string name);
  ~CudaDevice() override;

  std::string name() const override { return name_; }
  bool simulated() const noexcept override { return false; }
  int ordinal() const noexcept override { return ordinal_; }
  Array upload(const Array& host) override;
  Array download(const Array& on_device) override;
  Array pin(const Array& host) override;
  Array allocate(DType dtype, std::span<const std::int64_t> shape) override;
  void* compute_stream() noexcept override { return compute_; }
  void synchronize() override;

private:
  int ordinal_;
  std::string name_;
  void* upload_ = nullptr;  // cudaStream_t, kept opaque so this header needs no CUDA headers
  void* compute_ = nullptr;
  void* download_ = nullptr;
  std::shared_ptr<BlockPool> device_pool_;
  std::shared_ptr<BlockPool> pinned_pool_;
};

}  // namespace flowd::memory

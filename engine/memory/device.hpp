#pragma once
// The memory and copy engine of a GPU-like worker, as the runtime sees it.
// A CudaDevice moves bytes between host and GPU memory; a SimDevice moves
// none and charges the time a transfer at its bandwidth would take, so
// locality and prefetch behave in simulation as they would on a GPU.
#include <cstdint>
#include <span>
#include <string>

#include "flowd/array.hpp"

namespace flowd::memory {

class Device {
public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual bool simulated() const noexcept = 0;
  virtual int ordinal() const noexcept = 0;  // CUDA ordinal, or the simulated device's index

  // A copy of a host array in this device's memory (for a simulated device,
  // the same array: only time passes). Blocks until the copy is complete.
  virtual Array upload(const Array& host) = 0;
  // A host copy of an array that lives in this device's memory.
  virtual Array download(const Array& on_device) = 0;
  // A copy of a host array in page-locked host memory, which upload()
  // copies to the GPU directly (no staging copy) and at full bandwidth: what
  // an all-pairs stage keeps in its host cache when GPU lanes read from it.
  // A simulated device returns the array itself.
  virtual Array pin(const Array& host) = 0;
  // Uninitialised memory for a GPU variant's output.
  virtual Array allocate(DType dtype, std::span<const std::int64_t> shape) = 0;
  // The stream GPU variants enqueue on (nullptr for a simulated device), and
  // waiting for it.
  virtual void* compute_stream() noexcept = 0;
  virtual void synchronize() = 0;
};

}  // namespace flowd::memory

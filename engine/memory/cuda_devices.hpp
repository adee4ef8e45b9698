#pragma once
// Finding GPUs. Zero GPUs (no driver, no device, or a flowd built without
// CUDA) is a normal case, reported with the reason, never an error.
#include <string>
#include <vector>

namespace flowd::memory {

struct GpuInfo {
  int ordinal = 0;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;    // "0000:3b:00.0"
  std::vector<int> near_cpus;  // CPUs on the GPU's NUMA node (empty: unknown)
};

struct GpuDiscovery {
  std::vector<GpuInfo> gpus;
  std::string why_none;  // when gpus is empty
};

GpuDiscovery discover_gpus();
bool built_with_cuda() noexcept;

// Pins the calling thread to `cpus` (no-op when empty); false if refused.
bool pin_current_thread(const std::vector<int>& cpus);

}  // namespace flowd::memory

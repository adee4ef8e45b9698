#include "memory/cuda_devices.hpp"

#include <pthread.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#if FLOWD_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace flowd::memory {

namespace {

// "0-5,12-17" -> {0..5, 12..17}
std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');) {
    const auto dash = part.find('-');
    try {
      if (dash == std::string::npos) cpus.push_back(std::stoi(part));
      else
        for (int c = std::stoi(part.substr(0, dash)); c <= std::stoi(part.substr(dash + 1)); ++c) cpus.push_back(c);
    } catch (const std::exception&) {
      return {};
    }
  }
  return cpus;
}

[[maybe_unused]] std::vector<int> cpus_near_pci(std::string bus_id) {
  for (auto& c : bus_id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::ifstream in("/sys/bus/pci/devices/" + bus_id + "/local_cpulist");
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  return parse_cpu_list(line);
}

}  // namespace

bool built_with_cuda() noexcept { return FLOWD_HAVE_CUDA != 0; }

GpuDiscovery discover_gpus() {
  GpuDiscovery d;
#if FLOWD_HAVE_CUDA
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    // Without an NVIDIA driver the runtime says "CUDA driver version is
    // insufficient", which reads like an old driver (issue 38): say what it
    // means on a machine without GPUs.
    std::error_code ec;
    const bool driver = std::filesystem::exists("/proc/driver/nvidia/version", ec);
    if (!driver && (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice))
      d.why_none = "this machine has no GPU: no NVIDIA driver is loaded (no /proc/driver/nvidia/version)";
    else if (e == cudaErrorNoDevice)
      d.why_none = "this machine has no GPU: the NVIDIA driver reports no CUDA device";
    else if (e == cudaErrorInsufficientDriver)
      d.why_none = "the NVIDIA driver is older than the CUDA runtime this flowd was built with (" +
                   std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
                   "); update the driver to use the GPU";
    else
      d.why_none = std::string("the CUDA runtime found no usable GPU: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear it
    return d;
  }
  for (int i = 0; i < count; ++i) {
    GpuInfo g;
    g.ordinal = i;
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) == cudaSuccess) g.name = p.name;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) {
      g.pci_bus_id = bus;
      g.near_cpus = cpus_near_pci(bus);
    }
    d.gpus.push_back(std::move(g));
  }
  if (d.gpus.empty()) d.why_none = "the CUDA runtime reports no GPU";
#else
  d.why_none = "this flowd was built without CUDA";
#endif
  return d;
}

bool pin_current_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

}  // namespace flowd::memory

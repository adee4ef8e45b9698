#pragma once
// Shared by the plugins' CUDA code (header-only, internal linkage for each
// plugin): error checks naming the operation, and the device a call runs on.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace flowd::cuda {

// Throws std::runtime_error "<who> on the GPU: <what> failed: <CUDA error>".
inline void check(cudaError_t e, const char* who, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(who) + " on the GPU: " + what + " failed: " + cudaGetErrorString(e));
}

// How many CUDA devices can be used; 0 with the reason in *why (a machine
// without a GPU or driver is not an error: the CPU variants run).
inline int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount reports 0 devices";
  return n;
}

// Makes `device` current for one call and restores the caller's device:
// kernels launch on the current device, and the stream belongs to `device`.
class DeviceScope {
public:
  DeviceScope(int device, const char* who) : device_(device) {
    check(cudaGetDevice(&previous_), who, "cudaGetDevice");
    if (previous_ != device_) check(cudaSetDevice(device_), who, "cudaSetDevice");
  }
  ~DeviceScope() {
    if (previous_ != device_) static_cast<void>(cudaSetDevice(previous_));  // nothing useful to do if it fails
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

private:
  int device_;
  int previous_ = 0;
};

}  // namespace flowd::cuda

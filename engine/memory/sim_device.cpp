#include "memory/sim_device.hpp"

#include <chrono>
#include <thread>

namespace flowd::memory {

namespace {
void charge(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}
}  // namespace

Array SimDevice::upload(const Array& host_array) {
  charge(seconds_for(host_array.nbytes()));
  return host_array;
}

Array SimDevice::download(const Array& on_device) {
  charge(seconds_for(on_device.nbytes()));
  return on_device;
}

Array SimDevice::allocate(DType dtype, std::span<const std::int64_t> shape) { return Array::uninitialized(dtype, shape); }

}  // namespace flowd::memory

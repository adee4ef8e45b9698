#pragma once
// Per-GPU state of an operator's GPU variant (cuFFT plans, scratch buffers),
// shared by the plugins' host code (header-only; no CUDA header). Such state
// is not thread-safe, and the engine may call the variant on two GPUs at
// once: each GPU gets its own T, made on first use, and a caller holds its
// GPU's T alone for as long as it keeps the lease.
#include <map>
#include <memory>
#include <mutex>

namespace flowd::cuda {

template <class T>
class PerDevice {
public:
  struct Lease {
    T* state;
    std::unique_lock<std::mutex> use;
  };
  // The device's T (made as T(device) the first time), held until the
  // lease goes.
  Lease take(int device) {
    Slot* slot = nullptr;
    {
      std::lock_guard lk(m_);
      auto& s = slots_[device];
      if (!s) s = std::make_unique<Slot>();
      slot = s.get();
    }
    std::unique_lock use(slot->busy);
    if (!slot->state) slot->state = std::make_unique<T>(device);
    return {slot->state.get(), std::move(use)};
  }

private:
  struct Slot {
    std::mutex busy;
    std::unique_ptr<T> state;
  };
  std::mutex m_;
  std::map<int, std::unique_ptr<Slot>> slots_;
};

}  // namespace flowd::cuda

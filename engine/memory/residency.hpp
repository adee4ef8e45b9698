#pragma once
// Where the array of one item is valid: host memory and/or the memories of
// GPU-like workers. Items are immutable, so a copy once made stays valid for
// the item's life and is never made twice.
#include <map>
#include <mutex>
#include <optional>

#include "flowd/array.hpp"

namespace flowd::memory {

inline constexpr int host = -1;  // the "worker" id of host memory

class Residency {
public:
  // An item made in host memory, or on a GPU-like worker's device.
  static Residency on_host() { return Residency(host); }
  static Residency on_worker(int worker) { return Residency(worker); }

  // Serialises transfers of this item: two consumers never copy it twice.
  std::mutex& mutex() const noexcept { return m_; }

  // Under mutex():
  bool valid(int where) const { return valid_.count(where) > 0; }
  // The copy held in `where`'s memory, when that memory keeps its own
  // (GPU memory does; host memory and simulated devices share the item's array).
  std::optional<Array> copy(int where) const {
    auto it = valid_.find(where);
    if (it == valid_.end() || !it->second) return std::nullopt;
    return it->second;
  }
  void set(int where, std::optional<Array> copy = std::nullopt) { valid_[where] = std::move(copy); }
  // Valid in `where` only (before the item is shared: no lock needed).
  void reset(int where) {
    valid_.clear();
    valid_[where] = std::nullopt;
  }
  // A GPU-like worker holding a valid copy, or host when none (the DL rule's
  // data_worker).
  int device_holder() const {
    for (const auto& [w, c] : valid_)
      if (w != host) return w;
    return host;
  }
  std::map<int, std::optional<Array>> places() const { return valid_; }

  Residency(const Residency& o) : valid_(o.valid_) {}
  Residency& operator=(const Residency&) = delete;

private:
  explicit Residency(int where) { valid_[where] = std::nullopt; }
  mutable std::mutex m_;
  std::map<int, std::optional<Array>> valid_;
};

}  // namespace flowd::memory

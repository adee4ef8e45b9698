#pragma once
// What scan executors share: calling the user's combine (with the worker
// running it, if it wants to know), and keeping count of combines, depth and
// per-lane busy time while tasks on many workers apply them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sched/scan_strategy.hpp"
#include "sched/task.hpp"

namespace flowd::sched {

// combine(left, right) -> T, or combine(worker, left, right) -> T when the
// combine picks a variant by the worker's kind. Associative, possibly not
// commutative: `left` always holds the earlier elements.
template <class C, class T>
concept ScanCombine =
    std::invocable<C&, const T&, const T&> || std::invocable<C&, const WorkerInfo&, const T&, const T&>;

template <class T, class C>
T call_combine(C& combine, const WorkerInfo& worker, const T& left, const T& right) {
  if constexpr (std::invocable<C&, const WorkerInfo&, const T&, const T&>)
    return combine(worker, left, right);
  else
    return combine(left, right);
}

// A value and the longest chain of combines it came from.
template <class T>
struct Tracked {
  T value;
  std::uint32_t depth = 0;
};

// Counts combines and their time per lane; many tasks call apply() at once.
class ScanMeter {
public:
  using Clock = std::chrono::steady_clock;
  explicit ScanMeter(std::size_t lanes = 0) : lanes_(lanes) {}

  // Runs combine(left, right) for `lane`, timing it. Returns the result with
  // its depth.
  template <class T, class C>
  Tracked<T> apply(std::size_t lane, C& combine, const WorkerInfo& w, const Tracked<T>& left, const Tracked<T>& right) {
    const auto t0 = Clock::now();
    T v = call_combine<T>(combine, w, left.value, right.value);
    add(lane, Clock::now() - t0);
    return {std::move(v), std::max(left.depth, right.depth) + 1};
  }
  // A combine with an absent operand is the other operand (no work).
  template <class T, class C>
  std::optional<Tracked<T>> apply(std::size_t lane, C& combine, const WorkerInfo& w,
                                  const std::optional<Tracked<T>>& left, const std::optional<Tracked<T>>& right) {
    if (!left) return right;
    if (!right) return left;
    return apply(lane, combine, w, *left, *right);
  }

  void add(std::size_t lane, Clock::duration busy) {
    std::lock_guard lk(m_);
    if (lane >= lanes_.size()) lanes_.resize(lane + 1);
    lanes_[lane].busy += busy;
    ++lanes_[lane].ops;
    ++combines_;
  }

  // Fills the combine count and per-lane figures of `stats` (lane i named
  // by name(i)).
  template <class Name>
  void report(ScanStats& stats, Name name) const {
    std::lock_guard lk(m_);
    stats.combines = combines_;
    stats.lane_busy_seconds.clear();
    stats.lane_ops.clear();
    stats.lane_names.clear();
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      stats.lane_busy_seconds.push_back(std::chrono::duration<double>(lanes_[i].busy).count());
      stats.lane_ops.push_back(lanes_[i].ops);
      stats.lane_names.push_back(name(i));
    }
  }

private:
  struct Lane {
    Clock::duration busy{};
    std::uint64_t ops = 0;
  };
  mutable std::mutex m_;
  std::vector<Lane> lanes_;
  std::uint64_t combines_ = 0;
};

}  // namespace flowd::sched

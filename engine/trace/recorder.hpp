#pragma once
// Collects trace events from every worker while a run goes on. Disabled
// recorders cost one branch per event.
#include <chrono>
#include <mutex>

#include "trace/trace.hpp"

namespace flowd::trace {

class Recorder {
public:
  using Clock = std::chrono::steady_clock;

  explicit Recorder(bool enabled = false) : enabled_(enabled), t0_(Clock::now()) {}
  bool enabled() const noexcept { return enabled_; }

  // Nanoseconds since the recorder started.
  std::int64_t now() const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0_).count();
  }
  std::int64_t since_start(Clock::time_point t) const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - t0_).count();
  }

  void track(Track t);
  void span(Span s);
  void counter(std::string name, double value);
  std::int64_t next_id() noexcept;

  // Everything recorded so far, spans in start order.
  RunTrace snapshot(Json config) const;

private:
  bool enabled_;
  Clock::time_point t0_;
  mutable std::mutex m_;
  RunTrace trace_;
  std::int64_t next_id_ = 0;
};

}  // namespace flowd::trace

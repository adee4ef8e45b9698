#pragma once
// Collects trace events from every worker while a run goes on. Disabled
// recorders cost one branch per event.
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

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
  // A task another process ran (a worker node of a cluster run), as this
  // process saw it: laid on that node's tracks ("node NAME", one more lane
  // for each task running there at once), whatever `s.track` says.
  void node_span(const std::string& node, Span s);
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
  // Per node, its lanes: (track id, end of the lane's last span).
  std::map<std::string, std::vector<std::pair<int, std::int64_t>>> node_lanes_;
  int next_node_track_ = kFirstNodeTrack;
  static constexpr int kFirstNodeTrack = 100000;  // above every worker's and copy engine's id
};

}  // namespace flowd::trace

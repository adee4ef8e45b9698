#include "trace/recorder.hpp"

#include <algorithm>
#include <iterator>

namespace flowd::trace {

void Recorder::track(Track t) {
  if (!enabled_) return;
  std::lock_guard lk(m_);
  trace_.tracks.push_back(std::move(t));
}

void Recorder::span(Span s) {
  if (!enabled_) return;
  std::lock_guard lk(m_);
  trace_.spans.push_back(std::move(s));
}

void Recorder::node_span(const std::string& node, Span s) {
  if (!enabled_) return;
  std::lock_guard lk(m_);
  auto& lanes = node_lanes_[node];
  auto lane = std::find_if(lanes.begin(), lanes.end(), [&](const auto& l) { return l.second <= s.start_ns; });
  if (lane == lanes.end()) {
    const std::string name = "node " + node + (lanes.empty() ? "" : " #" + std::to_string(lanes.size() + 1));
    trace_.tracks.push_back({next_node_track_, name, "node", false});
    lanes.emplace_back(next_node_track_++, s.end_ns);
    lane = std::prev(lanes.end());
  }
  lane->second = s.end_ns;
  s.track = lane->first;
  trace_.spans.push_back(std::move(s));
}

void Recorder::counter(std::string name, double value) {
  if (!enabled_) return;
  const std::int64_t t = now();
  std::lock_guard lk(m_);
  trace_.counters.push_back({std::move(name), t, value});
}

std::int64_t Recorder::next_id() noexcept {
  std::lock_guard lk(m_);
  return next_id_++;
}

RunTrace Recorder::snapshot(Json config) const {
  RunTrace t;
  {
    std::lock_guard lk(m_);
    t = trace_;
  }
  std::stable_sort(t.spans.begin(), t.spans.end(), [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  t.duration_ns = now();
  for (const auto& s : t.spans) t.duration_ns = std::max(t.duration_ns, s.end_ns);
  t.config = std::move(config);
  return t;
}

}  // namespace flowd::trace

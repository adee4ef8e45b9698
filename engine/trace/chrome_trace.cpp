#include "trace/chrome_trace.hpp"

#include "util/fs.hpp"

namespace flowd::trace {

namespace {
double us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }
}  // namespace

Json chrome_trace(const RunTrace& t) {
  Json events = Json::array();
  const std::string process = "flowd " + t.config.value("workflow", std::string("run")) +
                              (t.config.value("simulated_gpus", false) ? " (simulated GPUs)" : "");
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", process}}}});
  for (const auto& tr : t.tracks) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", tr.id},
                      {"args", {{"name", tr.name + (tr.simulated ? " (simulated)" : "")}}}});
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", tr.id}, {"args", {{"sort_index", tr.id}}}});
  }
  for (const auto& s : t.spans) {
    Json args = {{"stage", s.stage}, {"key", s.key}, {"variant", s.variant}};
    if (s.bytes) args["bytes"] = s.bytes;
    if (s.id >= 0) args["task"] = s.id;
    if (s.parent >= 0) args["parent"] = s.parent;
    if (s.failed) args["failed"] = true;
    events.push_back({{"name", s.name},
                      {"cat", s.variant == "copy" ? "copy" : "task"},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", s.track},
                      {"ts", us(s.start_ns)},
                      {"dur", us(s.end_ns - s.start_ns)},
                      {"args", std::move(args)}});
  }
  for (const auto& c : t.counters)
    events.push_back({{"name", c.name}, {"ph", "C"}, {"pid", 1}, {"ts", us(c.t_ns)}, {"args", {{"value", c.value}}}});
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", t.config}};
}

void write_chrome_trace(const RunTrace& t, const std::filesystem::path& file) {
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  write_file_atomic(file, chrome_trace(t).dump());
}

}  // namespace flowd::trace

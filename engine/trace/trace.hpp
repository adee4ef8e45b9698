#pragma once
// What happened in a run, for the Chrome/Perfetto trace and the HTML report:
// one track per worker (and per copy engine), spans for tasks and copies,
// counters for queue lengths. Recorded by trace::Recorder (recorder.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "flowd/item.hpp"

namespace flowd::trace {

struct Track {
  int id = 0;
  std::string name;    // "cpu0", "gpu0", "sim0", "sim0 copy"
  std::string kind;    // "cpu", "gpu", "sim_gpu", "copy"
  bool simulated = false;
};

struct Span {
  int track = 0;
  std::string name;     // the operator ("image.gaussian") or "upload" / "download"
  std::string stage;    // the workflow stage
  std::string key;      // the item key
  std::string variant;  // "cpu", "gpu", "sim" (CPU variant on a simulated GPU), or "copy"
  std::int64_t start_ns = 0;  // since the run started
  std::int64_t end_ns = 0;
  std::uint64_t bytes = 0;    // copies: bytes moved
  std::int64_t id = -1;       // tasks: a run-wide id
  std::int64_t parent = -1;   // sub-tasks: the id of the stage task that spawned them
  bool failed = false;
};

struct Counter {
  std::string name;  // "ready tasks", "items in flight"
  std::int64_t t_ns = 0;
  double value = 0;
};

struct RunTrace {
  std::vector<Track> tracks;
  std::vector<Span> spans;
  std::vector<Counter> counters;
  std::int64_t duration_ns = 0;
  // The run's configuration: workflow, flowd version, scheduler, locality,
  // prefetch, workers, whether GPUs were simulated, the command line.
  Json config = Json::object();
};

}  // namespace flowd::trace

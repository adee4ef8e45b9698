#pragma once
// What a run is asked to do and what it reports.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flowd/item.hpp"

namespace flowd::runtime {

struct RunOptions {
  int cpu_workers = 0;         // 0: one per hardware thread
  std::string scheduler = "fcfs";
  bool keep_going = false;     // record failed items and continue
  int max_in_flight = 0;       // source items alive at once, per source; 0: 2 x workers
  // Polled by the run; set it (e.g. from a SIGINT handler) to stop cleanly.
  const std::atomic<bool>* interrupt = nullptr;
  Json provenance = Json::object();  // handed to sinks
};

struct TaskFailure {
  std::string stage;
  std::string key;
  std::string message;
  std::string describe() const { return "stage '" + stage + "' failed on item '" + key + "': " + message; }
};

struct StageProgress {
  std::string name;
  std::string op;
  std::uint64_t tasks_done = 0;
  std::uint64_t items_out = 0;
  std::uint64_t failures = 0;
  std::uint64_t running = 0;
  double busy_seconds = 0;  // summed task time
  bool closed = false;
};

struct Progress {
  std::chrono::duration<double> elapsed{};
  std::vector<StageProgress> stages;
  std::uint64_t source_items = 0;    // emitted by all sources
  std::uint64_t retired_items = 0;   // source items whose every derived task has finished
  std::optional<std::uint64_t> expected_items;  // when every source told its total
};

enum class RunStatus { succeeded, completed_with_failures, failed, interrupted };

struct RunReport {
  RunStatus status = RunStatus::succeeded;
  std::vector<TaskFailure> failures;  // every failure (keep-going) or the first (otherwise)
  std::string error;                  // a run-level problem (sink commit, lost items), if any
  Progress final;
};

}  // namespace flowd::runtime

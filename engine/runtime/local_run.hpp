#pragma once
// Runs a validated graph in this process.
//
// Items stream: every source item becomes tasks stage by stage, so item n can
// be in stage 2 while item n+1 is in stage 1. A source emits only while fewer
// than max_in_flight of its items are alive (see carried.hpp), so memory is
// bounded whatever the input size. Sinks write to temporary names and commit
// only when the whole run succeeded; a failed or interrupted run aborts them
// and leaves nothing half-written.
#include <chrono>
#include <functional>
#include <memory>

#include "runtime/run_types.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::runtime {

namespace detail {
struct RunState;
}

class LocalRun {
public:
  LocalRun(workflow::Graph& graph, RunOptions options, Logger& log);
  ~LocalRun();
  LocalRun(const LocalRun&) = delete;
  LocalRun& operator=(const LocalRun&) = delete;

  using Tick = std::function<void(const Progress&)>;
  // Runs to completion (or failure, or interrupt). `tick` is called from
  // this thread about every `interval` with a progress snapshot.
  RunReport execute(const Tick& tick = {}, std::chrono::milliseconds interval = std::chrono::milliseconds(250));

private:
  std::unique_ptr<detail::RunState> state_;
};

}  // namespace flowd::runtime

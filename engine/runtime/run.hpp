#pragma once
// Runs a validated graph: in this process, or as a cluster's coordinator when
// RunOptions::remote is set (map stages the cluster takes run on worker
// nodes; sources, routing, joins, reduces and sinks stay here).
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
class RunState;
}

class Run {
public:
  Run(workflow::Graph& graph, RunOptions options, Logger& log);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  using Tick = std::function<void(const Progress&)>;
  // Runs to completion (or failure, or interrupt). `tick` is called from
  // this thread about every `interval` with a progress snapshot.
  RunReport execute(const Tick& tick = {}, std::chrono::milliseconds interval = std::chrono::milliseconds(250));

private:
  std::unique_ptr<detail::RunState> state_;
};

}  // namespace flowd::runtime

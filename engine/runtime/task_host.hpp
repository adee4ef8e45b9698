#pragma once
// Runs single map tasks on this process's workers: a cluster worker node's
// side of a run (the coordinator routes; the node only computes). Tasks run
// exactly as in a local run: the same queue policy, sub-tasks, GPU variants,
// performance model and trace.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flowd/item.hpp"
#include "runtime/run_types.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::runtime {

namespace detail {
struct Stage;  // runtime/task_runner.hpp
}

struct HostedResult {
  bool ok = false;
  std::string error;  // when not ok
  std::string key;    // the item it failed on
  std::vector<std::pair<std::size_t, Item>> outputs;  // by output port, in emission order
  double seconds = 0;  // the operator's time
};

// What a scan rank's job brings (docs/cluster.md, "Runtime protocol").
struct ScanJob {
  Json spec;  // TaskSpec::scan: "phase" (reduce | finish), "keys" of the elements, "steal", "lookup_keys", …
  // The segment's elements, pulled when a combine first needs one (a finish
  // needs only those it scans in a chain), each once.
  std::function<Item(std::size_t)> element;
  std::vector<std::string> element_holders;  // for messages
  // A finish's other operands, in order: the prefix received, the total,
  // the lane prefixes, the lanes' right prefixes.
  std::vector<Item> operands;
  // Items a combine reads by key: the i-th is spec["lookup_keys"][i] of
  // input lookup_ports[i], pulled when asked.
  std::vector<std::uint32_t> lookup_ports;
  std::function<Item(std::size_t)> lookup;
};

class TaskHost {
public:
  // `graph` holds the stages this node can run (workflow::open_map_stages):
  // no edges are needed. Options as for a local run (workers, GPUs,
  // scheduler, model, recorder); sources and sinks are never run here.
  TaskHost(workflow::Graph& graph, RunOptions options, Logger& log);
  // Stops after the running tasks; queued ones are dropped unrun (their
  // done is not called).
  ~TaskHost();
  TaskHost(const TaskHost&) = delete;
  TaskHost& operator=(const TaskHost&) = delete;

  // Queues a task of map stage `stage` (by name) on `inputs` (one per input
  // port; nullopt for an unconnected optional port). Inputs are checked
  // against the ports' types first. `done` is called once from a worker
  // thread. Throws flowd::Error for a stage this host does not have.
  void submit(const std::string& stage, std::string key, std::vector<std::optional<Item>> inputs,
              std::function<void(HostedResult)> done);
  // A cluster scan's rank job (runtime/cluster_scan.cpp) on scan stage
  // `stage`. Outputs: the lane prefixes and right prefixes (reduce) or y of
  // every element (finish), then an empty item whose attrs["flowd.scan"] is
  // the job's record (lanes, combines, busy time).
  void submit_scan(const std::string& stage, std::string key, ScanJob job, std::function<void(HostedResult)> done);
  bool has_stage(const std::string& stage) const;
  // Worker threads (CPU + GPU-like): how many tasks run at once.
  int slots() const;
  std::vector<sched::WorkerInfo> workers() const;

private:
  // Stage `name` of this host, which must have `pattern`; throws flowd::Error.
  detail::Stage& stage(const std::string& name, Pattern pattern);
  struct State;  // the task runner and the stages
  std::unique_ptr<State> state_;
};

}  // namespace flowd::runtime

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

// What an all-pairs job brings (runtime/cluster_allpairs.cpp): a stretch of
// the stage's leaves to compute with this node's lanes and its cache, which
// lasts across the stage's jobs.
struct AllPairsJob {
  Json spec;  // TaskSpec::scan: "phase": "allpairs", the leaves, the items' numbers and keys, the cache's settings
  // Item i of the job (spec["items"][i]) as its producer made it, pulled
  // from its holder when the cache misses it.
  std::function<Item(std::size_t)> element;
  // The peer cache: item i already preprocessed, from the node the
  // coordinator's directory names; nullopt when there is none or it no
  // longer holds the item (the caller then loads it itself).
  std::function<std::optional<Item>(std::size_t)> from_peer;
  // Serves a preprocessed item to peers under `name` (a null item: no
  // longer). Null: nothing is served.
  std::function<void(const std::string& name, std::shared_ptr<const Item>)> share;
};

class TaskHost {
public:
  // `graph` holds the stages this node can run (workflow::open_map_stages):
  // no edges are needed. Options as for a local run (workers, GPUs,
  // scheduler, model, recorder); sources and sinks only when a placement
  // moved them here (submit_source, submit_sink).
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
  // An all-pairs stage's job (runtime/cluster_allpairs.cpp). Outputs: the
  // score table of its pairs (columns a, b and one per score, global
  // indices, in (a, b) order), then an empty item whose attrs["flowd.allpairs"]
  // is the job's record (loads, peer fetches, cache hits, lanes, leaves as
  // they ran, what the cache holds at the end).
  void submit_allpairs(const std::string& stage, std::string key, AllPairsJob job,
                       std::function<void(HostedResult)> done);
  // One next() of source stage `stage`, whose operator this node keeps from
  // call to call (opened on the first): the coordinator asks for one at a
  // time, as its window allows. Outputs: what next() emitted, then an empty
  // item whose attrs["flowd.source"] is {"more": whether next() said more
  // would come, "expected": the total the source announced, or null}.
  void submit_source(const std::string& stage, std::string key, std::function<void(HostedResult)> done);
  // A step of sink stage `stage`, which a placement moved to this node:
  // `spec` is the job's {"phase": "sink", "step": ...} (runtime/node_sinks.hpp
  // lists the steps); `inputs`, one per input port, only for "consume".
  // No outputs.
  void submit_sink(const std::string& stage, std::string key, Json spec, std::vector<std::optional<Item>> inputs,
                   std::function<void(HostedResult)> done);
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

#pragma once
// The validated dataflow graph: stages with their operator instances and the
// edges between their ports. Built only by validate() (validate.hpp).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plugin/registry.hpp"
#include "sched/allpairs_plan.hpp"
#include "sched/scan_strategy.hpp"
#include "workflow/labels.hpp"
#include "workflow/workflow.hpp"

namespace flowd::workflow {

struct PortRef {
  std::size_t stage;
  std::size_t port;
};

// An all-pairs stage's pairs and tuning (docs/workflow-format.md,
// "All-pairs stages"); 0 means "choose".
struct AllPairsConfig {
  sched::PairShape shape = sched::PairShape::triangle;
  std::uint64_t leaf_pairs = 0;
  std::uint64_t cache_items = 0;
  // Each GPU's cache of preprocessed items in its memory (0: as many as the
  // host cache).
  std::uint64_t gpu_cache_items = 0;
  std::uint64_t max_loads = 8;
  bool load_ahead = true;  // loader threads load items ahead of the workers
  // A cluster run: a node missing a preprocessed item asks the node the
  // coordinator's directory says holds it before loading it itself.
  bool peer_cache = true;
};

struct StageNode {
  std::string name;
  std::size_t index = 0;
  // Declared before `op` so the operator is destroyed while its plugin is
  // still mapped.
  plugin::OperatorHandle handle;
  // The operators it may run as sub-tasks (OperatorSpec::uses), opened.
  std::map<std::string, plugin::OperatorHandle, std::less<>> uses;
  Params params;
  std::unique_ptr<Operator> op;
  std::vector<std::optional<PortRef>> inputs;   // producer of each input port (none if unconnected)
  std::vector<std::vector<PortRef>> consumers;  // consumers of each output port
  StageLabels labels;  // parsed "labels" (default: anywhere); a cluster run places by them
  sched::ScanStrategy strategy = sched::ScanStrategy::work_stealing;  // scan stages: "strategy"
  bool consecutive_pairs = false;  // map stages: "pairs": "consecutive" (its two inputs get x_i, x_i+1)
  bool first_pair_alone = false;   // "consecutive-with-first": (x_0, x_0) comes first
  AllPairsConfig allpairs{};       // all-pairs stages: "pairs" and "allpairs"

  const OperatorSpec& spec() const noexcept { return handle.spec(); }
  std::size_t connected_inputs() const noexcept {
    std::size_t n = 0;
    for (const auto& i : inputs) n += i.has_value();
    return n;
  }
  // A source or sink with labels: a cluster run has one worker node they
  // match run it (a placement sets them, docs/cluster.md "Placement"), so
  // that a source reads its data where they are and a sink writes its files
  // where they belong. Without labels the coordinator runs it.
  bool source_on_a_node() const noexcept { return spec().pattern == Pattern::source && has_labels(); }
  bool sink_on_a_node() const noexcept { return spec().pattern == Pattern::sink && has_labels(); }
  bool has_labels() const noexcept { return !labels.all.empty() || !labels.any.empty() || !labels.prefer.empty(); }
};

struct Graph {
  Workflow workflow;
  std::vector<StageNode> stages;  // in topological order: producers before consumers

  const StageNode* find(std::string_view name) const {
    for (const auto& s : stages)
      if (s.name == name) return &s;
    return nullptr;
  }
};

}  // namespace flowd::workflow

#pragma once
// Context labels (Constellation, DESIGN.md "Labels"): where a stage may run
// and where it would rather run, decided by labels on stages and nodes
// alone, so placement changes by editing labels, never code.
//
// Node (or worker) labels, in the node's JSON description:
//   "labels": ["gpu", "site:amsterdam"]                 (rank 0)
//   "labels": {"names": ["gpu", "site:amsterdam"], "rank": 8}
// A label is a non-empty string without whitespace or control characters.
// "site:NAME" is the site convention used by stealing; a node has at most
// one site. The rank is an integer (e.g. cores or GPU memory in GiB); the
// stage's rank policy uses it.
//
// Stage labels:
//   "labels": ["gpu"]                      shorthand for {"all": ["gpu"]}
//   "labels": {"all":  ["gpu"],            every one must be on the node
//              "any":  ["cuda", "rocm"],   at least one must be on the node
//              "prefer": ["site:amsterdam", "site:delft"],
//                                          ordered: a node with the first is
//                                          better than one with only the
//                                          second; a node with none cannot
//                                          run the stage ...
//              "anywhere": true,           ... unless this is true: then it
//                                          can, as the last choice
//              "rank": "biggest"}          among equally preferred nodes:
//                                          "biggest" / "smallest" rank, or
//                                          "any" (default: no preference)
// Every key is optional; a stage without labels runs anywhere. Unknown keys,
// wrong types, empty or duplicate labels, and "anywhere" without "prefer"
// are errors reported at their JSON pointer.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace flowd::net::cluster {

struct LabelError {
  std::string pointer;  // JSON pointer of the offending value
  std::string message;
};

struct NodeLabels {
  std::vector<std::string> names;
  std::int64_t rank = 0;
};

enum class RankPolicy { any, biggest, smallest };

struct StageLabels {
  std::vector<std::string> all;
  std::vector<std::string> any;
  std::vector<std::string> prefer;
  bool anywhere = false;
  RankPolicy rank = RankPolicy::any;
};

template <class T>
struct Parsed {
  T value{};
  std::vector<LabelError> errors;  // every problem found, not just the first
  bool ok() const noexcept { return errors.empty(); }
};

// `pointer` is where `labels` sits in the document (e.g. "/nodes/2/labels");
// errors are reported below it.
Parsed<NodeLabels> parse_node_labels(const nlohmann::json& labels, std::string_view pointer);
Parsed<StageLabels> parse_stage_labels(const nlohmann::json& labels, std::string_view pointer);

// 0 is best; a stage without "prefer" gives 0 on every node it can run on;
// with "prefer" the index of the first preferred label the node has, or
// prefer.size() for the "anywhere" fallback. nullopt: the node cannot run
// the stage.
std::optional<int> preference(const StageLabels& stage, const NodeLabels& node);
bool can_run(const StageLabels& stage, const NodeLabels& node);

struct Executor {
  std::string id;  // node or worker name, unique among candidates
  NodeLabels labels;
};

// Index of the executor to run the stage on, nullopt when none can: best
// preference, then the rank policy, then the smallest id, so the choice
// does not depend on the order of `candidates`.
std::optional<std::size_t> pick_executor(const StageLabels& stage, std::span<const Executor> candidates);

// The node's site: NAME of its "site:NAME" label, nullopt without one.
std::optional<std::string> site_of(const NodeLabels& node);

// The order in which an idle node (the thief, in `thief_site`) asks the
// other nodes for work: nodes of its own site first, then the rest; each
// group shuffled by a generator seeded with `seed`, so that thieves spread
// over victims yet a run is reproducible. Nodes without a site, and every
// node when the thief has none, are in the second group. Returns indices
// into `others`. The shuffle is flowd's own (SplitMix64, Fisher-Yates), not
// std::shuffle, whose result differs between standard libraries.
std::vector<std::size_t> steal_victim_order(const std::optional<std::string>& thief_site,
                                            std::span<const Executor> others, std::uint64_t seed);

}  // namespace flowd::net::cluster

#pragma once
// Context labels (Constellation; docs/cluster.md "Labels"): where a stage
// may run and where it would rather run, decided by labels on stages and
// nodes alone, so placement changes by editing labels, never code. The
// grammar is part of the workflow format: validate() parses a stage's labels
// once into its StageNode, and a cluster run reads that parsed form.
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
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace flowd::workflow {

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

// The node's site: NAME of its "site:NAME" label, nullopt without one.
std::optional<std::string> site_of(const NodeLabels& node);

}  // namespace flowd::workflow

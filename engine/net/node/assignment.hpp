#pragma once
// The coordinator's placement decisions (docs/cluster.md "Runtime protocol"
// steps 5 and 8), free of sockets and threads so they can be tested alone:
// which ready task a node asking for work gets, and whom an idle node
// steals from.
//
// Rule for labels (Constellation): a node may take a task when it can run
// the stage at all (its labels satisfy the stage's, and the stage is not
// unavailable there). Among the nodes that can, a task waits for one with a
// strictly better preference (workflow::preference, lower is better) only
// while such a node is asking for work at the same time (the coordinator
// passes best_preferences() over the nodes with unused credit): a busy
// preferred node leaves the task to an idle node whose labels match later
// in the stage's "prefer" list or as "anywhere", as Constellation's
// executors take every match of their first context, then of later ones,
// rather than idle. Among the tasks a node may take, it gets the one with
// the best preference for it, then the most input bytes it already holds,
// then the oldest.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "net/cluster/placement.hpp"

namespace flowd::net::node {

// What placement needs to know of a worker node.
struct NodeView {
  std::uint32_t id = 0;
  std::string name;  // for messages
  workflow::NodeLabels labels;
  std::set<std::string, std::less<>> unavailable;  // stage names it cannot open
};

// What placement needs to know of a stage.
struct StagePlacement {
  std::string name;
  workflow::StageLabels labels;  // default: anywhere
};

// The node's preference for the stage (0 best), nullopt when it cannot run
// it at all.
std::optional<int> placement_preference(const StagePlacement& stage, const NodeView& node);

// Why `node` cannot run `stage` ("" when it can), for error messages.
std::string why_not(const StagePlacement& stage, const NodeView& node, const std::string& reason_unavailable = {});

// For each stage, the best preference among `live` nodes (nullopt: no live
// node can run it).
std::vector<std::optional<int>> best_preferences(std::span<const StagePlacement> stages,
                                                 std::span<const NodeView> live);

struct ReadyTask {
  std::uint64_t seq = 0;   // submission order: lower is older
  std::size_t stage = 0;   // index into the stages
  // (holder, bytes) of each input that lives on some node.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> inputs;
};

// Index into `ready` of the task `node` should take, nullopt when none fits
// (see the rule at the top). `best` is best_preferences() over the nodes
// asking for work now.
// Without `locality` the bytes a node holds are ignored (the oldest task of
// the best preference wins): placement blind to where data lives, the
// "anywhere" of the Constellation experiment.
// `ranks` is best_ranks() over the same nodes as `best`: where a stage has a
// rank policy, only the node(s) of the best rank among the equally
// preferred ones asking take it.
std::optional<std::size_t> choose_task(std::span<const ReadyTask> ready, const NodeView& node,
                                       std::span<const StagePlacement> stages,
                                       std::span<const std::optional<int>> best, bool locality = true,
                                       std::span<const std::optional<std::int64_t>> ranks = {});

// For each stage with a rank policy ("biggest" / "smallest"), the best rank
// among `nodes` whose preference for it is `best` (best_preferences() over
// the same nodes); nullopt for "any" or when no node can run it.
std::vector<std::optional<std::int64_t>> best_ranks(std::span<const StagePlacement> stages, std::span<const NodeView> nodes,
                                                    std::span<const std::optional<int>> best);

// Input bytes of `task` already held by node `id`.
std::uint64_t local_bytes(const ReadyTask& task, std::uint32_t id);

// Index into `victims` of the node an idle `thief` asks first: same site
// first, then the rest, each group in a shuffle seeded by `seed`
// (cluster::steal_victim_order). With `worth` (one per victim: how many of
// its tasks would pay to move), the one worth most within the first group
// that has any, ties in that order. nullopt when `victims` is empty.
std::optional<std::size_t> choose_victim(const NodeView& thief, std::span<const NodeView> victims, std::uint64_t seed,
                                         std::span<const std::uint32_t> worth = {});

}  // namespace flowd::net::node

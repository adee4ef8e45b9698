#pragma once
// Which node runs a stage's task, and whom an idle node robs first: the
// placement rules a cluster run applies to the parsed context labels
// (workflow/labels.hpp). Pure logic, tested without a network.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "workflow/labels.hpp"

namespace flowd::net::cluster {

using workflow::NodeLabels;
using workflow::StageLabels;

struct Executor {
  std::string id;  // node or worker name, unique among candidates
  NodeLabels labels;
};

// Index of the executor to run the stage on, nullopt when none can: best
// preference, then the rank policy, then the smallest id, so the choice
// does not depend on the order of `candidates`.
std::optional<std::size_t> pick_executor(const StageLabels& stage, std::span<const Executor> candidates);

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

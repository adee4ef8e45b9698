#pragma once
// flowd run --sites S --placement auto|PLAN.json (docs/cluster.md
// "Placement"): each stage held to its site's nodes through its labels
// ({"all": ["site:NAME"]}), the stages the coordinator runs (sources and
// sinks) on the coordinator's site, and the prediction kept to compare
// with the run.
#include <optional>
#include <string>

#include "placement/planner.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::cli {

struct PlacementOptions {
  std::string sites;      // --sites FILE
  std::string placement;  // --placement auto | PLAN.json
  std::string profile;    // --profile FILE (auto; and predictions for a PLAN.json)
  bool given() const noexcept { return !placement.empty(); }
};

struct AppliedPlacement {
  placement::Sites sites;
  placement::Placement where;
  std::optional<placement::Prediction> predicted;  // with a profile
};

// Throws flowd::Error (or ValidationError) naming the file, stage or site.
AppliedPlacement apply_placement(workflow::Graph& g, const PlacementOptions& o, Logger& log);

}  // namespace flowd::cli

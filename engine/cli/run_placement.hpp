#pragma once
// flowd run --sites S --placement auto|PLAN.json (docs/cluster.md
// "Placement"): each stage held to its site's nodes through its labels
// ({"all": ["site:NAME"]}): a source on another site than the
// coordinator's runs on one node there (it reads its data where they are),
// sinks stay with the coordinator; the prediction kept to compare with the
// run.
#include <optional>
#include <string>

#include "placement/planner.hpp"
#include "placement/profile.hpp"
#include "runtime/run_types.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::cli {

struct PlacementOptions {
  std::string sites;      // --sites FILE
  std::string placement;  // --placement auto | PLAN.json
  std::string profile;    // --profile FILE (auto; and predictions for a PLAN.json)
  double replan_margin = 0.5;  // --replan-margin: the drift that plans again (auto)
  bool given() const noexcept { return !placement.empty(); }
};

struct AppliedPlacement {
  placement::Sites sites;
  placement::Placement where;
  std::optional<placement::Prediction> predicted;  // with a profile
  std::optional<placement::Problem> problem;       // with a profile: what the plan weighed
  bool planned = false;                            // --placement auto
};

// Throws flowd::Error (or ValidationError) naming the file, stage or site.
AppliedPlacement apply_placement(workflow::Graph& g, const PlacementOptions& o, Logger& log);

// --sites without --placement: today's demand-driven placement, predicted
// with --profile (nullopt without one), to set beside the measured time.
// Throws as apply_placement.
std::optional<placement::Prediction> demand_driven(const workflow::Graph& g, const PlacementOptions& o);

// Map-like stages, which a re-plan may move during a run (not sources nor
// sinks, whose state and files are on their node).
bool moves_during_a_run(const workflow::StageNode& s);

// Each stage's cost per source item as a run measured it (--stage-profile):
// its busy time, the items and bytes it emitted in this process (a cluster
// run's worker nodes report no bytes); a source's input data taken as large
// as what it emits, a sink's results as what it receives (an upper bound).
placement::Profile measured_profile(const workflow::Graph& g, const runtime::Progress& final);

// "src@near, step@far, out@near".
std::string describe(const workflow::Graph& g, const AppliedPlacement& placed);

// The labels that hold a stage to a site's nodes.
workflow::StageLabels site_labels(const placement::Site& site);

// Re-planning (--placement auto): once a tenth of the expected source items
// (at least 4) are done, each stage's measured seconds per source item
// (its busy time per task times its tasks per source item, at least one,
// scaled by its site's speed) is compared with the profile's; where a
// stage the plan can move (not a source, which keeps its node, or a sink)
// that takes at least 5 % of the movable stages' measured time differs by
// more than `margin` (--replan-margin, default 0.5: half the profile's
// value either way), the profile takes the measured values and the
// placement is planned again. The next check waits for another tenth of
// the items and compares with the values taken, so a run re-plans as often
// as its costs keep drifting, never twice on the same evidence.
class Replanner {
public:
  explicit Replanner(AppliedPlacement& placed, double margin = 0.5) : placed_(placed), margin_(margin) {}
  // A new placement when this progress calls for one.
  std::optional<placement::Placement> check(const runtime::Progress& p, std::string* why);

private:
  AppliedPlacement& placed_;
  double margin_;
  std::uint64_t next_check_ = 0;  // retired source items before the next comparison
};

}  // namespace flowd::cli

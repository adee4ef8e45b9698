#pragma once
// How far a plan holds (docs/cluster.md "Placement"). What moving an item
// costs a host's CPUs (Host::transfer_cpu) is the model's least certain
// term: probes of one machine's links read 1–4.5 ms a MB, the workflow's
// own runs 8.8 (docs/benchmarks.md §15.8). For each host that pays for
// moving items, the range of that cost over which the planner still
// chooses the same placement, and what it chooses just outside: a plan
// that changes at 1.2× the figure is a guess, one that holds from a
// quarter to four times it is not.
#include <cstdint>
#include <optional>
#include <vector>

#include "placement/model.hpp"
#include "placement/planner.hpp"

namespace flowd::placement {

struct HostSensitivity {
  std::size_t host = 0;  // index into Sites::hosts
  // Seconds per byte at each end. The plan holds over [low, high]; the
  // scan goes from min_scale to max_scale times the host's figure, so a
  // bound at the scan's end means "at least that far".
  double low = 0, high = 0;
  bool low_is_scan_end = false, high_is_scan_end = false;
  std::optional<Plan> below, above;  // the planner's choice just outside [low, high]
};

struct SensitivityOptions {
  double min_scale = 1.0 / 8, max_scale = 8;
  std::uint64_t exhaustive_limit = default_exhaustive_limit;
};

// One entry per host with a non-zero transfer_cpu. `chosen` is
// plan(p, options.exhaustive_limit)'s answer. Re-plans about 40 times a
// host: callers skip it where one plan is already slow.
std::vector<HostSensitivity> transfer_sensitivity(const Problem& p, const Plan& chosen,
                                                  const SensitivityOptions& options = {});

}  // namespace flowd::placement

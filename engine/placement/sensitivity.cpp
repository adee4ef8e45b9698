#include "placement/sensitivity.hpp"

#include <cmath>

namespace flowd::placement {

namespace {

// The planner's answer with host h's transfer cost at `scale` times its own.
Plan plan_scaled(const Problem& p, std::size_t h, double scale, std::uint64_t limit) {
  Problem q = p;
  q.sites.hosts[h].transfer_cpu *= scale;
  return plan(q, limit);
}

struct Edge {
  double holds;                // the furthest scale seen with the same placement
  bool scan_end;               // no change found before the scan's end
  std::optional<Plan> beyond;  // the first different plan seen beyond it
};

// Walks from scale 1 towards `end` in steps of 2^(1/4) (up or down), and
// where the placement first differs, bisects that step to a 1 % width.
Edge edge(const Problem& p, std::size_t h, const Plan& chosen, double end, std::uint64_t limit) {
  const double step = end > 1 ? std::pow(2.0, 0.25) : std::pow(2.0, -0.25);
  double same = 1;
  for (;;) {
    const double next = end > 1 ? std::min(same * step, end) : std::max(same * step, end);
    Plan r = plan_scaled(p, h, next, limit);
    if (r.where != chosen.where) {
      double other = next;
      while (std::abs(other / same - 1) > 0.01) {
        const double mid = std::sqrt(same * other);
        Plan m = plan_scaled(p, h, mid, limit);
        if (m.where == chosen.where) {
          same = mid;
        } else {
          other = mid;
          r = std::move(m);
        }
      }
      return {same, false, std::move(r)};
    }
    same = next;
    if (same == end) return {same, true, std::nullopt};
  }
}

}  // namespace

std::vector<HostSensitivity> transfer_sensitivity(const Problem& p, const Plan& chosen,
                                                  const SensitivityOptions& options) {
  std::vector<HostSensitivity> out;
  for (std::size_t h = 0; h < p.sites.hosts.size(); ++h) {
    const double base = p.sites.hosts[h].transfer_cpu;
    if (!(base > 0)) continue;
    const Edge up = edge(p, h, chosen, options.max_scale, options.exhaustive_limit);
    const Edge down = edge(p, h, chosen, options.min_scale, options.exhaustive_limit);
    out.push_back({h, base * down.holds, base * up.holds, down.scan_end, up.scan_end, down.beyond, up.beyond});
  }
  return out;
}

}  // namespace flowd::placement

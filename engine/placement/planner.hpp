#pragma once
// Choosing the site of every stage (docs/cluster.md "Placement"): the
// placement with the least predicted total (model.hpp) for the stream of
// N items.
//
// - Exhaustive: every placement (fixed stages on their sites) when there
//   are at most `exhaustive_limit` site assignments to try (m^n for n
//   stages on m sites): exact over all of them, items sent back along the
//   chain and branches of a DAG on different sites included.
// - Otherwise a min–max dynamic programme over the stages' topological
//   order cut into contiguous runs, one per site in chain order. The total
//   (N − 1)·max + Σ is not a sum of per-site terms, so the programme runs
//   once per candidate bottleneck B (every value a site's run or a link's
//   traffic can take): the least Σ with every site and link at most B,
//   then the least (N − 1)·B + Σ over the B's, each candidate judged by
//   the full model. Exact over contiguous forward placements (every item
//   flows forward, as in the paper), O(m²·n⁴), when no host is shared by
//   several sites; with such hosts the DP does not see their bound while
//   it searches, so it is a heuristic there (exhaustive search is exact).
#include <cstdint>
#include <string>

#include "placement/model.hpp"

namespace flowd::placement {

struct Plan {
  Placement where;
  Prediction predicted;
  std::string method;        // "exhaustive" or "min-max DP"
  std::uint64_t tried = 0;   // placements (exhaustive) or candidate bottlenecks (DP)
};

inline constexpr std::uint64_t default_exhaustive_limit = 1'000'000;

Plan plan_exhaustive(const Problem& p);
Plan plan_dp(const Problem& p);
// Exhaustive when small, else the DP.
Plan plan(const Problem& p, std::uint64_t exhaustive_limit = default_exhaustive_limit);

}  // namespace flowd::placement

#pragma once
// The static scan strategies as plans: which combines an inclusive prefix
// scan of n elements applies, on what, and in what dependency order. A plan
// is pure data (no values, no threads), so its combine counts and depth are
// tested on their own (tests/scan/test_scan_plan.cpp) and an executor runs it
// as a task DAG (sched/scan.hpp).
//
// Combine counts (n a power of two; others: docs/architecture.md, "Scan"):
//   sequential      n − 1                       depth n − 1
//   dissemination   n·log n − n + 1             depth log n
//   blelloch        2(n − 1) − log n            depth 2·log n − 1 (n ≥ 2)
//   ladner-fischer  < 4n − 5 (n ≥ 4)            depth log n
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sched/scan_strategy.hpp"

namespace flowd::sched {

struct ScanPlan {
  // A value of the scan: an input element (ref < n) or the output of step
  // ref − n.
  using Ref = std::uint32_t;
  struct Step {
    Ref left = 0, right = 0;  // combine(left, right): left holds the earlier elements
    std::uint32_t round = 0;  // 1 + the larger round of its operands (inputs: 0)
  };

  std::size_t n = 0;
  std::vector<Step> steps;  // in an order where operands come first
  std::vector<Ref> result;  // y_i = x_0 ⊙ … ⊙ x_i, for i < n
  std::uint32_t depth = 0;  // the largest round

  bool is_input(Ref r) const noexcept { return r < n; }
  std::size_t step_of(Ref r) const noexcept { return r - n; }
};

// The plan of a static strategy for n elements. Throws std::invalid_argument
// for work_stealing, which has no static plan (sched/scan_hierarchical.hpp).
ScanPlan make_scan_plan(ScanStrategy strategy, std::size_t n);

// The ceiling of log2 n (0 for n <= 1).
std::uint32_t ceil_log2(std::size_t n) noexcept;

}  // namespace flowd::sched

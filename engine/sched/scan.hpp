#pragma once
// Inclusive prefix scans of an associative, possibly non-commutative
// combine, by any strategy, on a pool's workers: the entry point the
// runtime's scan stages and the benchmarks use.
#include <span>
#include <vector>

#include "sched/scan_hierarchical.hpp"
#include "sched/scan_plan.hpp"
#include "sched/scan_static.hpp"

namespace flowd::sched {

struct ScanOptions {
  ScanStrategy strategy = ScanStrategy::work_stealing;
  // work_stealing: lanes per rank and in-process ranks, and the scan of each
  // rank's lane partials. Static plans use whatever workers the pool has.
  int lanes = 1;
  int ranks = 1;
  ScanStrategy partials = ScanStrategy::dissemination;
  KindMask runs_on = cpu_only;
  bool paper_start = false;  // HierarchicalOptions::paper_start
};

// y_i = x_0 ⊙ … ⊙ x_i for every i, by o.strategy; `stats` says what it cost.
template <class T, class C, TaskSubmitter P>
requires ScanCombine<C, T> std::vector<T> scan(std::span<const T> x, C& combine, const ScanOptions& o, P& pool,
                                               ScanStats& stats) {
  if (is_hierarchical(o.strategy)) {
    HierarchicalOptions h{o.ranks, o.lanes, o.strategy == ScanStrategy::work_stealing, o.partials, o.runs_on,
                          o.paper_start};
    return hierarchical_scan(x, combine, h, pool, stats);
  }
  const ScanPlan plan = make_scan_plan(o.strategy, x.size());
  stats = ScanStats{};
  stats.strategy = o.strategy;
  return run_scan_plan(plan, x, combine, pool, stats, o.runs_on);
}

}  // namespace flowd::sched

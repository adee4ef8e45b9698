#pragma once
// Runs a static scan plan (sched/scan_plan.hpp) as a task DAG on a pool's
// workers: one task per combine, started as soon as its two operands exist,
// so no round waits for the slowest combine of the round before.
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "sched/scan_combine.hpp"
#include "sched/scan_plan.hpp"
#include "sched/task_graph.hpp"

namespace flowd::sched {

// y_i = x_0 ⊙ … ⊙ x_i by `plan` (built for x.size() elements), on `pool`.
// `runs_on`: the worker kinds the combine can run on. Fills `stats` (lanes
// are the pool's workers, by id). Rethrows the first exception a combine
// threw; combines depending on it are not run.
template <class T, class C, TaskSubmitter P>
requires ScanCombine<C, T> std::vector<T> run_scan_plan(const ScanPlan& plan, std::span<const T> x, C& combine, P& pool,
                                                        ScanStats& stats, KindMask runs_on = cpu_only) {
  using V = Tracked<T>;
  const std::size_t n = plan.n;
  if (x.size() != n) throw std::invalid_argument("run_scan_plan: the plan is for a different number of elements");
  const auto t0 = std::chrono::steady_clock::now();
  ScanMeter meter;
  std::vector<std::optional<V>> values(plan.steps.size());
  // Consumers left per step value: a value is dropped after its last
  // consumer ran, unless it is a result, so a scan keeps O(n) values alive
  // even when its plan makes n·log n of them.
  auto uses = std::make_unique<std::atomic<std::uint32_t>[]>(plan.steps.size());
  for (const auto& s : plan.steps)
    for (auto r : {s.left, s.right})
      if (!plan.is_input(r)) uses[plan.step_of(r)].fetch_add(1, std::memory_order_relaxed);
  for (auto r : plan.result)
    if (!plan.is_input(r)) uses[plan.step_of(r)].fetch_add(1, std::memory_order_relaxed);  // never released

  auto value = [&](ScanPlan::Ref r) -> V {
    if (plan.is_input(r)) return V{x[r], 0};
    return *values[plan.step_of(r)];
  };
  auto release = [&](ScanPlan::Ref r) {
    if (!plan.is_input(r) && uses[plan.step_of(r)].fetch_sub(1, std::memory_order_acq_rel) == 1)
      values[plan.step_of(r)].reset();
  };

  TaskGraph g;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const auto step = plan.steps[i];
    const auto id = g.add_on_worker(
        [&, i, step](const WorkerInfo& w) {
          values[i] = meter.apply(static_cast<std::size_t>(w.id), combine, w, value(step.left), value(step.right));
          release(step.left);
          release(step.right);
        },
        runs_on);
    for (auto r : {step.left, step.right})
      if (!plan.is_input(r)) g.precede(static_cast<TaskGraph::NodeId>(plan.step_of(r)), id);
  }
  g.run(pool);

  std::vector<T> y;
  y.reserve(n);
  stats.depth = 0;
  for (auto r : plan.result) {
    V v = value(r);
    stats.depth = std::max(stats.depth, v.depth);
    y.push_back(std::move(v.value));
  }
  stats.elements = n;
  stats.hierarchical = false;
  stats.ranks = 1;
  stats.steals = 0;
  meter.report(stats, [](std::size_t i) { return "worker" + std::to_string(i); });
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return y;
}

}  // namespace flowd::sched

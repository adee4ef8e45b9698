// Stages that need their whole series before their first task: a scan, an
// all-pairs stage (run in allpairs_stage.cpp), and a map fed consecutive pairs. Both keep every item they receive, by key in
// natural order, until their inputs close. A scan then runs its strategy
// (sched/scan.hpp) with each combine a task on the run's workers, traced and
// placed like any task; a pairs stage dispatches one map task per pair.
#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <utility>

#include "runtime/remote.hpp"
#include "runtime/run_state.hpp"
#include "runtime/scan_combiner.hpp"
#include "sched/scan.hpp"
#include "sched/scan_plan.hpp"

namespace flowd::runtime::detail {

// ctx.item(port, key) of a combine in this process: an item the stage holds.
ScanOtherInput RunState::held_items(StageState& s) {
  return [&s](std::size_t port, std::string_view key) -> CarriedPtr {
    const auto& spec = s.node->spec();
    const auto it = s.held[port].find(std::string(key));
    if (it == s.held[port].end())
      throw Error("no item with key '" + std::string(key) + "' arrived on input '" + spec.inputs[port].name + "'");
    return it->second;
  };
}

void RunState::hold_locked(StageState& s, std::size_t port, const CarriedPtr& c) {
  // Both inputs of a pairs stage read the same output: the item once.
  if (s.node->consecutive_pairs && port != 0) return;
  const std::string& key = c->item.meta.key;
  // Without its credits: the source emits the rest of the series meanwhile.
  auto kept = std::make_shared<Carried>(Carried{c->item, {}, c->where, c->remote});
  if (!s.held[port].emplace(key, std::move(kept)).second)
    fail_locked(s, key,
                "received two items with key '" + key + "' on input '" + s.node->spec().inputs[port].name +
                    "'; the series is ordered by key, so keys must be unique");
}

bool RunState::release_locked(StageState& s, sched::TaskEnv* env) {
  s.released = true;
  if (s.pattern() == Pattern::scan || s.pattern() == Pattern::allpairs) {
    ++s.active;
    const auto kind = s.pattern() == Pattern::scan ? StageTask::Kind::scan : StageTask::Kind::allpairs;
    runner_.submit(std::make_unique<StageTask>(*this, s, kind), env);
    return true;
  }
  const HeldItems series = std::move(s.held[0]);
  s.held[0].clear();
  if (series.size() == 1 && !s.node->first_pair_alone)
    log().warn("[" + s.name() + "] received one item ('" + series.begin()->first + "'), so there is no pair");
  const std::size_t nports = s.node->inputs.size();
  // The first element paired with itself: the operator's cue for the
  // series' start (a registration's identity motion for frame 0).
  if (s.node->first_pair_alone && !series.empty()) {
    Tuple t{series.begin()->first, std::vector<CarriedPtr>(nports)};
    t.ports[0] = t.ports[1] = series.begin()->second;
    dispatch_locked(s, std::move(t), env);
  }
  for (auto it = series.begin(); it != series.end() && std::next(it) != series.end(); ++it) {
    const auto next = std::next(it);
    // Keyed by the later element: the pair (x_i, x_i+1) stands for the step to i+1.
    Tuple t{next->first, std::vector<CarriedPtr>(nports)};
    t.ports[0] = it->second;
    t.ports[1] = next->second;
    dispatch_locked(s, std::move(t), env);
  }
  return s.active > 0;
}

namespace {

// For progress: a static plan's combines exactly; the work-stealing scan's
// about 2n - n/L on L lanes (each lane's chain, the lanes' partials, the
// second pass over all but the first lane's part).
std::uint64_t expected_combines(sched::ScanStrategy strategy, std::size_t n, std::size_t lanes) {
  if (n < 2) return 0;
  if (!sched::is_hierarchical(strategy)) return sched::make_scan_plan(strategy, n).steps.size();
  const std::size_t l = std::max<std::size_t>(1, std::min(lanes, n));
  return 2 * n - n / l;
}

}  // namespace

void RunState::run_scan(StageState& s, sched::TaskEnv& env) {
  std::vector<CarriedPtr> series;
  {
    std::lock_guard lk(m_);
    for (const auto& [key, c] : s.held[0])
      series.push_back(c);
  }
  Outcome o{true, {}, {}};
  std::vector<CarriedPtr> y;
  sched::ScanStats stats;
  if (series.empty()) {
    log().warn("[" + s.name() + "] received no items, so it produces nothing");
  } else if (!runner_.stopping()) {
    sched::ScanOptions so;
    so.strategy = s.node->strategy;
    so.runs_on = scan_kinds(s);
    so.lanes = scan_lanes(runner_, so.runs_on);
    // On one lane the hierarchical scan is the sequential chain and then a
    // second pass over it (2n - 3 combines for n - 1): run the chain.
    if (so.lanes == 1 && sched::is_hierarchical(so.strategy))
      so.strategy = sched::ScanStrategy::sequential;
    ScanCombiner combine(runner_, s, held_items(s));
    HelpingPool pool(runner_, env.worker());
    // A cluster run's hierarchical scan runs on the worker nodes, one rank
    // each (runtime/cluster_scan.cpp).
    std::vector<RemoteNode> ranks;
    if (opts().remote && sched::is_hierarchical(s.node->strategy))
      ranks = opts().remote->nodes_for(s.node->index);
    o.start_ns = runner_.trace().now();
    if (ranks.empty()) s.begin_steps(expected_combines(so.strategy, series.size(), so.lanes), "combines");
    try {
      y = ranks.empty() ? sched::scan(std::span<const CarriedPtr>(series), combine, so, pool, stats)
                        : cluster_scan(s, series, combine, ranks, env, stats);
    } catch (const std::exception& e) {
      o = {false, e.what(), failed_key(e, s.name()), o.start_ns, 0};
    }
    o.end_ns = runner_.trace().now();
  }
  if (!y.empty()) {
    if (!stats.hierarchical)  // static plans' lanes are the workers, by id
      for (std::size_t i = 0; i < stats.lane_names.size(); ++i)
        if (i < runner_.workers().workers.size()) stats.lane_names[i] = runner_.workers().workers[i].name;
    char line[160];
    std::snprintf(line, sizeof line, "scan of %llu elements: %s, %llu combines, depth %u, %zu lanes, %.3f s",
                  static_cast<unsigned long long>(stats.elements), std::string(sched::label_of(stats)).c_str(),
                  static_cast<unsigned long long>(stats.combines), stats.depth, stats.lane_names.size(), stats.seconds);
    log().info("[" + s.name() + "] " + line +
               (stats.ranks > 1 ? ", " + std::to_string(stats.ranks) + " ranks" : std::string()) +
               (stats.hierarchical && stats.stealing ? ", " + std::to_string(stats.steals) + " elements stolen" : ""));
  }
  std::lock_guard lk(m_);
  if (o.ok) {
    const PortSpec& out = s.node->spec().outputs[0];
    for (std::size_t i = 0; i < y.size(); ++i) {
      // y_i keyed like x_i, in the memory the last combine left it in.
      auto c = std::make_shared<Carried>(
          Carried{Item{series[i]->item.meta, y[i]->item.value}, {}, y[i]->where, y[i]->remote});
      if (!c->remote && !out.type.accepts(c->item.value)) {
        fail_locked(s, c->item.meta.key,
                    "emitted " + describe(c->item.value) + " on output '" + out.name + "', declared " + out.type.str());
        break;
      }
      route_one_locked(s, 0, c, &env);
    }
    if (!y.empty()) s.scan_stats = std::move(stats);
  }
  s.held.clear();
  end_task_locked(s, nullptr, o, &env);
}

Json RunState::scans_json() const {
  Json all = Json::array();
  for (const auto& s : stages_) {
    if (!s.scan_stats) continue;
    const auto& st = *s.scan_stats;
    Json lanes = Json::array();
    for (std::size_t i = 0; i < st.lane_names.size(); ++i)
      lanes.push_back(
          {{"name", st.lane_names[i]}, {"busy_seconds", st.lane_busy_seconds[i]}, {"combines", st.lane_ops[i]}});
    all.push_back({{"stage", s.name()},
                   {"operator", s.op()},
                   {"strategy", std::string(sched::label_of(st))},
                   {"elements", st.elements},
                   {"combines", st.combines},
                   {"depth", st.depth},
                   {"steals", st.steals},
                   {"ranks", st.ranks},
                   {"seconds", st.seconds},
                   {"lanes", std::move(lanes)}});
  }
  return all;
}

}  // namespace flowd::runtime::detail

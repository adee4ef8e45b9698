// Stages that need their whole series before their first task: a scan, and
// a map fed consecutive pairs. Both keep every item they receive, by key in
// natural order, until their inputs close. A scan then runs its strategy
// (sched/scan.hpp) with each combine a task on the run's workers, traced and
// placed like any task; a pairs stage dispatches one map task per pair.
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <utility>

#include "runtime/run_state.hpp"
#include "sched/scan.hpp"

namespace flowd::runtime::detail {

namespace {

// The run's workers as a scan's task graph sees them from the scan task's
// own worker, which runs ready tasks while it waits (so a scan on one worker
// does not wait for itself).
class HelpingPool {
public:
  HelpingPool(TaskRunner& r, const sched::WorkerInfo& w) : runner_(r), worker_(w) {}
  void submit(std::vector<sched::TaskPtr> tasks) {
    for (auto& t : tasks)
      runner_.submit(std::move(t), nullptr);
  }
  bool help_one() { return runner_.run_one(worker_); }

private:
  TaskRunner& runner_;
  const sched::WorkerInfo& worker_;
};

}  // namespace

// One combine as the scan strategies call it: the operands (carried items)
// placed where the worker's variant runs, the shortcut tried, then the CPU or
// GPU combine, its span traced; the result carries the right operand's
// metadata (the key of the last element it covers).
class RunState::ScanCombine {
public:
  ScanCombine(RunState& st, StageState& s) : st_(st), s_(s), op_(static_cast<const Scan&>(*s.node->op)) {}

  CarriedPtr operator()(const sched::WorkerInfo& w, const CarriedPtr& left, const CarriedPtr& right) const {
    TaskRunner& runner = st_.runner_;
    const bool gpu_like = sched::is_gpu_like(w.kind);
    const bool on_gpu = w.kind == sched::WorkerKind::gpu && s_.gpu_scan;
    const int where = gpu_like ? w.id : memory::host;
    const std::string& key = right->item.meta.key;
    const Tuple operands{key, {left, right}};
    std::vector<Item> scratch;
    std::deque<std::vector<Item>> others;  // keeps the items the combine read by key
    double moved = 0;
    Item result;
    const Outcome o = s_.call(runner.trace(), key, [&] {
      const Inputs in = runner.place(operands, where, scratch, moved);
      const Item& a = *in.items[0];
      const Item& b = *in.items[1];
      ItemLookup lookup = [&](std::size_t port, std::string_view k) -> const Item& {
        return other_input(port, k, where, others.emplace_back());
      };
      if (on_gpu) {
        memory::Device& dev = *runner.workers().devices[static_cast<std::size_t>(w.id)];
        GpuScanContextImpl ctx(*s_.node, &in, st_.log(), runner.stop_flag(), lookup, dev);
        if (auto quick = op_.shortcut(ctx, a, b)) {
          result = std::move(*quick);
        } else {
          result = s_.gpu_scan->combine_gpu(ctx, a, b);
          dev.synchronize();
        }
      } else {
        ScanContextImpl ctx(*s_.node, &in, st_.log(), runner.stop_flag(), lookup);
        if (auto quick = op_.shortcut(ctx, a, b))
          result = std::move(*quick);
        else
          result = op_.combine(ctx, a, b);
      }
      const PortSpec& out = s_.node->spec().outputs[0];
      if (!out.type.accepts(result.value))
        throw Error("combine returned " + describe(result.value) + ", but output '" + out.name + "' is declared " +
                    out.type.str());
    });
    runner.trace_task(s_.op(), s_.name(), w, key, on_gpu ? "gpu" : gpu_like ? "sim" : "cpu", o);
    if (!o.ok) throw ItemError(o.key, o.error);
    return runner.carry(Item{right->item.meta, std::move(result.value)}, {}, &w);
  }

private:
  // ctx.item(port, key): an item of one of the stage's other inputs, placed
  // where the combine runs. One held by another node is pulled once and kept.
  const Item& other_input(std::size_t port, std::string_view key, int where, std::vector<Item>& scratch) const {
    const auto& spec = s_.node->spec();
    if (port == 0 || port >= s_.held.size())
      throw Error("input '" + spec.inputs.at(port).name + "' is the series; a combine gets its elements as operands");
    const auto it = s_.held[port].find(std::string(key));
    if (it == s_.held[port].end())
      throw Error("no item with key '" + std::string(key) + "' arrived on input '" + spec.inputs[port].name + "'");
    CarriedPtr c = it->second;
    if (c->remote) {
      std::lock_guard lk(fetched_m_);
      auto& local = fetched_[{port, it->first}];
      if (!local) local = std::make_shared<Carried>(Carried{c->remote->fetch(), {}});
      c = local;
    }
    double moved = 0;
    const Inputs in = st_.runner_.place(Tuple{it->first, {c}}, where, scratch, moved);
    // Valid while `c` lives: held by the stage (or the cache) for the scan's life.
    return *in.items[0];
  }

  RunState& st_;
  StageState& s_;
  const Scan& op_;
  mutable std::mutex fetched_m_;
  mutable std::map<std::pair<std::size_t, std::string>, CarriedPtr> fetched_;
};

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
  if (s.pattern() == Pattern::scan) {
    ++s.active;
    runner_.submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::scan), env);
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
    so.runs_on = sched::cpu_only | sched::bit(sched::WorkerKind::sim_gpu) |
                 (s.gpu_scan ? sched::bit(sched::WorkerKind::gpu) : sched::KindMask{0});
    so.lanes = 0;
    for (const auto& w : runner_.workers().workers)
      so.lanes += (so.runs_on & sched::bit(w.kind)) != 0;
    so.lanes = std::max(so.lanes, 1);
    // On one lane the hierarchical scan is the sequential chain and then a
    // second pass over it (2n - 3 combines for n - 1): run the chain.
    if (so.lanes == 1 && so.strategy == sched::ScanStrategy::work_stealing)
      so.strategy = sched::ScanStrategy::sequential;
    ScanCombine combine(*this, s);
    HelpingPool pool(runner_, env.worker());
    o.start_ns = runner_.trace().now();
    try {
      y = sched::scan(std::span<const CarriedPtr>(series), combine, so, pool, stats);
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

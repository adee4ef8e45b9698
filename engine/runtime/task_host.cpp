// A cluster worker node's executor: a task runner with the graph's map,
// scan and all-pairs stages, and the sources and sinks a placement moved
// here, without routing; each task's result goes back to its caller.
#include "runtime/task_host.hpp"

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "runtime/allpairs_job.hpp"
#include "runtime/hosted_job.hpp"
#include "runtime/node_sinks.hpp"
#include "runtime/scan_combiner.hpp"
#include "runtime/task_runner.hpp"
#include "sched/scan.hpp"

namespace flowd::runtime {

using detail::Stage;
using detail::TaskRunner;

struct TaskHost::State {
  State(workflow::Graph& graph, RunOptions options, Logger& log)
      : runner(graph, std::move(options), log), sinks(log) {}
  TaskRunner runner;
  detail::NodeSinks sinks;  // after the runner: its tasks are stopped before the sinks abort
  std::deque<Stage> stages;  // deque: Stage holds atomics and never moves
  std::mutex caches_m;
  std::map<std::string, detail::AllPairsNodeCache> allpairs_caches;  // by all-pairs stage; map: never moves
  std::set<std::string> opened_sources;  // under caches_m: sources whose open() ran
};

namespace {

class HostedTask final : public sched::Task {
public:
  HostedTask(TaskRunner& runner, Stage& s, Tuple t, std::function<void(HostedResult)> done)
      : runner_(runner), s_(s), tuple_(std::move(t)), done_(std::move(done)) {}

  void run(sched::TaskEnv& env) override {
    HostedResult r;
    if (runner_.stopping()) {
      r.error = "the node is stopping";
      r.key = tuple_.key;
      done_(std::move(r));
      return;
    }
    detail::Execution ex = runner_.run_map_task(s_, tuple_, env);
    s_.tasks_done.fetch_add(1);
    r.ok = ex.outcome.ok;
    r.seconds = static_cast<double>(ex.work_ns) * 1e-9;
    if (!r.ok) {
      r.error = ex.outcome.error;
      r.key = ex.outcome.key;
      s_.failures.fetch_add(1);
    } else {
      try {
        // Outputs leave the node from host memory: a GPU variant's results
        // are downloaded here, once.
        for (auto& [port, item] : ex.out.items()) {
          r.outputs.emplace_back(port, runner_.host_copy(*runner_.carry(std::move(item), {}, &env.worker())));
        }
        s_.items_out.fetch_add(r.outputs.size());
      } catch (const std::exception& e) {
        r = HostedResult{};
        r.error = std::string("copying the outputs to host memory: ") + e.what();
        r.key = tuple_.key;
      }
    }
    done_(std::move(r));
  }

  void prefetch(const sched::WorkerInfo& w) override {
    if (sched::is_gpu_like(w.kind)) runner_.prefetch(tuple_, w);
  }
  bool wants_prefetch(const sched::WorkerInfo& w) const override {
    return sched::is_gpu_like(w.kind) && detail::needs_copy(tuple_, w.id);
  }
  const Tuple& tuple() const noexcept { return tuple_; }

private:
  TaskRunner& runner_;
  Stage& s_;
  Tuple tuple_;
  std::function<void(HostedResult)> done_;
};

// An element of a scan job's segment: pulled from its holder the first time
// a combine needs it, then kept.
class PulledOnce final : public RemoteItem {
public:
  PulledOnce(std::function<Item()> pull, std::string holder) : pull_(std::move(pull)), holder_(std::move(holder)) {}
  Item fetch() const override {
    std::lock_guard lk(m_);
    if (!item_) item_ = pull_();
    return *item_;
  }
  std::string holder() const override { return holder_; }

private:
  std::function<Item()> pull_;
  std::string holder_;
  mutable std::mutex m_;
  mutable std::optional<Item> item_;
};

// A scan rank's half (cluster_scan.cpp) on this node's workers.
class ScanJobTask final : public detail::HostedJob {
public:
  ScanJobTask(TaskRunner& runner, Stage& s, std::string key, ScanJob job, std::function<void(HostedResult)> done)
      : HostedJob(runner, s, std::move(key), std::move(done)), job_(std::move(job)) {}

private:
  Outputs compute(sched::TaskEnv& env) override {
    const Json& spec = job_.spec;
    const auto& lookup_keys = spec.at("lookup_keys");
    if (lookup_keys.size() != job_.lookup_ports.size())
      throw Error("the job names " + std::to_string(lookup_keys.size()) + " keys for " +
                  std::to_string(job_.lookup_ports.size()) + " items read by key");
    std::map<std::pair<std::size_t, std::string>, std::size_t, std::less<>> by_key;
    for (std::size_t i = 0; i < lookup_keys.size(); ++i)
      by_key[{job_.lookup_ports[i], lookup_keys[i].get<std::string>()}] = i;
    detail::ScanCombiner combine(runner_, s_, [&](std::size_t port, std::string_view key) -> CarriedPtr {
      const auto it = by_key.find(std::pair{port, std::string(key)});
      if (it == by_key.end())
        throw Error("no item with key '" + std::string(key) + "' arrived on input '" +
                    s_.node->spec().inputs.at(port).name + "'");
      return runner_.carry(job_.lookup(it->second), {}, nullptr);
    });
    const auto& keys = spec.at("keys");
    const auto n = spec.at("elements").get<std::size_t>();
    if (n == 0 || keys.size() != n || job_.element_holders.size() != n)
      throw Error("the job names " + std::to_string(keys.size()) + " keys and " +
                  std::to_string(job_.element_holders.size()) + " holders for " + std::to_string(n) + " elements");
    std::vector<CarriedPtr> x;
    for (std::size_t i = 0; i < n; ++i) {
      auto c = std::make_shared<Carried>();
      c->item.meta.key = keys[i].get<std::string>();
      c->remote = std::make_shared<PulledOnce>([this, i] { return job_.element(i); }, job_.element_holders[i]);
      x.push_back(std::move(c));
    }
    sched::HierarchicalOptions h;
    h.runs_on = detail::scan_kinds(s_);
    h.lanes = detail::scan_lanes(runner_, h.runs_on);
    h.steal = spec.at("steal").get<bool>();
    detail::HelpingPool pool(runner_, env.worker());
    sched::ScanStats st;
    Outputs out;
    Json lanes = Json::array();
    const std::string phase = spec.at("phase").get<std::string>();
    if (phase == "reduce") {
      const auto half = sched::reduce_rank(std::span<const CarriedPtr>(x), combine, h, pool, st);
      // The lane prefixes, then every lane's right prefixes but the first
      // (x[start] itself, which the finish has).
      for (const auto& l : half.lanes) {
        lanes.push_back({{"first", l.first},
                         {"last", l.last},
                         {"depth", l.depth},
                         {"prefix", l.prefix.has_value()},
                         {"start", l.start},
                         {"rights", l.right_prefix.size()}});
        if (l.prefix) out.emplace_back(0, runner_.host_copy(**l.prefix));
      }
      for (const auto& l : half.lanes)
        for (std::size_t k = 1; k < l.right_prefix.size(); ++k) out.emplace_back(0, runner_.host_copy(*l.right_prefix[k]));
    } else if (phase == "finish") {
      lanes = spec.at("lanes");
      h.lanes = static_cast<int>(lanes.size());
      std::size_t next = 0;
      auto operand = [&]() -> CarriedPtr {
        if (next >= job_.operands.size()) throw Error("the job has too few operands for its lanes");
        return runner_.carry(std::move(job_.operands[next++]), {}, nullptr);
      };
      std::optional<CarriedPtr> received;
      if (spec.at("received").get<bool>()) received = operand();
      const CarriedPtr total = operand();
      sched::RankPartials<CarriedPtr> half;
      for (const auto& l : lanes) {
        sched::RankPartials<CarriedPtr>::Lane lane;
        lane.first = l.at("first").get<std::size_t>();
        lane.last = l.at("last").get<std::size_t>();
        lane.depth = l.at("depth").get<std::uint32_t>();
        lane.start = l.at("start").get<std::size_t>();
        if (l.at("prefix").get<bool>()) lane.prefix = operand();
        half.lanes.push_back(std::move(lane));
      }
      for (std::size_t i = 0; i < lanes.size(); ++i) {
        auto& lane = half.lanes[i];
        const auto rights = lanes[i].at("rights").get<std::size_t>();
        if (rights == 0) continue;
        if (lane.start >= n) throw Error("lane " + std::to_string(i) + " starts outside the segment");
        lane.right_prefix.push_back(x[lane.start]);
        for (std::size_t k = 1; k < rights; ++k) lane.right_prefix.push_back(operand());
      }
      if (next != job_.operands.size())
        throw Error("the job has " + std::to_string(job_.operands.size() - next) + " operands more than its lanes use");
      const auto y = sched::finish_rank(std::span<const CarriedPtr>(x), half, received, std::optional<CarriedPtr>(total),
                                        combine, h, pool, st);
      for (std::size_t i = 0; i < y.size(); ++i) {
        Item yi = runner_.host_copy(*y[i]);
        yi.meta = x[i]->item.meta;
        out.emplace_back(0, std::move(yi));
      }
    } else {
      throw Error("unknown scan phase '" + phase + "'");
    }
    Json record = {{"lanes", lanes},           {"lane_names", st.lane_names}, {"lane_busy_seconds", st.lane_busy_seconds},
                   {"lane_ops", st.lane_ops},  {"combines", st.combines},     {"steals", st.steals},
                   {"depth", st.depth}};
    ItemMeta meta;
    meta.key = key_;
    meta.attrs["flowd.scan"] = std::move(record);
    out.emplace_back(0, Item{std::move(meta), Json(nullptr)});
    return out;
  }

  ScanJob job_;
};

// One next() of a source a placement moved to this node (cluster
// placement: the source reads its data where the data are).
class SourceJobTask final : public detail::HostedJob {
public:
  SourceJobTask(TaskRunner& runner, Stage& s, std::string key, bool first, std::function<void(HostedResult)> done)
      : HostedJob(runner, s, std::move(key), std::move(done)), first_(first) {}

private:
  Outputs compute(sched::TaskEnv&) override {
    SourceContextImpl ctx(*s_.node, nullptr, runner_.log(), runner_.stop_flag());
    auto& source = static_cast<Source&>(*s_.node->op);
    if (first_) source.open(ctx);
    const bool more = source.next(ctx);
    Outputs out = std::move(ctx.out.items());
    ItemMeta meta;
    meta.key = key_;
    Json record = Json::object();
    record["more"] = more;
    record["expected"] = ctx.expected ? Json(*ctx.expected) : Json(nullptr);
    meta.attrs["flowd.source"] = std::move(record);
    out.emplace_back(0, Item{std::move(meta), Json(nullptr)});
    return out;
  }

  bool first_;
};

// A task's inputs, one per input port, checked against the ports' types and
// carried into `t`: the result to answer with when one does not fit.
std::optional<HostedResult> carry_inputs(TaskRunner& runner, const Stage& s, std::vector<std::optional<Item>>& inputs,
                                         Tuple& t) {
  const auto& ports = s.node->spec().inputs;
  if (inputs.size() != ports.size())
    throw Error("stage '" + s.name() + "': " + std::to_string(inputs.size()) + " inputs for " +
                std::to_string(ports.size()) + " input ports");
  t.ports.assign(ports.size(), nullptr);
  for (std::size_t p = 0; p < ports.size(); ++p) {
    if (!inputs[p]) {
      if (!ports[p].optional) return HostedResult{false, "required input '" + ports[p].name + "' is missing", t.key, {}, 0};
      continue;
    }
    if (auto why = input_mismatch(ports[p], inputs[p]->value)) return HostedResult{false, *why, inputs[p]->meta.key, {}, 0};
    t.ports[p] = runner.carry(std::move(*inputs[p]), {}, nullptr);
  }
  return std::nullopt;
}

// A step of a sink a placement moved to this node (node_sinks.hpp).
class SinkJobTask final : public detail::HostedJob {
public:
  SinkJobTask(TaskRunner& runner, Stage& s, detail::NodeSinks& sinks, std::string key, Json spec, Tuple t,
              std::function<void(HostedResult)> done)
      : HostedJob(runner, s, std::move(key), std::move(done)), sinks_(sinks), spec_(std::move(spec)), tuple_(std::move(t)) {}

private:
  Outputs compute(sched::TaskEnv&) override {
    if (tuple_.ports.empty()) {
      sinks_.run(s_, spec_, nullptr, runner_.stop_flag());
      return {};
    }
    std::vector<Item> scratch;
    double moved = 0;
    const Inputs inputs = runner_.place(tuple_, memory::host, scratch, moved, s_.node);
    sinks_.run(s_, spec_, &inputs, runner_.stop_flag());
    return {};
  }

  detail::NodeSinks& sinks_;
  Json spec_;
  Tuple tuple_;
};

}  // namespace

TaskHost::TaskHost(workflow::Graph& graph, RunOptions options, Logger& log)
    : state_(std::make_unique<State>(graph, std::move(options), log)) {
  for (const auto& node : graph.stages)
    if (node.spec().pattern == Pattern::reduce)
      throw Error("stage '" + node.name + "' (" + node.spec().name +
                  ") is a reduce stage; a worker node runs only map, scan, all-pairs and placed source and sink stages");
  for (auto& node : graph.stages) state_->stages.emplace_back(node);
  state_->runner.prepare();
  state_->runner.start();
}

TaskHost::~TaskHost() {
  state_->runner.set_stopping();
  state_->runner.stop_workers();
}

bool TaskHost::has_stage(const std::string& stage) const {
  for (const auto& s : state_->stages)
    if (s.name() == stage) return true;
  return false;
}

Stage& TaskHost::stage(const std::string& name, Pattern pattern) {
  for (auto& s : state_->stages)
    if (s.name() == name) {
      if (s.pattern() != pattern)
        throw Error("stage '" + name + "' is not a" +
                    std::string(pattern == Pattern::scan       ? " scan"
                                : pattern == Pattern::allpairs ? "n all-pairs"
                                : pattern == Pattern::source   ? " source"
                                : pattern == Pattern::sink     ? " sink"
                                                               : " map") +
                    " stage here");
      return s;
    }
  throw Error("this node has no stage '" + name + "'");
}

void TaskHost::submit(const std::string& stage, std::string key, std::vector<std::optional<Item>> inputs,
                      std::function<void(HostedResult)> done) {
  Stage* s = &this->stage(stage, Pattern::map);
  TaskRunner& runner = state_->runner;
  Tuple t{key, {}};
  if (auto refused = carry_inputs(runner, *s, inputs, t)) {
    done(std::move(*refused));
    return;
  }
  auto task = std::make_unique<HostedTask>(runner, *s, std::move(t), std::move(done));
  runner.estimate(s->op(), s->gpu, task->tuple(), *task);
  runner.submit(std::move(task), nullptr);
}

void TaskHost::submit_scan(const std::string& stage, std::string key, ScanJob job,
                           std::function<void(HostedResult)> done) {
  Stage* s = &this->stage(stage, Pattern::scan);
  state_->runner.submit(std::make_unique<ScanJobTask>(state_->runner, *s, std::move(key), std::move(job), std::move(done)),
                        nullptr);
}

void TaskHost::submit_allpairs(const std::string& stage, std::string key, AllPairsJob job,
                                std::function<void(HostedResult)> done) {
  Stage* s = &this->stage(stage, Pattern::allpairs);
  detail::AllPairsNodeCache* cache = nullptr;
  {
    std::lock_guard lk(state_->caches_m);
    cache = &state_->allpairs_caches[stage];
  }
  state_->runner.submit(
      detail::make_allpairs_job(state_->runner, *s, *cache, std::move(key), std::move(job), std::move(done)), nullptr);
}

void TaskHost::submit_source(const std::string& stage, std::string key, std::function<void(HostedResult)> done) {
  Stage* s = &this->stage(stage, Pattern::source);
  bool first = false;
  {
    std::lock_guard lk(state_->caches_m);
    first = state_->opened_sources.insert(stage).second;
  }
  state_->runner.submit(
      std::make_unique<SourceJobTask>(state_->runner, *s, std::move(key), first, std::move(done)), nullptr);
}

void TaskHost::submit_sink(const std::string& stage, std::string key, Json spec,
                           std::vector<std::optional<Item>> inputs, std::function<void(HostedResult)> done) {
  Stage* s = &this->stage(stage, Pattern::sink);
  Tuple t{key, {}};
  if (spec.value("step", std::string()) == "consume")
    if (auto refused = carry_inputs(state_->runner, *s, inputs, t)) {
      done(std::move(*refused));
      return;
    }
  state_->runner.submit(std::make_unique<SinkJobTask>(state_->runner, *s, state_->sinks, std::move(key),
                                                      std::move(spec), std::move(t), std::move(done)),
                        nullptr);
}

int TaskHost::slots() const { return static_cast<int>(state_->runner.workers().workers.size()); }

std::vector<sched::WorkerInfo> TaskHost::workers() const { return state_->runner.workers().workers; }

}  // namespace flowd::runtime

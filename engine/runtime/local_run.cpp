#include "runtime/local_run.hpp"

#include <algorithm>
#include <thread>

#include "memory/cuda_devices.hpp"
#include "runtime/run_state.hpp"
#include "sched/fcfs_queue.hpp"
#include "sched/heft_queue.hpp"
#include "sched/pats_queue.hpp"
#include "util/text.hpp"

namespace flowd::runtime {

namespace detail {

// ---------------------------------------------------------------------------
// Sources

void RunState::schedule_source(StageState& s) {
  SourceWindow& w = *s.window;
  if (stopping.load() || w.exhausted.load()) return;
  if (w.in_flight.load() >= window) return;
  bool expected = false;
  if (!w.scheduled.compare_exchange_strong(expected, true)) return;
  pool->submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::source));
}

void RunState::run_source(StageState& s, sched::TaskEnv& env) {
  SourceWindow& w = *s.window;
  SourceContextImpl ctx(*s.node, nullptr, log, stopping);
  bool more = false;
  Outcome o{true, {}, {}};
  if (!stopping.load()) {
    auto& source = static_cast<Source&>(*s.node->op);
    o = s.call(trace, s.name(), [&] {
      if (!w.opened) {
        w.opened = true;
        source.open(ctx);
      }
      more = source.next(ctx);
    });
    if (!o.ok) more = opts.keep_going;  // a source advances before it throws, so it may go on
    if (opts.item_limit && w.emitted.load() + ctx.out.items().size() >= opts.item_limit) more = false;
    const std::string key = ctx.out.items().empty() ? s.name() : ctx.out.items().front().second.meta.key;
    trace_task(s.op(), s.name(), env.worker(), key, "cpu", o);
  }
  {
    std::lock_guard lk(m);
    if (ctx.expected) w.expected = ctx.expected;
    if (!o.ok) fail_locked(s, o.key, o.error);
    // Each emitted item takes its own credit.
    for (auto& [port, item] : ctx.out.items()) {
      w.emitted.fetch_add(1);
      if (opts.checkpoint && opts.checkpoint->finished(s.name(), item.meta.key)) {
        // Finished by an earlier run: its credit comes back at once.
        ++w.skipped;
        take_credit(s, item.meta.key, true);
        continue;
      }
      const std::string key = item.meta.key;
      Emitted one;
      one.items().emplace_back(port, std::move(item));
      route_locked(s, one, {take_credit(s, key)}, &env);
    }
    s.tasks_done.fetch_add(1);
    if (!more || stopping.load()) {
      w.exhausted = true;
      maybe_close_locked(s, &env);
    }
  }
  w.scheduled = false;
  if (more) schedule_source(s);
}

// ---------------------------------------------------------------------------
// Routing

CarriedPtr RunState::carry(Item item, std::vector<CreditPtr> credits, const sched::WorkerInfo* made_on) const {
  auto c = std::make_shared<Carried>(Carried{std::move(item), std::move(credits)});
  // Items a GPU-like worker made are valid in its memory only, until someone
  // needs them elsewhere.
  if (made_on && sched::is_gpu_like(made_on->kind))
    if (const auto* a = std::get_if<Array>(&c->item.value)) {
      const int w = made_on->id;
      if (a->placement().residency == Residency::device) {
        c->where.reset(w);
        c->where.set(w, *a);
      } else if (workers.devices[static_cast<std::size_t>(w)]->simulated()) {
        c->where.reset(w);  // logically in the simulated GPU's memory only
      }  // a host array from a real GPU variant (e.g. a small result) stays valid on the host
    }
  return c;
}

void RunState::route_locked(StageState& from, Emitted& out, const std::vector<CreditPtr>& credits, sched::TaskEnv* env) {
  for (auto& [port, item] : out.items())
    route_one_locked(from, port, carry(std::move(item), credits, env ? &env->worker() : nullptr), env);
  out.items().clear();
}

void RunState::route_one_locked(StageState& from, std::size_t port, const CarriedPtr& c, sched::TaskEnv* env) {
  from.items_out.fetch_add(1);
  const std::string origin = from.name() + "." + from.node->spec().outputs[port].name;
  for (const auto& ref : from.node->consumers[port]) deliver_locked(stages[ref.stage], ref.port, c, origin, env);
}

void RunState::deliver_locked(StageState& to, std::size_t port, const CarriedPtr& c, const std::string& from,
                              sched::TaskEnv* env) {
  const PortSpec& in = to.node->spec().inputs[port];
  const std::string& key = c->item.meta.key;
  // An item held by another node is checked where its value is pulled.
  if (!c->remote && !in.type.accepts(c->item.value)) {
    fail_locked(to, key, "received " + describe(c->item.value) + " from " + from + " on input '" + in.name +
                             "', which expects " + in.type.str());
    return;
  }
  const std::size_t nports = to.node->inputs.size();
  if (to.node->connected_inputs() == 1) {
    Tuple t{key, std::vector<CarriedPtr>(nports)};
    t.ports[port] = c;
    dispatch_locked(to, std::move(t), env);
    return;
  }
  Tuple& slot = to.joins[key];
  if (slot.ports.empty()) {
    slot.key = key;
    slot.ports.resize(nports);
  }
  if (slot.ports[port]) {
    fail_locked(to, key, "received two items with key '" + key + "' on input '" + in.name +
                             "'; inputs are matched by key, so keys must be unique");
    return;
  }
  slot.ports[port] = c;
  for (std::size_t p = 0; p < nports; ++p)
    if (to.node->inputs[p] && !slot.ports[p]) return;
  Tuple ready = std::move(slot);
  to.joins.erase(key);
  dispatch_locked(to, std::move(ready), env);
}

void RunState::dispatch_locked(StageState& s, Tuple t, sched::TaskEnv* env) {
  if (stopping.load()) return;
  switch (s.pattern()) {
    case Pattern::map: {
      ++s.active;
      if (opts.remote && opts.remote->takes(s.node->index)) {
        submit_remote_locked(s, std::move(t));
        return;
      }
      auto task = std::make_unique<StageTask>(*this, s, StageTask::Kind::map, std::move(t));
      estimate(s.op(), s.gpu, task->tuple(), *task);
      submit(std::move(task), env);
      return;
    }
    case Pattern::reduce:
      ++s.active;
      submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::reduce, std::move(t)), env);
      return;
    case Pattern::sink:
      s.backlog.push_back(std::move(t));
      if (!s.sink_busy) {
        s.sink_busy = true;
        ++s.active;
        submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::sink), env);
      }
      return;
    case Pattern::source:
      return;  // validation gives sources no inputs
  }
}

void RunState::maybe_close_locked(StageState& s, sched::TaskEnv* env) {
  if (s.closed) return;
  if (s.pattern() == Pattern::source) {
    if (!s.window->exhausted.load()) return;
  } else if (s.open_upstream > 0 || s.active > 0) {
    return;
  }
  if (s.pattern() == Pattern::reduce && !s.finalized) {
    if (!s.finalizing && !stopping.load()) {
      s.finalizing = true;
      ++s.active;
      submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::finalize), env);
    }
    return;
  }
  // Tuples still missing a partner can never complete now: say so.
  for (auto& [key, t] : s.joins) {
    std::vector<std::string> have, missing;
    for (std::size_t p = 0; p < t.ports.size(); ++p) {
      if (!s.node->inputs[p]) continue;
      (t.ports[p] ? have : missing).push_back(s.node->spec().inputs[p].name);
    }
    if (failed_keys.count(key)) {
      log.debug("[" + s.name() + " " + key + "] skipped: an upstream task for this key failed");
      continue;
    }
    fail_locked(s, key, "item arrived on input " + join(have, ", ") + " but never on " + join(missing, ", ") +
                            "; inputs are matched by key");
  }
  s.joins.clear();
  s.closed = true;
  ++closed_count;
  for (const auto& port_consumers : s.node->consumers)
    for (const auto& ref : port_consumers) {
      StageState& c = stages[ref.stage];
      --c.open_upstream;
      maybe_close_locked(c, env);
    }
  if (closed_count == stages.size()) cv.notify_all();
}

void RunState::fail_locked(StageState& s, const std::string& key, const std::string& message) {
  TaskFailure f{s.name(), key, message};
  s.failures.fetch_add(1);
  failed_keys.insert(key);
  if (opts.keep_going) {
    log.error(f.describe() + " (continuing: keep-going)");
    failures.push_back(std::move(f));
    return;
  }
  if (!stopping.load()) {
    log.error(f.describe());
    failures.push_back(std::move(f));
    stopping = true;
    cv.notify_all();
  }
}

// ---------------------------------------------------------------------------
// Whole run

Progress RunState::progress_locked() const {
  Progress p;
  p.elapsed = Clock::now() - started;
  bool all_known = true;
  std::uint64_t expected = 0;
  for (const auto& s : stages) {
    StageProgress sp;
    sp.name = s.name();
    sp.op = s.op();
    sp.tasks_done = s.tasks_done.load();
    sp.on_gpu = s.on_gpu.load();
    sp.items_out = s.items_out.load();
    sp.failures = s.failures.load();
    sp.running = s.running.load();
    sp.busy_seconds = static_cast<double>(s.busy_ns.load()) * 1e-9;
    sp.closed = s.closed;
    p.stages.push_back(std::move(sp));
    if (s.window) {
      p.source_items += s.window->emitted.load();
      p.retired_items += s.window->retired.load();
      if (s.window->exhausted.load()) expected += s.window->emitted.load();
      else if (s.window->expected) expected += *s.window->expected;
      else all_known = false;
    }
  }
  if (all_known) p.expected_items = expected;
  return p;
}

// Nothing runs, nothing is queued, no source can emit, yet stages are open:
// items wait for partners that can never come (e.g. two sources emitting
// keys in different orders with a small window).
bool RunState::stuck_locked() const {
  if (closed_count == stages.size() || stopping.load()) return false;
  for (const auto& s : stages) {
    if (s.active > 0) return false;
    if (s.window && (s.window->scheduled.load() || (!s.window->exhausted.load() && s.window->in_flight.load() < window)))
      return false;
  }
  return true;
}

// Sinks commit in stage order; they abort in reverse order, so a sink that
// made a directory another sink wrote into removes it after that one is gone.
void RunState::finish_sinks(RunReport& report) {
  std::vector<StageState*> sinks;
  for (auto& s : stages)
    if (s.pattern() == Pattern::sink) sinks.push_back(&s);
  auto abort_from = [&](std::size_t first) {
    for (std::size_t i = sinks.size(); i-- > first;) static_cast<Sink&>(*sinks[i]->node->op).abort();
  };
  if (!opts.commit || (report.status != RunStatus::succeeded && report.status != RunStatus::completed_with_failures)) {
    abort_from(0);
    return;
  }
  for (std::size_t i = 0; i < sinks.size(); ++i) {
    StageState& s = *sinks[i];
    SinkContextImpl ctx(*s.node, nullptr, log, stopping, opts.provenance);
    try {
      static_cast<Sink&>(*s.node->op).commit(ctx);
    } catch (const std::exception& e) {
      report.status = RunStatus::failed;
      report.error = "stage '" + s.name() + "' could not commit its output: " + e.what();
      log.error(report.error);
      abort_from(i);  // this one and the ones not committed yet; those committed stay
      return;
    }
  }
}

Json RunState::config() const {
  Json workers_json = Json::array();
  for (const auto& w : workers.workers) {
    const char* kind = w.kind == sched::WorkerKind::cpu ? "cpu" : w.kind == sched::WorkerKind::gpu ? "gpu" : "sim_gpu";
    Json j = {{"name", w.name}, {"kind", kind}};
    if (const auto& d = workers.devices[static_cast<std::size_t>(w.id)]) j["device"] = d->name();
    workers_json.push_back(std::move(j));
  }
  Json c = {{"workflow", graph.workflow.name},
            {"scheduler", opts.scheduler},
            {"locality", opts.locality},
            {"prefetch", opts.prefetch},
            {"gpus", opts.gpus.str()},
            {"gpu_note", workers.gpu_note},
            {"simulated_gpus", workers.simulated},
            {"workers", std::move(workers_json)},
            {"max_in_flight", window}};
  if (workers.simulated) c["sim_bandwidth_gb_s"] = opts.sim_bandwidth / 1e9;
  if (opts.speedup_error > 0) c["speedup_error"] = opts.speedup_error;
  c["transfer_impact"] = opts.transfer_impact.value_or(model.transfer_impact());
  for (const char* k : {"flowd_version", "workflow_sha256", "command", "created", "host"})
    if (opts.provenance.contains(k)) c[k] = opts.provenance[k];
  return c;
}

}  // namespace detail

using detail::Clock;
using detail::RunState;
using detail::StageState;
using detail::SourceWindow;

LocalRun::LocalRun(workflow::Graph& graph, RunOptions options, Logger& log)
    : state_(std::make_unique<RunState>(graph, std::move(options), log)) {}

LocalRun::~LocalRun() = default;

namespace {

std::unique_ptr<sched::ReadyQueue> make_queue(const RunOptions& o, double transfer_impact) {
  if (o.scheduler == "fcfs") return std::make_unique<sched::FcfsQueue>();
  if (o.scheduler == "heft") return std::make_unique<sched::HeftQueue>();
  if (o.scheduler == "pats") return std::make_unique<sched::PatsQueue>(sched::PatsOptions{o.locality, transfer_impact});
  throw Error("unknown scheduler '" + o.scheduler + "'; available: pats, fcfs, heft");
}

// --speedup-error: speedups below the median are raised and those above
// lowered by the error, so the queue's order is confounded (at 100 % the
// highest estimates reach zero).
std::map<std::string, double> confound(const workflow::Graph& g, const sched::PerfModel& m, double error) {
  std::map<std::string, double> factor;
  if (error <= 0) return factor;
  std::vector<std::pair<double, std::string>> s;
  for (const auto& st : g.stages)
    if (st.spec().pattern == Pattern::map && m.has_gpu_estimate(st.spec().name))
      s.emplace_back(m.speedup(st.spec().name, 0), st.spec().name);
  std::sort(s.begin(), s.end());
  if (s.empty()) return factor;
  const double median = s[s.size() / 2].first;
  for (const auto& [speedup, op] : s)
    factor[op] = speedup < median ? 1.0 + error : speedup > median ? std::max(0.01, 1.0 - error) : 1.0;
  return factor;
}

}  // namespace

void detail::RunState::setup() {
  started = Clock::now();
  workers = make_workers(opts.cpu_workers, opts.gpus, opts.sim_bandwidth);
  sim_scale = opts.gpus.mode == GpuSpec::Mode::sim ? opts.gpus.scale : 1.0;
  window = opts.max_in_flight > 0 ? opts.max_in_flight : 2 * static_cast<int>(workers.workers.size());

  for (auto& node : graph.stages) {
    StageState& s = stages.emplace_back();
    s.node = &node;
    s.open_upstream = node.connected_inputs();
    if (node.spec().pattern == Pattern::source) s.window = std::make_unique<SourceWindow>();
    if (node.handle.factory().gpu_variant) s.gpu = node.handle.factory().gpu_variant(*node.op);
    auto seed = [&](const OperatorSpec& spec) {
      if (spec.speedup_hint && !model.has_gpu_estimate(spec.name)) model.hint(spec.name, *spec.speedup_hint);
    };
    seed(node.spec());
    for (const auto& [name, sub] : node.uses) seed(sub.spec());
  }
  speedup_factor = confound(graph, model, opts.speedup_error);
  transfers = std::make_unique<Transfers>(workers.devices, trace, model);
  for (const auto& w : workers.workers) {
    const bool sim = w.kind == sched::WorkerKind::sim_gpu;
    const char* kind = w.kind == sched::WorkerKind::cpu ? "cpu" : sim ? "sim_gpu" : "gpu";
    trace.track({w.id, w.name, kind, sim});
    if (sched::is_gpu_like(w.kind)) trace.track({copy_track(w.id), w.name + " copy", "copy", sim});
  }
}

void detail::RunState::start_pool() {
  exec::PoolOptions pool_opts;
  pool_opts.continuation = opts.locality;
  pool_opts.prefetch = opts.prefetch;
  auto pin = workers.pin;
  pool_opts.on_thread_start = [pin](const sched::WorkerInfo& w) {
    memory::pin_current_thread(pin[static_cast<std::size_t>(w.id)]);
  };
  pool = std::make_unique<exec::WorkerPool>(make_queue(opts, opts.transfer_impact.value_or(model.transfer_impact())),
                                            workers.workers, pool_opts);
}

RunReport LocalRun::execute(const Tick& tick, std::chrono::milliseconds interval) {
  RunState& st = *state_;
  st.setup();

  RunReport report;
  report.workers = st.workers.workers;
  report.gpu_note = st.workers.gpu_note;
  report.config = st.config();

  // Sinks open first, so an unwritable output fails before any work is done.
  for (auto& s : st.stages) {
    if (s.pattern() != Pattern::sink) continue;
    SinkContextImpl ctx(*s.node, nullptr, st.log, st.stopping, st.opts.provenance);
    try {
      static_cast<Sink&>(*s.node->op).open(ctx);
    } catch (const std::exception& e) {
      report.failures.push_back({s.name(), "", e.what()});
      report.status = RunStatus::failed;
      report.error = "stage '" + s.name() + "' could not open its output: " + e.what();
      st.log.error(report.error);
      st.finish_sinks(report);  // status failed: every sink aborts, in reverse order
      report.final = st.progress_locked();
      return report;
    }
  }

  if (st.opts.checkpoint) {
    for (const auto& s : st.stages)
      if (s.pattern() == Pattern::reduce)
        throw Error("stage '" + s.name() + "' is a reduce: its partial results are not kept, so this run cannot be "
                    "journalled or resumed (--journal/--resume)");
  }
  st.start_pool();
  if (st.opts.checkpoint) {
    // What earlier runs gave the sinks for finished items, before any source runs.
    std::uint64_t replayed = 0;
    std::lock_guard lk(st.m);
    for (auto& s : st.stages) {
      if (s.pattern() != Pattern::sink) continue;
      for (auto& items : st.opts.checkpoint->replay(s.name())) {
        Tuple t;
        t.replayed = true;
        t.ports.resize(s.node->inputs.size());
        for (std::size_t p = 0; p < items.size() && p < t.ports.size(); ++p)
          if (items[p]) {
            if (t.key.empty()) t.key = items[p]->meta.key;
            t.ports[p] = st.carry(std::move(*items[p]), {}, nullptr);
          }
        st.dispatch_locked(s, std::move(t), nullptr);
        ++replayed;
      }
    }
    if (replayed) st.log.info("resuming: " + std::to_string(replayed) + " sink inputs kept by earlier runs replayed");
  }
  {
    std::lock_guard lk(st.m);
    for (auto& s : st.stages)
      if (s.pattern() != Pattern::source && s.open_upstream == 0) st.maybe_close_locked(s, nullptr);
  }
  for (auto& s : st.stages)
    if (s.window) st.schedule_source(s);

  // With a trace, the queue is sampled often enough to draw.
  const auto wait = st.trace.enabled() ? std::min(interval, std::chrono::milliseconds(20)) : interval;
  auto next_tick = Clock::now();
  {
    std::unique_lock lk(st.m);
    int stuck_ticks = 0;
    while (st.closed_count < st.stages.size() && !st.stopping.load()) {
      st.cv.wait_for(lk, wait);
      if (st.opts.interrupt && st.opts.interrupt->load()) {
        st.interrupted = true;
        st.stopping = true;
        st.log.warn("interrupted: stopping after the running tasks; no output will be written");
        break;
      }
      if (st.stuck_locked() && ++stuck_ticks >= 2) {
        std::vector<std::string> waiting;
        for (const auto& s : st.stages)
          if (!s.joins.empty()) waiting.push_back(s.name() + " (" + std::to_string(s.joins.size()) + " items)");
        report.error = "the run cannot make progress: " +
                       (waiting.empty() ? std::string("no stage can run") : "items wait for key partners in " + join(waiting, ", ")) +
                       " while every source has max_in_flight=" + std::to_string(st.window) +
                       " items alive; sources feeding one stage must emit keys in compatible orders, or raise --max-in-flight";
        st.log.error(report.error);
        st.stopping = true;
        break;
      }
      if (!st.stuck_locked()) stuck_ticks = 0;
      if (st.trace.enabled()) {
        lk.unlock();
        st.trace.counter("ready tasks", static_cast<double>(st.pool->queued()));
        lk.lock();
        std::uint64_t alive = 0;
        for (const auto& s : st.stages)
          if (s.window) alive += static_cast<std::uint64_t>(std::max(0, s.window->in_flight.load()));
        st.trace.counter("items in flight", static_cast<double>(alive));
      }
      if (tick && Clock::now() >= next_tick) {
        next_tick = Clock::now() + interval;
        Progress p = st.progress_locked();
        lk.unlock();
        tick(p);
        lk.lock();
      }
    }
  }
  // No answer from the cluster after this: what is still out is abandoned.
  if (st.opts.remote) st.opts.remote->drain();
  st.pool->wait_idle();
  st.pool->stop();
  {
    std::lock_guard lk(st.m);
    for (auto& s : st.stages) {
      s.joins.clear();
      s.backlog.clear();
    }
    report.failures = st.failures;
  }

  if (st.interrupted) report.status = RunStatus::interrupted;
  else if (st.stopping.load()) report.status = RunStatus::failed;
  else if (!st.failures.empty()) report.status = RunStatus::completed_with_failures;
  st.finish_sinks(report);
  if (st.opts.checkpoint) {
    std::uint64_t skipped = 0;
    {
      std::lock_guard lk(st.m);
      for (const auto& s : st.stages)
        if (s.window) skipped += s.window->skipped;
    }
    if (skipped) st.log.info("resuming: " + std::to_string(skipped) + " source items finished by earlier runs were skipped");
  }
  report.bytes_to_devices = st.transfers->bytes_to_devices();
  report.bytes_to_host = st.transfers->bytes_to_host();
  {
    std::lock_guard lk(st.m);
    report.final = st.progress_locked();
  }
  return report;
}

}  // namespace flowd::runtime

#include "runtime/local_run.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "exec/worker_pool.hpp"
#include "memory/cuda_devices.hpp"
#include "runtime/carried.hpp"
#include "runtime/contexts.hpp"
#include "runtime/transfers.hpp"
#include "runtime/workers.hpp"
#include "sched/fcfs_queue.hpp"
#include "sched/heft_queue.hpp"
#include "sched/pats_queue.hpp"
#include "util/text.hpp"

namespace flowd::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// What a caught exception says about which item failed: an ItemError names
// it; anything else is charged to the task's own item.
std::string failed_key(const std::exception& e, const std::string& task_key) {
  if (const auto* ie = dynamic_cast<const ItemError*>(&e)) return ie->key();
  return task_key;
}

// How a call into an operator ended.
struct Outcome {
  bool ok = false;
  std::string error;  // what() of the exception, when not ok
  std::string key;    // the item it failed on
  std::int64_t start_ns = 0, end_ns = 0;  // on the run's trace clock
};

// A source's window of items alive in the pipeline. Touched without the run
// lock: credits return from whatever thread drops the last item.
struct SourceWindow {
  std::atomic<int> in_flight{0};
  std::atomic<bool> scheduled{false};  // a next() task is queued or running
  std::atomic<bool> exhausted{false};
  std::atomic<std::uint64_t> emitted{0};
  std::atomic<std::uint64_t> retired{0};
  bool opened = false;  // only the (serialised) source task touches it
  std::optional<std::uint64_t> expected;  // guarded by the run lock
};

struct StageState {
  workflow::StageNode* node = nullptr;
  const GpuVariant* gpu = nullptr;  // the operator's GPU variant, if it has one

  // Guarded by RunState::m.
  std::size_t open_upstream = 0;  // input edges whose producer has not closed
  std::size_t active = 0;         // map/sink/reduce tasks queued or running
  bool closed = false;
  std::map<std::string, Tuple> joins;  // partial key-matched tuples (several inputs)
  std::deque<Tuple> backlog;           // sink: tuples waiting, consumed one at a time
  bool sink_busy = false;
  std::vector<Item> partials;          // reduce: accumulators not being merged
  bool finalizing = false;
  bool finalized = false;

  std::unique_ptr<SourceWindow> window;  // sources only

  // Statistics, updated without the lock.
  std::atomic<std::uint64_t> tasks_done{0};
  std::atomic<std::uint64_t> on_gpu{0};
  std::atomic<std::uint64_t> items_out{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> running{0};
  std::atomic<std::int64_t> busy_ns{0};

  Pattern pattern() const noexcept { return node->spec().pattern; }
  const std::string& name() const noexcept { return node->name; }
  const std::string& op() const noexcept { return node->spec().name; }

  // Calls into the operator, counting it as running and its time as busy,
  // and turns an exception into a failure charged to `key` (or to the key an
  // ItemError names).
  template <class F> Outcome call(const trace::Recorder& clock, const std::string& key, F&& f) {
    Outcome o{false, {}, key};
    o.start_ns = clock.now();
    running.fetch_add(1);
    try {
      f();
      o.ok = true;
    } catch (const std::exception& e) {
      o.error = e.what();
      o.key = failed_key(e, key);
    }
    running.fetch_sub(1);
    o.end_ns = clock.now();
    busy_ns.fetch_add(o.end_ns - o.start_ns);
    return o;
  }
};

std::uint64_t array_bytes(const Tuple& t) {
  std::uint64_t n = 0;
  for (const auto& p : t.ports)
    if (p)
      if (const auto* a = std::get_if<Array>(&p->item.value)) n += a->nbytes();
  return n;
}

}  // namespace

namespace detail {

struct RunState {
  RunState(workflow::Graph& g, RunOptions o, Logger& l)
      : graph(g), opts(std::move(o)), log(l), model(opts.model ? *opts.model : own_model),
        trace(opts.recorder ? *opts.recorder : own_trace) {}

  workflow::Graph& graph;
  RunOptions opts;
  Logger& log;
  sched::PerfModel own_model;
  sched::PerfModel& model;
  trace::Recorder own_trace;
  trace::Recorder& trace;
  int window = 0;
  Clock::time_point started;

  WorkerSet workers;
  std::unique_ptr<Transfers> transfers;
  std::map<std::string, double> speedup_factor;  // per operator, for --speedup-error
  double sim_scale = 1.0;

  std::deque<StageState> stages;  // deque: StageState holds atomics and never moves

  std::mutex m;
  std::condition_variable cv;
  std::atomic<bool> stopping{false};
  std::size_t closed_count = 0;
  bool interrupted = false;
  std::vector<TaskFailure> failures;
  std::set<std::string> failed_keys;

  std::unique_ptr<exec::WorkerPool> pool;  // declared last: stopped before the rest goes

  // --- sources -------------------------------------------------------------
  void schedule_source(StageState& s);
  void run_source(StageState& s, sched::TaskEnv& env);
  CreditPtr take_credit(StageState& s) {
    s.window->in_flight.fetch_add(1);
    return std::make_shared<Credit>([this, &s] {
      s.window->in_flight.fetch_sub(1);
      s.window->retired.fetch_add(1);
      schedule_source(s);
    });
  }

  // --- routing (all *_locked run under m) ------------------------------------
  // Tasks made ready inside a running task go to its worker (env), which runs
  // one of them next; elsewhere (main thread, credit returns) to the pool.
  void submit(sched::TaskPtr t, sched::TaskEnv* env) {
    if (env) env->spawn(std::move(t));
    else pool->submit(std::move(t));
  }
  void route_locked(StageState& from, Emitted& out, const std::vector<CreditPtr>& credits, sched::TaskEnv* env);
  void deliver_locked(StageState& to, std::size_t port, const CarriedPtr& c, const std::string& from, sched::TaskEnv* env);
  void dispatch_locked(StageState& s, Tuple t, sched::TaskEnv* env);
  void task_done_locked(StageState& s, sched::TaskEnv* env) {
    --s.active;
    maybe_close_locked(s, env);
  }
  void maybe_close_locked(StageState& s, sched::TaskEnv* env);
  void fail_locked(StageState& s, const std::string& key, const std::string& message);

  // --- scheduling estimates --------------------------------------------------
  void estimate(const StageState& s, const Tuple& t, sched::Task& task) const;

  // --- tasks ---------------------------------------------------------------
  // A task's inputs placed where worker `w` needs them; `scratch` owns any
  // copies made for it.
  Inputs place(const Tuple& t, int w, std::vector<Item>& scratch, double& moved);
  void run_map(StageState& s, Tuple& t, sched::TaskEnv& env);
  void prefetch_map(const Tuple& t, const sched::WorkerInfo& w);
  void run_sink(StageState& s, sched::TaskEnv& env);
  void run_reduce(StageState& s, Tuple& t, sched::TaskEnv& env);
  void run_finalize(StageState& s, sched::TaskEnv& env);
  void trace_task(const StageState& s, const sched::WorkerInfo& w, const std::string& key, const char* variant,
                  const Outcome& o);

  Progress progress_locked() const;
  bool stuck_locked() const;
  void finish_sinks(RunReport& report);
  Json config() const;
};

}  // namespace detail

using detail::RunState;

namespace {

// One task class for every kind of stage work; the state does the work.
class StageTask final : public sched::Task {
public:
  enum class Kind { source, map, sink, reduce, finalize };
  StageTask(RunState& st, StageState& s, Kind k, Tuple t = {}) : st_(st), s_(s), kind_(k), tuple_(std::move(t)) {}
  void run(sched::TaskEnv& env) override;
  // A failed prefetch is not reported: run() places the inputs again and
  // reports any failure as the task's own.
  void prefetch(const sched::WorkerInfo& w) override {
    if (kind_ == Kind::map && sched::is_gpu_like(w.kind)) st_.prefetch_map(tuple_, w);
  }
  const Tuple& tuple() const noexcept { return tuple_; }

private:
  RunState& st_;
  StageState& s_;
  Kind kind_;
  Tuple tuple_;
};

}  // namespace

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
    trace_task(s, env.worker(), key, "cpu", o);
  }
  {
    std::lock_guard lk(m);
    if (ctx.expected) w.expected = ctx.expected;
    if (!o.ok) fail_locked(s, o.key, o.error);
    // Each emitted item takes its own credit.
    for (auto& [port, item] : ctx.out.items()) {
      Emitted one;
      one.items().emplace_back(port, std::move(item));
      w.emitted.fetch_add(1);
      route_locked(s, one, {take_credit(s)}, &env);
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

void RunState::route_locked(StageState& from, Emitted& out, const std::vector<CreditPtr>& credits, sched::TaskEnv* env) {
  // Items a GPU-like worker made are valid in its memory only, until someone
  // needs them elsewhere.
  const bool on_device = env && sched::is_gpu_like(env->worker().kind);
  for (auto& [port, item] : out.items()) {
    auto c = std::make_shared<Carried>(Carried{std::move(item), credits});
    if (on_device && std::holds_alternative<Array>(c->item.value)) {
      const int w = env->worker().id;
      const Array& a = std::get<Array>(c->item.value);
      if (a.placement().residency == Residency::device) {
        c->where.reset(w);
        c->where.set(w, a);
      } else if (workers.devices[static_cast<std::size_t>(w)]->simulated()) {
        c->where.reset(w);  // logically in the simulated GPU's memory only
      }  // a host array from a real GPU variant (e.g. a small result) stays valid on the host
    }
    from.items_out.fetch_add(1);
    const std::string origin = from.name() + "." + from.node->spec().outputs[port].name;
    const CarriedPtr shared = std::move(c);
    for (const auto& ref : from.node->consumers[port]) deliver_locked(stages[ref.stage], ref.port, shared, origin, env);
  }
  out.items().clear();
}

void RunState::deliver_locked(StageState& to, std::size_t port, const CarriedPtr& c, const std::string& from,
                              sched::TaskEnv* env) {
  const PortSpec& in = to.node->spec().inputs[port];
  const std::string& key = c->item.meta.key;
  if (!in.type.accepts(c->item.value)) {
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

// Where a task may run and what the model expects of it there.
void RunState::estimate(const StageState& s, const Tuple& t, sched::Task& task) const {
  if (s.pattern() != Pattern::map) return;  // sources, sinks and reductions run on CPUs
  const std::string& op = s.op();
  const std::uint64_t bytes = array_bytes(t);
  const int sc = sched::PerfModel::size_class(bytes);
  if (s.gpu) task.runs_on |= sched::bit(sched::WorkerKind::gpu);
  if (s.gpu || model.has_gpu_estimate(op)) task.runs_on |= sched::bit(sched::WorkerKind::sim_gpu);
  // Calibration and GPU-only experiments: what a GPU-like worker can run runs there only.
  if (opts.prefer_gpu && (task.runs_on & sched::gpu_like)) task.runs_on &= sched::gpu_like;
  auto& e = task.est;
  const auto factor = speedup_factor.find(op);
  e.speedup = static_cast<float>(model.speedup(op, sc) * (factor == speedup_factor.end() ? 1.0 : factor->second));
  const auto cpu = model.seconds(op, sched::Variant::cpu, sc);
  const auto gpu = model.seconds(op, sched::Variant::gpu, sc);
  e.cpu_seconds = cpu ? static_cast<float>(*cpu) : 0.0f;
  e.gpu_seconds = gpu ? static_cast<float>(*gpu) : (cpu ? static_cast<float>(*cpu / std::max(1e-9, double(e.speedup))) : 0.0f);
  double bw = opts.sim_bandwidth;
  for (std::size_t w = 0; w < workers.devices.size(); ++w)
    if (workers.devices[w] && !workers.devices[w]->simulated())
      if (auto b = model.bandwidth(workers.devices[w]->ordinal(), sched::Direction::to_device)) bw = *b;
  e.transfer_seconds = static_cast<float>(static_cast<double>(bytes) / bw);
  for (const auto& p : t.ports)
    if (p && std::holds_alternative<Array>(p->item.value)) {
      std::lock_guard lk(p->where.mutex());
      if (!p->where.valid(memory::host)) {
        task.data_worker = p->where.device_holder();
        break;
      }
    }
}

void RunState::dispatch_locked(StageState& s, Tuple t, sched::TaskEnv* env) {
  if (stopping.load()) return;
  switch (s.pattern()) {
    case Pattern::map: {
      ++s.active;
      auto task = std::make_unique<StageTask>(*this, s, StageTask::Kind::map, std::move(t));
      estimate(s, task->tuple(), *task);
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
// Tasks

void RunState::trace_task(const StageState& s, const sched::WorkerInfo& w, const std::string& key, const char* variant,
                          const Outcome& o) {
  if (!trace.enabled()) return;
  trace::Span span{w.id, s.op(), s.name(), key, variant, o.start_ns, o.end_ns};
  span.failed = !o.ok;
  span.id = trace.next_id();
  trace.span(std::move(span));
}

Inputs RunState::place(const Tuple& t, int w, std::vector<Item>& scratch, double& moved) {
  Inputs in{t.key, std::vector<const Item*>(t.ports.size(), nullptr)};
  scratch.resize(t.ports.size());
  for (std::size_t p = 0; p < t.ports.size(); ++p)
    if (t.ports[p]) in.items[p] = &transfers->to(*t.ports[p], w, scratch[p], &moved);
  return in;
}

void RunState::prefetch_map(const Tuple& t, const sched::WorkerInfo& w) {
  try {
    std::vector<Item> scratch;
    double moved = 0;
    place(t, w.id, scratch, moved);
  } catch (const std::exception&) {
    // run_map() tries again and reports it.
  }
}

void RunState::run_map(StageState& s, Tuple& t, sched::TaskEnv& env) {
  const sched::WorkerInfo& w = env.worker();
  const bool gpu_like = sched::is_gpu_like(w.kind);
  const char* variant = w.kind == sched::WorkerKind::gpu ? "gpu" : w.kind == sched::WorkerKind::sim_gpu ? "sim" : "cpu";
  std::vector<Item> scratch;
  double moved = 0;
  Outcome o;
  Emitted* out = nullptr;
  std::optional<MapContextImpl> cpu_ctx;
  std::optional<GpuContextImpl> gpu_ctx;
  Inputs inputs;
  if (!stopping.load()) {
    // Inputs first, then the operator: transfer time is not the operator's.
    Outcome placed = s.call(trace, t.key, [&] { inputs = place(t, gpu_like ? w.id : memory::host, scratch, moved); });
    if (!placed.ok) {
      o = placed;
    } else if (w.kind == sched::WorkerKind::gpu) {
      memory::Device& dev = *workers.devices[static_cast<std::size_t>(w.id)];
      gpu_ctx.emplace(*s.node, &inputs, log, stopping, dev);
      out = &gpu_ctx->out;
      o = s.call(trace, t.key, [&] {
        s.gpu->gpu(*gpu_ctx);
        dev.synchronize();
        gpu_ctx->out.check_required(*s.node);
      });
    } else {
      cpu_ctx.emplace(*s.node, &inputs, log, stopping);
      out = &cpu_ctx->out;
      if (w.kind == sched::WorkerKind::sim_gpu) {
        const int sc = sched::PerfModel::size_class(array_bytes(t));
        cpu_ctx->set_time_scale(1.0 / std::max(1e-6, model.speedup(s.op(), sc) * sim_scale));
      }
      o = s.call(trace, t.key, [&] {
        static_cast<const Map&>(*s.node->op).cpu(*cpu_ctx);
        cpu_ctx->out.check_required(*s.node);
      });
    }
    trace_task(s, w, t.key, variant, o);
    if (o.ok) {
      const int sc = sched::PerfModel::size_class(array_bytes(t));
      const double seconds = static_cast<double>(o.end_ns - o.start_ns) * 1e-9;
      model.record(s.op(), w.kind == sched::WorkerKind::gpu ? sched::Variant::gpu
                           : gpu_like                       ? sched::Variant::sim
                                                            : sched::Variant::cpu,
                   sc, seconds);
      if (gpu_like) {
        model.record_gpu_task(moved, seconds);
        s.on_gpu.fetch_add(1);
      }
    }
  }
  std::lock_guard lk(m);
  if (o.ok && out) route_locked(s, *out, t.credits(), &env);
  else if (!o.error.empty()) fail_locked(s, o.key, o.error);
  s.tasks_done.fetch_add(1);
  task_done_locked(s, &env);
}

void RunState::run_sink(StageState& s, sched::TaskEnv& env) {
  Tuple t;
  {
    std::lock_guard lk(m);
    t = std::move(s.backlog.front());
    s.backlog.pop_front();
  }
  Outcome o{true, {}, {}};
  if (!stopping.load()) {
    std::vector<Item> scratch;
    double moved = 0;
    Inputs inputs;
    o = s.call(trace, t.key, [&] {
      inputs = place(t, memory::host, scratch, moved);
      SinkContextImpl ctx(*s.node, &inputs, log, stopping, opts.provenance);
      static_cast<Sink&>(*s.node->op).consume(ctx);
    });
    trace_task(s, env.worker(), t.key, "cpu", o);
  }
  std::lock_guard lk(m);
  if (!o.ok) fail_locked(s, o.key, o.error);
  s.tasks_done.fetch_add(1);
  if (stopping.load()) s.backlog.clear();
  if (!s.backlog.empty()) {
    submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::sink), &env);  // stays active and busy
    return;
  }
  s.sink_busy = false;
  task_done_locked(s, &env);
}

void RunState::run_reduce(StageState& s, Tuple& t, sched::TaskEnv& env) {
  Outcome o{true, {}, {}};
  if (!stopping.load()) {
    const auto& op = static_cast<const Reduce&>(*s.node->op);
    std::vector<Item> scratch;
    double moved = 0;
    Inputs inputs;
    o = s.call(trace, t.key, [&] {
      inputs = place(t, memory::host, scratch, moved);
      ReduceContextImpl ctx(*s.node, &inputs, log, stopping);
      Item acc = op.lift(ctx, *inputs.items[0]);
      // Merge with whatever partials are free until none is left, then park
      // ours: partials stay as few as the reducers running at once.
      while (true) {
        Item other;
        {
          std::lock_guard lk(m);
          if (s.partials.empty()) {
            s.partials.push_back(std::move(acc));
            return;
          }
          other = std::move(s.partials.back());
          s.partials.pop_back();
        }
        acc = op.merge(ctx, std::move(acc), other);
      }
    });
    trace_task(s, env.worker(), t.key, "cpu", o);
  }
  std::lock_guard lk(m);
  if (!o.ok) fail_locked(s, o.key, o.error);
  s.tasks_done.fetch_add(1);
  task_done_locked(s, &env);
}

void RunState::run_finalize(StageState& s, sched::TaskEnv& env) {
  std::vector<Item> parts;
  {
    std::lock_guard lk(m);
    parts = std::move(s.partials);
    s.partials.clear();
  }
  const Inputs none{s.name(), {}};
  ReduceContextImpl ctx(*s.node, &none, log, stopping);
  Emitted out;
  Outcome o{true, {}, {}};
  if (parts.empty()) {
    log.warn("[" + s.name() + "] received no items, so it produces nothing");
  } else if (!stopping.load()) {
    const auto& op = static_cast<const Reduce&>(*s.node->op);
    o = s.call(trace, s.name(), [&] {
      Item acc = std::move(parts.front());
      for (std::size_t i = 1; i < parts.size(); ++i) acc = op.merge(ctx, std::move(acc), parts[i]);
      Item result = op.finish(ctx, std::move(acc));
      if (result.meta.key.empty()) result.meta.key = s.name();
      out.add(*s.node, 0, std::move(result));
    });
    trace_task(s, env.worker(), s.name(), "cpu", o);
  }
  std::lock_guard lk(m);
  if (!o.ok) fail_locked(s, o.key, o.error);
  route_locked(s, out, {}, &env);
  s.finalized = true;
  s.tasks_done.fetch_add(1);
  task_done_locked(s, &env);
}

void StageTask::run(sched::TaskEnv& env) {
  switch (kind_) {
    case Kind::source: st_.run_source(s_, env); break;
    case Kind::map: st_.run_map(s_, tuple_, env); break;
    case Kind::sink: st_.run_sink(s_, env); break;
    case Kind::reduce: st_.run_reduce(s_, tuple_, env); break;
    case Kind::finalize: st_.run_finalize(s_, env); break;
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

RunReport LocalRun::execute(const Tick& tick, std::chrono::milliseconds interval) {
  RunState& st = *state_;
  st.started = Clock::now();
  st.workers = make_workers(st.opts.cpu_workers, st.opts.gpus, st.opts.sim_bandwidth);
  st.sim_scale = st.opts.gpus.mode == GpuSpec::Mode::sim ? st.opts.gpus.scale : 1.0;
  int cpus = 0;
  for (const auto& w : st.workers.workers) cpus += w.kind == sched::WorkerKind::cpu;
  st.window = st.opts.max_in_flight > 0 ? st.opts.max_in_flight : 2 * static_cast<int>(st.workers.workers.size());

  for (auto& node : st.graph.stages) {
    StageState& s = st.stages.emplace_back();
    s.node = &node;
    s.open_upstream = node.connected_inputs();
    if (node.spec().pattern == Pattern::source) s.window = std::make_unique<SourceWindow>();
    if (node.handle.factory().gpu_variant) s.gpu = node.handle.factory().gpu_variant(*node.op);
    if (node.spec().speedup_hint && !st.model.has_gpu_estimate(node.spec().name))
      st.model.hint(node.spec().name, *node.spec().speedup_hint);
  }
  st.speedup_factor = confound(st.graph, st.model, st.opts.speedup_error);
  st.transfers = std::make_unique<Transfers>(st.workers.devices, st.trace, st.model);
  for (const auto& w : st.workers.workers) {
    const bool sim = w.kind == sched::WorkerKind::sim_gpu;
    const char* kind = w.kind == sched::WorkerKind::cpu ? "cpu" : sim ? "sim_gpu" : "gpu";
    st.trace.track({w.id, w.name, kind, sim});
    if (sched::is_gpu_like(w.kind)) st.trace.track({copy_track(w.id), w.name + " copy", "copy", sim});
  }

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

  exec::PoolOptions pool_opts;
  pool_opts.continuation = st.opts.locality;
  pool_opts.prefetch = st.opts.prefetch;
  auto pin = st.workers.pin;
  pool_opts.on_thread_start = [pin](const sched::WorkerInfo& w) {
    memory::pin_current_thread(pin[static_cast<std::size_t>(w.id)]);
  };
  st.pool = std::make_unique<exec::WorkerPool>(make_queue(st.opts, st.opts.transfer_impact.value_or(st.model.transfer_impact())),
                                               st.workers.workers, pool_opts);
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
  report.bytes_to_devices = st.transfers->bytes_to_devices();
  report.bytes_to_host = st.transfers->bytes_to_host();
  {
    std::lock_guard lk(st.m);
    report.final = st.progress_locked();
  }
  return report;
}

}  // namespace flowd::runtime

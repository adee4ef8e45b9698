#include "runtime/local_run.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "exec/worker_pool.hpp"
#include "runtime/carried.hpp"
#include "runtime/contexts.hpp"
#include "sched/fcfs_queue.hpp"
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

std::int64_t ns_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

// How a call into an operator ended.
struct Outcome {
  bool ok = false;
  std::string error;  // what() of the exception, when not ok
  std::string key;    // the item it failed on
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

  // Guarded by State::m.
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
  std::atomic<std::uint64_t> items_out{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> running{0};
  std::atomic<std::int64_t> busy_ns{0};

  Pattern pattern() const noexcept { return node->spec().pattern; }
  const std::string& name() const noexcept { return node->name; }

  // Calls into the operator, counting it as running and its time as busy,
  // and turns an exception into a failure charged to `key` (or to the key an
  // ItemError names).
  template <class F> Outcome call(const std::string& key, F&& f) {
    Outcome o{false, {}, key};
    const auto t0 = Clock::now();
    running.fetch_add(1);
    try {
      f();
      o.ok = true;
    } catch (const std::exception& e) {
      o.error = e.what();
      o.key = failed_key(e, key);
    }
    running.fetch_sub(1);
    busy_ns.fetch_add(ns_since(t0));
    return o;
  }
};

}  // namespace

namespace detail {

struct RunState {
  RunState(workflow::Graph& g, RunOptions o, Logger& l) : graph(g), opts(std::move(o)), log(l) {}

  workflow::Graph& graph;
  RunOptions opts;
  Logger& log;
  int window = 0;
  Clock::time_point started;

  std::deque<StageState> stages;  // deque: StageState holds atomics and never moves

  std::mutex m;
  std::condition_variable cv;
  std::atomic<bool> stopping{false};
  std::size_t closed_count = 0;
  bool interrupted = false;
  std::vector<TaskFailure> failures;
  std::set<std::string> failed_keys;
  std::string run_error;

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

  // --- tasks ---------------------------------------------------------------
  void run_map(StageState& s, Tuple& t, sched::TaskEnv& env);
  void run_sink(StageState& s, sched::TaskEnv& env);
  void run_reduce(StageState& s, Tuple& t, sched::TaskEnv& env);
  void run_finalize(StageState& s, sched::TaskEnv& env);

  Progress progress_locked() const;
  bool stuck_locked() const;
  void finish_sinks(RunReport& report);
};

}  // namespace detail

using detail::RunState;

namespace {

// One task class for every kind of stage work; the state does the work.
class StageTask final : public sched::Task {
public:
  enum class Kind { source, map, sink, reduce, finalize };
  StageTask(RunState& st, StageState& s, Kind k, Tuple t = {}) : st_(st), s_(s), kind_(k), tuple_(std::move(t)) {}
  void run(sched::TaskEnv&) override;

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
    o = s.call(s.name(), [&] {
      if (!w.opened) {
        w.opened = true;
        source.open(ctx);
      }
      more = source.next(ctx);
    });
    if (!o.ok) more = opts.keep_going;  // a source advances before it throws, so it may go on
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
  for (auto& [port, item] : out.items()) {
    auto c = std::make_shared<const Carried>(Carried{std::move(item), credits});
    from.items_out.fetch_add(1);
    const std::string origin = from.name() + "." + from.node->spec().outputs[port].name;
    for (const auto& ref : from.node->consumers[port]) deliver_locked(stages[ref.stage], ref.port, c, origin, env);
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

void RunState::dispatch_locked(StageState& s, Tuple t, sched::TaskEnv* env) {
  if (stopping.load()) return;
  switch (s.pattern()) {
    case Pattern::map:
      ++s.active;
      submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::map, std::move(t)), env);
      return;
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

void RunState::run_map(StageState& s, Tuple& t, sched::TaskEnv& env) {
  MapContextImpl ctx(*s.node, &t, log, stopping);
  Outcome o;
  if (!stopping.load())
    o = s.call(t.key, [&] {
      static_cast<const Map&>(*s.node->op).cpu(ctx);
      ctx.out.check_required(*s.node);
    });
  std::lock_guard lk(m);
  if (o.ok) route_locked(s, ctx.out, t.credits(), &env);
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
    SinkContextImpl ctx(*s.node, &t, log, stopping, opts.provenance);
    o = s.call(t.key, [&] { static_cast<Sink&>(*s.node->op).consume(ctx); });
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
    ReduceContextImpl ctx(*s.node, &t, log, stopping);
    const auto& op = static_cast<const Reduce&>(*s.node->op);
    o = s.call(t.key, [&] {
      Item acc = op.lift(ctx, t.ports[0]->item);
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
  Tuple none{s.name(), {}};
  ReduceContextImpl ctx(*s.node, &none, log, stopping);
  Emitted out;
  Outcome o{true, {}, {}};
  if (parts.empty()) {
    log.warn("[" + s.name() + "] received no items, so it produces nothing");
  } else if (!stopping.load()) {
    const auto& op = static_cast<const Reduce&>(*s.node->op);
    o = s.call(s.name(), [&] {
      Item acc = std::move(parts.front());
      for (std::size_t i = 1; i < parts.size(); ++i) acc = op.merge(ctx, std::move(acc), parts[i]);
      Item result = op.finish(ctx, std::move(acc));
      if (result.meta.key.empty()) result.meta.key = s.name();
      out.add(*s.node, 0, std::move(result));
    });
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
    sp.op = s.node->spec().name;
    sp.tasks_done = s.tasks_done.load();
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
  if (report.status != RunStatus::succeeded && report.status != RunStatus::completed_with_failures) {
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

LocalRun::LocalRun(workflow::Graph& graph, RunOptions options, Logger& log)
    : state_(std::make_unique<RunState>(graph, std::move(options), log)) {}

LocalRun::~LocalRun() = default;

RunReport LocalRun::execute(const Tick& tick, std::chrono::milliseconds interval) {
  RunState& st = *state_;
  st.started = Clock::now();
  const int cpus = st.opts.cpu_workers > 0 ? st.opts.cpu_workers
                                           : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  st.window = st.opts.max_in_flight > 0 ? st.opts.max_in_flight : 2 * cpus;
  if (st.opts.scheduler != "fcfs")
    throw Error("unknown scheduler '" + st.opts.scheduler + "'; this flowd provides: fcfs");

  for (auto& node : st.graph.stages) {
    StageState& s = st.stages.emplace_back();
    s.node = &node;
    s.open_upstream = node.connected_inputs();
    if (node.spec().pattern == Pattern::source) s.window = std::make_unique<SourceWindow>();
  }
  RunReport report;

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

  st.pool = std::make_unique<exec::WorkerPool>(std::make_unique<sched::FcfsQueue>(), exec::WorkerPool::cpu_workers(cpus));
  {
    std::lock_guard lk(st.m);
    for (auto& s : st.stages)
      if (s.pattern() != Pattern::source && s.open_upstream == 0) st.maybe_close_locked(s, nullptr);
  }
  for (auto& s : st.stages)
    if (s.window) st.schedule_source(s);

  {
    std::unique_lock lk(st.m);
    int stuck_ticks = 0;
    while (st.closed_count < st.stages.size() && !st.stopping.load()) {
      st.cv.wait_for(lk, interval);
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
      if (tick) {
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
  {
    std::lock_guard lk(st.m);
    report.final = st.progress_locked();
  }
  return report;
}

}  // namespace flowd::runtime

#pragma once
// The state of one local run, shared by the orchestration (local_run.cpp:
// sources, routing, joins, closing) and the execution (execute.cpp: placing
// inputs, running variants, sub-tasks). Private to the runtime.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "exec/worker_pool.hpp"
#include "runtime/carried.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/contexts.hpp"
#include "runtime/local_run.hpp"
#include "runtime/remote.hpp"
#include "runtime/transfers.hpp"
#include "runtime/workers.hpp"

namespace flowd::runtime::detail {

using Clock = std::chrono::steady_clock;

// What a caught exception says about which item failed: an ItemError names
// it; anything else is charged to the task's own item.
std::string failed_key(const std::exception& e, const std::string& task_key);

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
  std::uint64_t skipped = 0;  // finished by an earlier run (checkpoint); guarded by the run lock
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

  // Statistics, updated without the lock (sub-tasks count for their stage).
  std::atomic<std::uint64_t> tasks_done{0};
  std::atomic<std::uint64_t> on_gpu{0};
  std::atomic<std::uint64_t> items_out{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> running{0};
  std::atomic<std::int64_t> busy_ns{0};

  Pattern pattern() const noexcept { return node->spec().pattern; }
  const std::string& name() const noexcept { return node->name; }
  const std::string& op() const noexcept { return node->spec().name; }

  // Calls into an operator, counting it as running and its time as busy,
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

// An operator run as sub-tasks with one set of parameters: a stage node of
// its own (for contexts and checks) and its GPU variant.
struct SubOp {
  workflow::StageNode node;
  const GpuVariant* gpu = nullptr;
};

// What a map task's variant produced, ready to route.
struct Execution {
  Outcome outcome;
  Emitted out;
};

std::uint64_t array_bytes(const Tuple& t);
// Whether some input array of `t` has no valid copy in `worker`'s memory.
bool needs_copy(const Tuple& t, int worker);

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

  std::mutex sub_ops_m;
  std::map<std::string, std::unique_ptr<SubOp>> sub_ops;  // by "op\nparams"

  std::mutex m;
  std::condition_variable cv;
  std::atomic<bool> stopping{false};
  std::size_t closed_count = 0;
  bool interrupted = false;
  std::vector<TaskFailure> failures;
  std::set<std::string> failed_keys;

  std::unique_ptr<exec::WorkerPool> pool;  // declared last: stopped before the rest goes

  // --- sources (local_run.cpp) ---------------------------------------------
  void schedule_source(StageState& s);
  void run_source(StageState& s, sched::TaskEnv& env);
  CreditPtr take_credit(StageState& s, const std::string& key, bool skipped = false) {
    s.window->in_flight.fetch_add(1);
    return std::make_shared<Credit>(s.name(), key, [this, &s, skipped](const Credit& c) {
      if (opts.checkpoint && !skipped && !c.failed() && !stopping.load()) {
        try {
          opts.checkpoint->finish({c.source_stage(), c.key()});
        } catch (const std::exception& e) {
          log.warn("[" + c.source_stage() + " " + c.key() + "] not recorded as finished: " + e.what());
        }
      }
      s.window->in_flight.fetch_sub(1);
      s.window->retired.fetch_add(1);
      schedule_source(s);
    });
  }

  // --- setting up (local_run.cpp) -------------------------------------------
  // Workers, stage states, transfers and trace tracks; then the pool.
  void setup();
  void start_pool();

  // --- routing (local_run.cpp; all *_locked run under m) ---------------------
  // Tasks made ready inside a running task go to its worker (env), which runs
  // one of them next; elsewhere (main thread, credit returns) to the pool.
  void submit(sched::TaskPtr t, sched::TaskEnv* env) {
    if (env) env->spawn(std::move(t));
    else pool->submit(std::move(t));
  }
  // An emitted item as it travels: valid in the memory of the worker that
  // made it (a GPU-like one) or in host memory.
  CarriedPtr carry(Item item, std::vector<CreditPtr> credits, const sched::WorkerInfo* made_on) const;
  void route_locked(StageState& from, Emitted& out, const std::vector<CreditPtr>& credits, sched::TaskEnv* env);
  void route_one_locked(StageState& from, std::size_t port, const CarriedPtr& c, sched::TaskEnv* env);
  void deliver_locked(StageState& to, std::size_t port, const CarriedPtr& c, const std::string& from, sched::TaskEnv* env);
  void dispatch_locked(StageState& s, Tuple t, sched::TaskEnv* env);
  void task_done_locked(StageState& s, sched::TaskEnv* env) {
    --s.active;
    maybe_close_locked(s, env);
  }
  void maybe_close_locked(StageState& s, sched::TaskEnv* env);
  void fail_locked(StageState& s, const std::string& key, const std::string& message);

  // --- execution (execute.cpp) -----------------------------------------------
  // Where a map-like task may run and what the model expects of it there.
  void estimate(const std::string& op, const GpuVariant* gpu, const Tuple& t, sched::Task& task) const;
  // A task's inputs placed where worker `w` needs them; `scratch` owns any
  // copies made for it. Items held by other nodes are pulled and checked
  // against `consumer`'s input types.
  Inputs place(const Tuple& t, int w, std::vector<Item>& scratch, double& moved,
               const workflow::StageNode* consumer = nullptr);
  void prefetch_map(const Tuple& t, const sched::WorkerInfo& w);
  // Runs a map operator's variant for `env`'s worker on `t`, records it in
  // the model and the trace (as span `id`, child of `parent`).
  Execution execute(StageState& stats, const workflow::StageNode& node, const GpuVariant* gpu, const Tuple& t,
                    sched::TaskEnv& env, std::int64_t id, std::int64_t parent, SubTasks* sub);
  void run_map(StageState& s, Tuple& t, sched::TaskEnv& env);
  // A map task with its sub-tasks, as run_map() runs it, without routing.
  Execution run_map_task(StageState& s, const Tuple& t, sched::TaskEnv& env);
  // Cluster runs (runtime/remote.hpp): a map task handed to the remote
  // executor, and its answer (on a pool thread).
  void submit_remote_locked(StageState& s, Tuple t);
  void remote_done(StageState& s, const Tuple& t, RemoteResult r);
  void run_sink(StageState& s, sched::TaskEnv& env);
  void run_reduce(StageState& s, Tuple& t, sched::TaskEnv& env);
  void run_finalize(StageState& s, sched::TaskEnv& env);
  void trace_task(const std::string& op, const std::string& stage, const sched::WorkerInfo& w, const std::string& key,
                  const char* variant, const Outcome& o, std::int64_t id = -1, std::int64_t parent = -1);
  // The operator instance and node for sub-task calls of `op` with `params`
  // from stage `s` (made once per distinct parameters).
  SubOp& sub_op(const StageState& s, std::string_view op, const Json& params);

  // --- the whole run (local_run.cpp) -----------------------------------------
  Progress progress_locked() const;
  bool stuck_locked() const;
  void finish_sinks(RunReport& report);
  Json config() const;
};

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
  bool wants_prefetch(const sched::WorkerInfo& w) const override {
    return kind_ == Kind::map && sched::is_gpu_like(w.kind) && needs_copy(tuple_, w.id);
  }
  const Tuple& tuple() const noexcept { return tuple_; }

private:
  RunState& st_;
  StageState& s_;
  Kind kind_;
  Tuple tuple_;
};

}  // namespace flowd::runtime::detail

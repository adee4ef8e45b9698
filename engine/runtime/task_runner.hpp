#pragma once
// Runs single map-like tasks on this process's workers: the inputs placed
// where the picked worker's variant needs them, the variant called, its time
// recorded in the performance model and the trace, a map task's sub-tasks
// sent through the same queue. A run (run_state.hpp) wraps sources, routing
// and sinks around it; a worker node's TaskHost uses it alone, so both run
// map tasks the same way. Private to the runtime.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/crash_report.hpp"
#include "runtime/carried.hpp"
#include "runtime/contexts.hpp"
#include "runtime/remote.hpp"
#include "runtime/run_types.hpp"
#include "runtime/sub_graph.hpp"
#include "runtime/transfers.hpp"
#include "runtime/workers.hpp"
#include "sched/task.hpp"
#include "util/exceptions.hpp"

namespace flowd::exec {
class WorkerPool;
}

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

// A stage as its tasks see it. The counters are read for progress without
// any lock, hence atomics; a sub-task counts for the stage whose task called
// it.
struct Stage {
  explicit Stage(workflow::StageNode& n)
      : node(&n),
        gpu(n.handle.factory().gpu_variant ? n.handle.factory().gpu_variant(*n.op) : nullptr),
        gpu_scan(n.handle.factory().gpu_scan_variant ? n.handle.factory().gpu_scan_variant(*n.op) : nullptr) {}

  workflow::StageNode* node;
  const GpuVariant* gpu;  // the operator's GPU variant, if it has one
  const GpuScanVariant* gpu_scan;  // a scan operator's GPU combine, if it has one

  std::atomic<std::uint64_t> tasks_done{0};
  std::atomic<std::uint64_t> on_gpu{0};
  std::atomic<std::uint64_t> items_out{0};
  std::atomic<std::uint64_t> bytes_out{0};  // of the items routed in this process (a placement profile)
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> running{0};
  std::atomic<std::int64_t> busy_ns{0};
  // Its longest single call: for a source, how bursty it is (a placement
  // profile's "burst").
  std::atomic<std::int64_t> longest_call_ns{0};
  // A stage that is one task of many inner steps (a scan's combines, an
  // all-pairs stage's pairs): the steps done and expected, and when they
  // began, so that progress can say how far along it is (issue 38: the last
  // seconds of a registration showed "96/96 items" and no ETA).
  std::atomic<std::uint64_t> steps_done{0};
  std::atomic<std::uint64_t> steps_expected{0};
  std::atomic<std::int64_t> steps_started_ns{0};  // steady clock; 0: not begun
  const char* step_name = "steps";
  void begin_steps(std::uint64_t expected, const char* name) noexcept {
    step_name = name;
    steps_done = 0;
    steps_expected = expected;
    steps_started_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  }
  void note_call(std::int64_t ns) noexcept {
    std::int64_t had = longest_call_ns.load();
    while (ns > had && !longest_call_ns.compare_exchange_weak(had, ns)) {
    }
  }

  Pattern pattern() const noexcept { return node->spec().pattern; }
  const std::string& name() const noexcept { return node->name; }
  const std::string& op() const noexcept { return node->spec().name; }

  // Calls into this stage's operator, counting it as running and its time as
  // busy, and turns an exception of any type into a failure charged to `key`
  // (or to the key an ItemError names). A crash meanwhile is reported naming
  // the stage, operator, plugin and item.
  template <class F> Outcome call(const trace::Recorder& clock, const std::string& key, F&& f) {
    return call(clock, key, node, std::forward<F>(f));
  }
  // The same for the operator of `op` (a sub-task's), counted for this stage.
  template <class F>
  Outcome call(const trace::Recorder& clock, const std::string& key, const workflow::StageNode* op, F&& f) {
    Outcome o{false, {}, key};
    o.start_ns = clock.now();
    running.fetch_add(1);
    try {
      const exec::CurrentTask note(name(), op->spec().name, op->handle.plugin().path().native(), key);
      f();
      o.ok = true;
    } catch (const std::exception& e) {
      o.error = e.what();
      o.key = failed_key(e, key);
    } catch (...) {
      o.error = current_exception_message("operator '" + op->spec().name + "'");
    }
    running.fetch_sub(1);
    o.end_ns = clock.now();
    busy_ns.fetch_add(o.end_ns - o.start_ns);
    note_call(o.end_ns - o.start_ns);
    return o;
  }
};

// What a map-like task's variant produced, ready to route. A task that did
// not run (the run is stopping) is ok and emitted nothing.
struct Execution {
  Outcome outcome{true, {}, {}};
  Emitted out;
  // The task's compute: its operator's time less its waits for sub-tasks,
  // plus the sub-tasks' time wherever they ran (a stage profile's seconds).
  std::int64_t work_ns = 0;
};

// One call of a map-like operator: a stage's task or a sub-task of one.
struct TaskCall {
  Stage& stage;                     // counted against (a sub-task: its caller's stage)
  const workflow::StageNode& node;  // whose operator runs
  const GpuVariant* gpu = nullptr;
  const Tuple& inputs;
  std::int64_t span = -1;    // its trace span's id (-1: a fresh one)
  std::int64_t parent = -1;  // the span it is a child of (-1: none)
  SubGraph* sub = nullptr;   // where its own sub-tasks go, if it may have any
};

std::uint64_t array_bytes(const Tuple& t);
// Whether some input array of `t` has no valid copy in `worker`'s memory.
bool needs_copy(const Tuple& t, int worker);

class TaskRunner {
public:
  TaskRunner(workflow::Graph& graph, RunOptions options, Logger& log);
  // Stops the workers: queued tasks refer to what the runner holds.
  ~TaskRunner();
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  // Workers, transfers, trace tracks, and the model seeded with the hints of
  // every operator in the graph (stages and sub-task operators).
  void prepare();
  // Starts the worker threads with the policy RunOptions::scheduler names.
  void start();
  // Blocks until no task is queued or running.
  void wait_idle();
  // Stops the worker threads after their current tasks; queued tasks are
  // destroyed unrun. Safe to call again.
  void stop_workers();

  // Once set, tasks not yet started do not run and running operators see
  // ctx.cancelled().
  void set_stopping() noexcept { stopping_ = true; }
  bool stopping() const noexcept { return stopping_.load(); }
  const std::atomic<bool>& stop_flag() const noexcept { return stopping_; }

  // A task made ready inside a running task goes to its worker (`env`),
  // which runs one of them next; one made ready elsewhere (no env) goes to
  // the queue.
  void submit(sched::TaskPtr t, sched::TaskEnv* env) {
    if (env) env->spawn(std::move(t));
    else queue(std::move(t));
  }
  // Runs one ready task `w` could run, on this thread (a task waiting for
  // its sub-tasks helps rather than blocks). False when there was none.
  bool run_one(const sched::WorkerInfo& w);
  std::size_t queued() const;

  // Where a task of operator `op` may run and what the model expects of it
  // there.
  void estimate(const std::string& op, const GpuVariant* gpu, const Tuple& t, sched::Task& task) const;
  // A task's inputs placed where worker `w` (memory::host: a CPU) needs them;
  // `scratch` owns any copies made. Items held by other nodes are pulled and
  // checked against `consumer`'s input ports. `moved` adds the transfer time.
  Inputs place(const Tuple& t, int w, std::vector<Item>& scratch, double& moved,
               const workflow::StageNode* consumer = nullptr);
  // place() ahead of the task, on a GPU-like worker's copy thread. A failure
  // is not reported: the task places its inputs again and reports it then.
  void prefetch(const Tuple& t, const sched::WorkerInfo& w);
  // Runs the operator's variant for `env`'s worker, recording it in the model
  // and the trace.
  Execution execute(const TaskCall& call, sched::TaskEnv& env);
  // A stage's map task with its sub-tasks; the caller routes what it emitted.
  Execution run_map_task(Stage& s, const Tuple& t, sched::TaskEnv& env);
  void trace_task(const std::string& op, const std::string& stage, const sched::WorkerInfo& w, const std::string& key,
                  const char* variant, const Outcome& o, std::int64_t id = -1, std::int64_t parent = -1);
  // A task a worker node ran (RemoteResult): on the node's track, ending now
  // (when its answer is handled) and lasting the operator's time there.
  void trace_node_task(const std::string& op, const std::string& stage, const std::string& key, const RemoteResult& r);

  // An emitted item as it travels: valid in the memory of the worker that
  // made it (a GPU-like one) or in host memory.
  CarriedPtr carry(Item item, std::vector<CreditPtr> credits, const sched::WorkerInfo* made_on) const;
  // The item in host memory: `c`'s own, or a copy built in `scratch`.
  const Item& on_host(const Carried& c, Item& scratch);
  // A copy of c's value in host memory (pulled first when another node holds
  // it): what leaves a worker node as a task's output.
  Item host_copy(const Carried& c);
  // The operator a sub-task of `parent`'s calls (one per set of parameters).
  SubOp& sub_op(const workflow::StageNode& parent, std::string_view op, const Json& params) {
    return sub_ops_.get(parent, op, params);
  }

  workflow::Graph& graph() const noexcept { return graph_; }
  const RunOptions& options() const noexcept { return opts_; }
  Logger& log() const noexcept { return log_; }
  trace::Recorder& trace() const noexcept { return trace_; }
  sched::PerfModel& model() const noexcept { return model_; }
  const WorkerSet& workers() const noexcept { return workers_; }
  std::uint64_t bytes_to_devices() const noexcept { return transfers_->bytes_to_devices(); }
  std::uint64_t bytes_to_host() const noexcept { return transfers_->bytes_to_host(); }

private:
  void queue(sched::TaskPtr t);
  Execution run_gpu_variant(const TaskCall& call, const Inputs& inputs, const sched::WorkerInfo& w);
  Execution run_cpu_variant(const TaskCall& call, const Inputs& inputs, const sched::WorkerInfo& w);
  // What the model learns from a call that succeeded on `w`.
  void record(const TaskCall& call, const sched::WorkerInfo& w, double moved, const Outcome& o);

  workflow::Graph& graph_;
  RunOptions opts_;
  Logger& log_;
  sched::PerfModel own_model_;
  sched::PerfModel& model_;
  trace::Recorder own_trace_;
  trace::Recorder& trace_;
  WorkerSet workers_;
  std::unique_ptr<Transfers> transfers_;
  std::map<std::string, double> speedup_factor_;  // per operator, for --speedup-error
  double sim_scale_ = 1.0;
  std::atomic<bool> stopping_{false};
  SubOps sub_ops_;
  std::unique_ptr<exec::WorkerPool> pool_;  // last: stopped before the rest goes
};

}  // namespace flowd::runtime::detail

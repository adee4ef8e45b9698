#pragma once
// One run of a graph in this process, as runtime::Run drives it: sources and
// their windows, routing and key joins, sinks, reduces and closing, around a
// task runner (task_runner.hpp) that runs the map tasks. Private to the
// runtime.
//
// Its state is guarded by one lock (m_), which tasks on the workers take to
// route what they emitted. Defined in routing.cpp (sources, routing,
// closing), stage_tasks.cpp (the tasks of each kind of stage, here or on a
// cluster) and run_state.cpp (the steps of the whole run).
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "flowd/keys.hpp"
#include "runtime/carried.hpp"
#include "runtime/contexts.hpp"
#include "runtime/remote.hpp"
#include "runtime/run_types.hpp"
#include "runtime/scan_combiner.hpp"
#include "runtime/task_runner.hpp"
#include "sched/allpairs_run.hpp"
#include "sched/scan_strategy.hpp"

namespace flowd::runtime::detail {

class FailedLoads;  // runtime/allpairs_pairs.hpp

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
  // A source on a worker node (RemoteExecutor::takes_source): the node
  // chosen at its first next(), which keeps its operator; touched only by
  // the serialised source task and its answer.
  std::optional<std::uint32_t> node;
};

struct KeyLess {
  bool operator()(const std::string& a, const std::string& b) const noexcept { return key_less(a, b); }
};
using HeldItems = std::map<std::string, CarriedPtr, KeyLess>;

// A stage's part in the routing; guarded by the run lock.
struct StageState : Stage {
  explicit StageState(workflow::StageNode& n)
      : Stage(n),
        open_upstream(n.connected_inputs()),
        window(n.spec().pattern == Pattern::source ? std::make_unique<SourceWindow>() : nullptr),
        held(holds_series() ? n.spec().inputs.size() : 0) {}

  // A scan, an all-pairs stage, or a map fed consecutive pairs: it needs its whole series, in
  // key order, before its first task.
  bool holds_series() const noexcept {
    return pattern() == Pattern::scan || pattern() == Pattern::allpairs || node->consecutive_pairs;
  }

  // Downstream of a series stage: items from there come only once the whole
  // series has arrived, so items waiting here for their key partner are kept
  // without their credits, or they would stop the source that series needs.
  bool after_series = false;
  std::size_t open_upstream = 0;  // input edges whose producer has not closed
  std::size_t active = 0;         // map/sink/reduce tasks queued or running
  bool closed = false;
  std::map<std::string, Tuple> joins;  // partial key-matched tuples (several inputs)
  std::deque<Tuple> backlog;           // sink: tuples waiting, consumed one at a time
  bool sink_busy = false;
  // A sink on a worker node (RemoteExecutor::takes_sink): the node chosen
  // when the run opens its sinks, which holds its operator and files.
  std::optional<std::uint32_t> sink_node;
  std::string sink_node_name;
  bool sink_node_lost = false;  // seen lost: its steps are not sent any more
  std::vector<Item> partials;          // reduce: accumulators not being merged
  bool finalizing = false;
  bool finalized = false;

  std::unique_ptr<SourceWindow> window;  // sources only

  // holds_series(): every item received, per input port, by key in natural
  // order; kept without their credits (the source goes on emitting: the
  // series is bounded by the input, not the window).
  std::vector<HeldItems> held;
  bool released = false;                       // the scan task was queued, or the pairs dispatched
  std::optional<sched::ScanStats> scan_stats;  // a scan that ran
  std::optional<sched::AllPairsStats> allpairs_stats;  // an all-pairs stage that ran
  std::optional<sched::PairPlan> allpairs_plan;
};

class RunState {
public:
  using Tick = std::function<void(const Progress&)>;

  RunState(workflow::Graph& graph, RunOptions options, Logger& log);
  // Stops the workers before anything else goes: queued tasks refer to it.
  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  // The steps of a run, in this order.
  //
  // Workers, stage states, transfers and trace tracks. Returns the report's
  // header: the workers, the GPU note and the configuration.
  RunReport prepare();
  // Opens every sink, so that an unwritable output fails before any work is
  // done. False when one could not open: the report says why and is final,
  // every sink aborted. Throws OutputsRefused (every sink aborted) when the
  // outputs would mix with files flowd did not write.
  bool open_sinks(RunReport& report);
  // Opens the checkpoint of a resumable run, then starts the workers. Throws
  // flowd::Error (every sink aborted, nothing left behind) when the journal
  // cannot be opened.
  void start();
  // Sinks get what earlier runs kept for them (a resumed run), stages
  // without inputs close, sources begin to emit.
  void begin();
  // Returns when every stage has closed, a task failed (without keep-going),
  // the run is stuck, or it was interrupted; calls `tick` about every
  // `interval` meanwhile, on this thread.
  void wait(RunReport& report, const Tick& tick, std::chrono::milliseconds interval);
  // Stops the workers and ends the sinks: committed if the run succeeded
  // (failures kept going included), aborted otherwise. Fills in the rest of
  // the report.
  void finish(RunReport& report);

private:
  class StageTask;     // a source, map, sink, reduce, finalize, scan or all-pairs task (stage_tasks.cpp)
  class RemoteAnswer;  // a cluster's answer to a map task or a placed sink's consume (stage_tasks.cpp)
  class SourceAnswer;  // a worker node's answer to a source's next() (remote_source.cpp)

  // --- sources (routing.cpp) -------------------------------------------------
  void schedule_source(StageState& s);
  void run_source(StageState& s, sched::TaskEnv& env);
  // A credit of `s`'s window for its item `key`; `skipped`: finished by an
  // earlier run, so its return records nothing.
  CreditPtr take_credit(StageState& s, const std::string& key, bool skipped = false);
  // A source a placement moved to a worker node (remote_source.cpp): one
  // next() there, and its answer (on a pool thread).
  void run_source_on_node(StageState& s);
  void source_answer(StageState& s, RemoteResult r);

  // --- sinks a placement moved to worker nodes (remote_sink.cpp) ---------------
  bool sink_on_node(const StageState& s) const;
  // Each such sink's node: the first live one its labels match (none when
  // none does: open_sink_on_node then fails).
  void choose_sink_nodes();
  // One step of sink `s` on its node (runtime/node_sinks.hpp), waited for.
  RemoteResult sink_step(StageState& s, Json step);
  // `check`: the last sink of its node, whose files are then checked.
  // Throws flowd::Error saying where and why.
  void open_sink_on_node(StageState& s, bool check);
  void run_sink_on_node(StageState& s, Tuple t);
  void sink_answer(StageState& s, const Tuple& t, RemoteResult r);
  // The first sink of each node that writes, in stage order: node-wide steps
  // (prepare, commit, discard) go through it.
  std::vector<StageState*> sink_nodes();
  // A node-wide step: "" when it succeeded, else why ("on NODE: ...").
  std::string node_outputs_step(StageState& first, const char* step);
  void discard_node_outputs() noexcept;

  // --- routing (routing.cpp; *_locked run under m_) ---------------------------
  void route_locked(StageState& from, Emitted& out, const std::vector<CreditPtr>& credits, sched::TaskEnv* env);
  void route_one_locked(StageState& from, std::size_t port, const CarriedPtr& c, sched::TaskEnv* env);
  void deliver_locked(StageState& to, std::size_t port, const CarriedPtr& c, const std::string& from, sched::TaskEnv* env);
  void dispatch_locked(StageState& s, Tuple t, sched::TaskEnv* env);
  // A sink in this process takes one tuple at a time: the inputs of the
  // next ones that other nodes hold are pulled while it consumes this one.
  void fetch_ahead_locked(const StageState& s) const;
  void maybe_close_locked(StageState& s, sched::TaskEnv* env);
  void fail_locked(StageState& s, const std::string& key, const std::string& message);

  // --- scans and consecutive pairs (scan_stage.cpp) ------------------------------
  // Keeps an item of a stage that holds its series.
  void hold_locked(StageState& s, std::size_t port, const CarriedPtr& c);
  // When its inputs have closed: queues the scan task, or dispatches one map
  // task per consecutive pair. False when nothing was queued.
  bool release_locked(StageState& s, sched::TaskEnv* env);
  void run_scan(StageState& s, sched::TaskEnv& env);
  ScanOtherInput held_items(StageState& s);
  // The scan over worker nodes as ranks (cluster_scan.cpp); throws on failure.
  std::vector<CarriedPtr> cluster_scan(StageState& s, const std::vector<CarriedPtr>& series, ScanCombiner& combine,
                                       const std::vector<RemoteNode>& nodes, sched::TaskEnv& env,
                                       sched::ScanStats& stats);
  // The scan stages' statistics, for the report's configuration.
  Json scans_json() const;

  // --- all-pairs stages (allpairs_stage.cpp) ------------------------------------
  void run_allpairs(StageState& s, sched::TaskEnv& env);
  // The leaves on worker nodes, as jobs (cluster_allpairs.cpp): the score
  // table; sets `plan` to the plan the leaves came from. Throws on failure.
  // With `failed` (--keep-going) an item a node cannot load is recorded
  // there and left out of the pairs, as in one process.
  Table cluster_allpairs(StageState& s, const std::vector<CarriedPtr>& rows, const std::vector<CarriedPtr>& cols,
                         const std::vector<RemoteNode>& nodes, sched::TaskEnv& env, sched::AllPairsStats& stats,
                         std::optional<sched::PairPlan>& plan, FailedLoads* failed);
  // Their statistics (R, hit rates, efficiency, the leaves' picture), for
  // the report's configuration.
  Json allpairs_json() const;

  // --- stage tasks (stage_tasks.cpp) -------------------------------------------
  void run_map(StageState& s, Tuple& t, sched::TaskEnv& env);
  void run_sink(StageState& s, sched::TaskEnv& env);
  void run_reduce(StageState& s, Tuple& t, sched::TaskEnv& env);
  void run_finalize(StageState& s, sched::TaskEnv& env);
  // Every stage task ends here: a failure recorded (its inputs' source items
  // marked failed), the task counted, the stage told it is done.
  void end_task_locked(StageState& s, const Tuple* t, const Outcome& o, sched::TaskEnv* env);
  // Cluster runs (runtime/remote.hpp): a map task handed to the remote
  // executor, and its answer (on a pool thread).
  void submit_remote_locked(StageState& s, Tuple t);
  void remote_done(StageState& s, const Tuple& t, RemoteResult r);
  // What every answer of a worker node counts: the operator's time there as
  // the stage's busy time and longest call, and its bar in the trace.
  void count_node_task(StageState& s, const std::string& key, const RemoteResult& r);

  // --- the whole run (run_state.cpp) -------------------------------------------
  void replay_sink_inputs();
  // Nothing runs, nothing is queued, no source can emit, yet stages are open.
  bool stuck_locked() const;
  std::string stuck_message_locked() const;
  void sample_trace(std::unique_lock<std::mutex>& lk);
  Progress progress_locked() const;
  void finish_sinks(RunReport& report);
  static exec::CurrentTask current_task(const StageState& s);
  Json config() const;
  const RunOptions& opts() const noexcept { return runner_.options(); }
  Logger& log() const noexcept { return runner_.log(); }
  // The run's checkpoint once start() has opened it (null: not resumable).
  Checkpoint* checkpoint() const noexcept { return checkpoint_; }
  // Sinks abort in reverse stage order from the `first` sink on.
  void abort_sinks(std::size_t first = 0) noexcept;

  TaskRunner runner_;  // first: the stages' tasks run on it
  OutputSet outputs_;  // every sink's files (output_set.hpp)
  Checkpoint* checkpoint_ = nullptr;
  int window_ = 0;  // source items alive at once, per source
  Clock::time_point started_;
  std::deque<StageState> stages_;  // deque: StageState holds atomics and never moves

  std::mutex m_;
  std::condition_variable cv_;
  std::size_t closed_count_ = 0;
  bool interrupted_ = false;
  std::vector<TaskFailure> failures_;
  std::set<std::string> failed_keys_;
};

// One task class for every kind of stage work; the run state does the work.
class RunState::StageTask final : public sched::Task {
public:
  enum class Kind { source, map, sink, reduce, finalize, scan, allpairs };
  StageTask(RunState& st, StageState& s, Kind k, Tuple t = {}) : st_(st), s_(s), kind_(k), tuple_(std::move(t)) {}
  void run(sched::TaskEnv& env) override;
  void prefetch(const sched::WorkerInfo& w) override;
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

// Routed on a pool thread: the executor may answer from any thread, even
// inside submit() while the run lock is held. `handle` is remote_done (a
// map task) or sink_answer (a placed sink's consume, remote_sink.cpp).
class RunState::RemoteAnswer final : public sched::Task {
public:
  using Handler = void (RunState::*)(StageState&, const Tuple&, RemoteResult);
  RemoteAnswer(RunState& st, StageState& s, Tuple t, RemoteResult r, Handler handle)
      : st_(st), s_(s), tuple_(std::move(t)), result_(std::move(r)), handle_(handle) {}
  void run(sched::TaskEnv&) override { (st_.*handle_)(s_, tuple_, std::move(result_)); }

private:
  RunState& st_;
  StageState& s_;
  Tuple tuple_;
  RemoteResult result_;
  Handler handle_;
};

}  // namespace flowd::runtime::detail

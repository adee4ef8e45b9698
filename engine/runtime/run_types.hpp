#pragma once
// What a run is asked to do and what it reports.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <filesystem>
#include <vector>

#include "flowd/item.hpp"
#include "sched/perf_model.hpp"
#include "sched/task.hpp"
#include "trace/recorder.hpp"

namespace flowd::runtime {

class RemoteExecutor;  // runtime/remote.hpp
class Checkpoint;      // runtime/checkpoint.hpp

// Which GPU workers a run gets (--gpu): none, every GPU found, a number of
// them, or simulated ones ("sim:N[:scale]", scale multiplying every estimated
// speedup, e.g. 0.5 for a GPU half as fast as the model says).
struct GpuSpec {
  enum class Mode { none, all, count, sim };
  Mode mode = Mode::none;
  int count = 0;
  double scale = 1.0;

  // Throws flowd::Error saying what is accepted.
  static GpuSpec parse(const std::string& text);
  std::string str() const;
};

struct RunOptions {
  int cpu_workers = 0;         // 0: one per hardware thread
  GpuSpec gpus;
  std::string scheduler = "pats";  // one of runtime::schedulers() (schedulers.hpp)
  bool locality = true;        // the data-locality rule on GPUs, continuation on CPUs
  bool prefetch = true;        // GPU-like workers move the next task's inputs during the current one
  std::optional<double> transfer_impact;  // override the measured share of transfer time (DL rule)
  double sim_bandwidth = 12e9;  // bytes/s of a simulated GPU's transfers
  // Confounds speedup estimates for sensitivity experiments (Region
  // Templates, Fig. 17): speedups below the median are raised and those above
  // lowered by this fraction.
  double speedup_error = 0;
  bool keep_going = false;     // record failed items and continue
  int max_in_flight = 0;       // source items alive at once, per source; 0: 2 x workers
  std::uint64_t item_limit = 0;  // stop each source after this many items (0: all)
  bool commit = true;          // false: sinks abort at the end (a measuring run writes nothing)
  bool prefer_gpu = false;     // what a GPU-like worker can run runs only there (calibration, GPU-only runs)
  // Polled by the run; set it (e.g. from a SIGINT handler) to stop cleanly.
  const std::atomic<bool>* interrupt = nullptr;
  Json provenance = Json::object();  // handed to sinks
  // Learnt durations; the run reads estimates and records what it measures.
  // Null: a model for this run only.
  sched::PerfModel* model = nullptr;
  // Trace events, when enabled.
  trace::Recorder* recorder = nullptr;
  // A cluster run's coordinator: map stages it takes run on worker nodes.
  RemoteExecutor* remote = nullptr;
  // A resumable run (--journal/--resume): finished source items are skipped
  // and sinks get what earlier runs gave them.
  Checkpoint* checkpoint = nullptr;
  // Opens the checkpoint when the run has passed every check that can refuse
  // it (sinks opened, outputs checked, no reduce stage), so a refused run
  // creates no journal. Used when `checkpoint` is null; may throw (the run is
  // then refused as well).
  std::function<Checkpoint*()> open_checkpoint;
  // Outputs may replace files no earlier flowd run wrote (--overwrite).
  bool overwrite = false;
  // Folders inside an output folder that are not outputs (the --journal
  // folder): the check for files flowd did not write passes over them.
  std::vector<std::filesystem::path> not_outputs;
};

struct TaskFailure {
  std::string stage;
  std::string key;
  std::string message;
  std::string describe() const { return "stage '" + stage + "' failed on item '" + key + "': " + message; }
};

struct StageProgress {
  std::string name;
  std::string op;
  std::uint64_t tasks_done = 0;
  std::uint64_t on_gpu = 0;   // tasks run on a GPU-like worker
  std::uint64_t items_out = 0;
  std::uint64_t bytes_out = 0;  // of the items it emitted in this process: arrays' bytes, JSON text, tables ~8 bytes a cell
  std::uint64_t failures = 0;
  std::uint64_t running = 0;
  double busy_seconds = 0;  // summed task time
  double longest_call_seconds = 0;  // its longest single task (a source: next() call)
  bool closed = false;
  // A scan's combines, an all-pairs stage's pairs (Stage::steps_done): done,
  // expected (0: none) and for how long they have run.
  std::uint64_t steps_done = 0;
  std::uint64_t steps_expected = 0;
  double steps_seconds = 0;
  std::string step_name;
};

struct Progress {
  std::chrono::duration<double> elapsed{};
  std::vector<StageProgress> stages;
  std::uint64_t source_items = 0;    // emitted by all sources
  std::uint64_t retired_items = 0;   // source items whose every derived task has finished
  std::optional<std::uint64_t> expected_items;  // when every source told its total
};

enum class RunStatus { succeeded, completed_with_failures, failed, interrupted };

// Where a run's files went: an output folder (as the workflow named it) and
// the files written there, relative to it, manifest excluded.
struct OutputFolder {
  std::string folder;
  std::vector<std::string> files;
};

struct RunReport {
  RunStatus status = RunStatus::succeeded;
  std::vector<OutputFolder> outputs;  // what the commit put in place (this process's sinks)
  std::vector<TaskFailure> failures;  // every failure (keep-going) or the first (otherwise)
  std::string error;                  // a run-level problem (sink commit, lost items), if any
  bool outputs_mixed = false;         // a failed commit could not be undone: `error` says what is where
  Progress final;
  std::vector<sched::WorkerInfo> workers;
  std::string gpu_note;               // why there are no GPUs, or which were simulated
  std::uint64_t bytes_to_devices = 0;
  std::uint64_t bytes_to_host = 0;
  Json config = Json::object();       // what the run used: scheduler, workers, options (for the trace and report)
};

}  // namespace flowd::runtime

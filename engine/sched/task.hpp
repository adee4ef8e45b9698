#pragma once
// The unit the scheduler dispatches. A Task is owned by whoever holds its
// unique_ptr: the submitter, then the ready queue, then the worker running it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flowd::sched {

// cpu: a core. gpu: a CUDA device, driven by one manager thread.
// sim_gpu: a simulated GPU that runs CPU variants at a modelled speedup.
enum class WorkerKind : std::uint8_t { cpu, gpu, sim_gpu };

// Which worker kinds can run a task: a bit per WorkerKind.
using KindMask = std::uint8_t;
constexpr KindMask bit(WorkerKind k) noexcept { return static_cast<KindMask>(1u << static_cast<int>(k)); }
inline constexpr KindMask cpu_only = bit(WorkerKind::cpu);
inline constexpr KindMask gpu_like = static_cast<KindMask>(bit(WorkerKind::gpu) | bit(WorkerKind::sim_gpu));
constexpr bool is_gpu_like(WorkerKind k) noexcept { return k != WorkerKind::cpu; }

struct WorkerInfo {
  int id = 0;
  WorkerKind kind = WorkerKind::cpu;
  int device = -1;   // GPU ordinal (gpu) or simulated device index (sim_gpu); -1 for host
  std::string name;  // "cpu0", "gpu0", "sim0"
};

// What the scheduler knows of a task before it runs, from the performance
// model: the PATS key and the costs HEFT compares.
struct Estimate {
  float speedup = 1.0f;            // expected GPU / CPU speedup
  float cpu_seconds = 0.0f;        // expected duration on a CPU worker (0: unknown)
  float gpu_seconds = 0.0f;        // expected duration on a GPU worker (0: unknown)
  float transfer_seconds = 0.0f;   // moving the inputs to another memory (0: none or unknown)
};

class Task;
using TaskPtr = std::unique_ptr<Task>;

// What a running task sees of its worker: where it runs, and a way to hand
// the tasks it made ready back to the queue in one batch when it returns.
class TaskEnv {
public:
  explicit TaskEnv(const WorkerInfo& w) : worker_(w) {}
  const WorkerInfo& worker() const noexcept { return worker_; }
  void spawn(TaskPtr t) { spawned_.push_back(std::move(t)); }
  std::vector<TaskPtr>& spawned() noexcept { return spawned_; }

private:
  const WorkerInfo& worker_;
  std::vector<TaskPtr> spawned_;
};

class Task {
public:
  virtual ~Task() = default;
  // Must not throw: a task reports its own failures (the pool treats an
  // escaping exception as a bug and stops with it).
  virtual void run(TaskEnv& env) = 0;
  // Moves the task's inputs into `worker`'s memory ahead of run(), on the
  // worker's copy thread while its previous task computes. Must not throw
  // (a failure is kept for run() to report).
  virtual void prefetch(const WorkerInfo& worker) { (void)worker; }
  // Whether prefetch() would move anything to `worker`: handing a task to the
  // copy thread costs two thread switches (~20 us), so tasks with nothing to
  // move skip it.
  virtual bool wants_prefetch(const WorkerInfo& worker) const { (void)worker; return false; }

  KindMask runs_on = cpu_only;  // worker kinds with a variant for this task
  Estimate est;
  // The GPU-like worker whose memory holds this task's inputs (it ran their
  // producer), or -1: the data-locality rule prefers giving the task to it.
  int data_worker = -1;
};

}  // namespace flowd::sched

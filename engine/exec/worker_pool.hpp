#pragma once
// Worker threads and the dispatch loop: the one place where tasks leave the
// ready queue and run.
//
// Idle workers block (no spinning). A worker that finishes a task pushes the
// tasks it made ready and takes its next one under a single lock acquisition,
// preferring a task its last one made ready (PoolOptions::continuation).
// Extra workers are woken only while recent tasks are expensive enough to be
// worth it (PoolOptions::wake_threshold): for sub-microsecond tasks one
// worker drains a central queue faster than several contending for it, so
// adding workers never makes a run slower.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <semaphore>
#include <thread>
#include <vector>

#include "sched/ready_queue.hpp"
#include "sched/task.hpp"
#include "util/job_thread.hpp"

namespace flowd::exec {

struct PoolOptions {
  // A second worker helps only when tasks cost more than the coordination
  // (lock hand-over and a futex wake, a few microseconds on this hardware).
  std::chrono::nanoseconds wake_threshold{2000};
  // How often a parked surplus worker checks whether the running task has
  // turned long, so a slow task never strands queued work. The check reads
  // atomics only; it never takes the queue's lock.
  std::chrono::microseconds park_recheck{200};
  // Locality on CPUs: a worker runs the first task its last task made ready
  // next, without the queue, so an item goes through its stages on one core
  // while its data is hot; the other ready tasks join the queue in order.
  // Tasks a GPU-like worker of the pool could run always go to the queue,
  // where the policy weighs them for the GPUs.
  bool continuation = true;
  // GPU-like workers take their next task while the current one runs and
  // move its inputs on a copy thread (upload / compute overlap).
  bool prefetch = true;
  // Called on each worker's thread before it takes work (e.g. to pin a GPU's
  // manager thread near its GPU).
  std::function<void(const sched::WorkerInfo&)> on_thread_start;
  // Called on the worker's thread, inside the catch block, when an exception
  // escapes a task (a bug: tasks handle their own failures). The owner must
  // learn of it here: a task that never ended may be what it waits for.
  std::function<void()> on_task_error;
};

struct PoolStats {
  std::uint64_t tasks_run = 0;
  std::uint64_t wakeups = 0;  // times a sleeping worker was woken for work
};

class WorkerPool {
public:
  WorkerPool(std::unique_ptr<sched::ReadyQueue> queue, std::vector<sched::WorkerInfo> workers, PoolOptions opts = {});
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void submit(sched::TaskPtr task);
  void submit(std::vector<sched::TaskPtr> tasks);

  // Blocks until the queue is empty and no task runs. Rethrows the first
  // exception that escaped a task (a bug in that task).
  void wait_idle();

  // Runs one ready task `worker` could run, on the calling thread: a worker
  // waiting for the sub-tasks of its task helps instead of blocking. False
  // when there is none. It still runs tasks once stop() has begun: a task
  // waiting for its sub-tasks can only finish if they run (the engine's tasks
  // end at once when their run is stopping), and stop() waits for that task.
  bool run_one(const sched::WorkerInfo& worker);

  // Stops the workers after their current tasks; queued tasks are destroyed
  // unrun. Called by the destructor.
  void stop();
  bool stopping() const noexcept { return stop_.load(); }

  const std::vector<sched::WorkerInfo>& workers() const noexcept { return infos_; }
  std::string_view policy() const noexcept { return queue_->name(); }
  PoolStats stats() const;
  std::size_t queued() const;

  // CPU worker infos cpu0..cpu{n-1}.
  static std::vector<sched::WorkerInfo> cpu_workers(int n);

private:
  using Clock = std::chrono::steady_clock;
  // awake: looking for or running a task. idle: nothing to run; sleeps on
  // `cv` until woken. parked: work exists but tasks are cheap and another
  // worker takes them; sleeps on `park` and checks on a timer whether the
  // running task has turned long. Written under the lock; also read without
  // it by parked workers (hence atomics).
  enum class State : std::uint8_t { awake, idle, parked };
  struct Slot {
    std::condition_variable cv;
    std::binary_semaphore park{0};
    std::unique_ptr<JobThread> copier;  // GPU-like workers with prefetch
    std::atomic<State> state{State::awake};
    std::atomic<bool> running{false};
    std::atomic<std::int64_t> started_ns{0};
  };

  void loop(std::size_t index);
  // In a catch block: keeps the first escaped exception for wait_idle().
  void task_failed();
  sched::TaskPtr acquire(std::size_t index, std::unique_lock<std::mutex>& lk);
  void park(std::size_t index, std::unique_lock<std::mutex>& lk);
  bool surplus(std::size_t index) const noexcept;
  bool any_of_kind(sched::WorkerKind kind, std::size_t except, bool (*pred)(const Slot&)) const;
  static bool is_awake(const Slot& s);
  static bool is_available(const Slot& s);  // awake and not running a task
  static bool is_parked(const Slot& s);
  void wake_locked(std::size_t count);
  void wake_slot_locked(Slot& s);
  void wake_gpus_locked();
  bool expensive() const noexcept {
    return ewma_ns_.load(std::memory_order_relaxed) >= static_cast<double>(opts_.wake_threshold.count());
  }
  void notify_idle_locked();
  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }

  PoolOptions opts_;
  std::unique_ptr<sched::ReadyQueue> queue_;
  std::vector<sched::WorkerInfo> infos_;
  std::vector<std::unique_ptr<Slot>> slots_;

  mutable std::mutex m_;
  std::condition_variable idle_cv_;
  int running_ = 0;
  int idle_ = 0;
  sched::KindMask kinds_ = 0;  // the worker kinds in this pool  // workers in the idle state: the only ones cheap work may wake
  std::atomic<bool> stop_{false};
  // Recent task cost; starts high so the first batch wakes everyone until
  // real durations are known.
  std::atomic<double> ewma_ns_{1e6};
  PoolStats stats_;
  std::exception_ptr error_;

  std::vector<std::thread> threads_;  // last: started after everything above exists
};

}  // namespace flowd::exec

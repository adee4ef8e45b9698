#pragma once
// The ready-task queue: a scheduling policy as a data structure. The worker
// pool calls it under its own lock, so implementations need no locking.
#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "sched/task.hpp"

namespace flowd::sched {

class ReadyQueue {
public:
  virtual ~ReadyQueue() = default;
  virtual std::string_view name() const noexcept = 0;

  // The workers the queue serves, once, before any push.
  virtual void attach(const std::vector<WorkerInfo>& workers) { (void)workers; }
  virtual void push(TaskPtr task) = 0;
  // The task this worker should run next, or nullptr if none it can run.
  virtual TaskPtr pop(const WorkerInfo& worker) = 0;
  // Whether some queued task could run on this worker.
  virtual bool has_work_for(const WorkerInfo& worker) const noexcept = 0;
  virtual std::size_t size() const noexcept = 0;
  // A worker finished a task of this estimate in `seconds` (for policies
  // that track when workers will be free).
  virtual void done(const WorkerInfo& worker, const Estimate& est, double seconds) {
    (void)worker, (void)est, (void)seconds;
  }
  // Whether any worker of a kind may take any task it can run (true), or
  // tasks are bound to workers when pushed (false). A shared queue lets the
  // pool wake one worker of a kind for cheap tasks; a bound one needs the
  // worker the task was given to.
  virtual bool shared() const noexcept { return true; }
  // The pool says when a worker starts looking for work (free) and when it
  // has a task (busy), for policies that leave tasks to free workers.
  virtual void set_free(const WorkerInfo& worker, bool free) noexcept { (void)worker, (void)free; }
};

}  // namespace flowd::sched

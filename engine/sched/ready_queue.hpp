#pragma once
// The ready-task queue: a scheduling policy as a data structure. The worker
// pool calls it under its own lock, so implementations need no locking.
#include <cstddef>
#include <memory>
#include <string_view>

#include "sched/task.hpp"

namespace flowd::sched {

class ReadyQueue {
public:
  virtual ~ReadyQueue() = default;
  virtual std::string_view name() const noexcept = 0;
  virtual void push(TaskPtr task) = 0;
  // The task this worker should run next, or nullptr if none it can run.
  virtual TaskPtr pop(const WorkerInfo& worker) = 0;
  // Whether some queued task could run on a worker of this kind.
  virtual bool has_work_for(WorkerKind kind) const noexcept = 0;
  virtual std::size_t size() const noexcept = 0;
};

}  // namespace flowd::sched

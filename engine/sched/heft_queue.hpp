#pragma once
// heft: each task, when it becomes ready, goes to the worker that would
// finish it earliest, counting the work already given to that worker, the
// task's expected duration there, and the cost of moving its inputs to that
// worker's memory (like StarPU's dmda). Workers run what they were given, in
// order. Estimates come from the performance model; unknown costs count as
// `default_seconds`.
#include <chrono>
#include <deque>
#include <vector>

#include "sched/ready_queue.hpp"

namespace flowd::sched {

class HeftQueue final : public ReadyQueue {
public:
  explicit HeftQueue(double default_seconds = 1e-3) : default_seconds_(default_seconds) {}

  std::string_view name() const noexcept override { return "heft"; }
  void attach(const std::vector<WorkerInfo>& workers) override;
  void push(TaskPtr task) override;
  TaskPtr pop(const WorkerInfo& worker) override;
  bool has_work_for(const WorkerInfo& worker) const noexcept override;
  std::size_t size() const noexcept override { return size_; }
  void done(const WorkerInfo& worker, const Estimate& est, double seconds) override;
  bool shared() const noexcept override { return false; }

  // Expected seconds for `task` on `worker`: execution plus input transfer.
  double cost(const Task& task, const WorkerInfo& worker) const noexcept;

private:
  struct Slot {
    WorkerInfo info;
    std::deque<std::pair<TaskPtr, double>> fifo;  // task, expected cost
    double queued = 0;         // expected seconds of the tasks in fifo
    double running_until = 0;  // expected end of the running task
  };
  double now() const noexcept;

  double default_seconds_;
  std::deque<Slot> slots_;  // deque: a Slot holding move-only tasks never relocates
  std::size_t size_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace flowd::sched

#pragma once
// fcfs: the first ready task is served first to any worker that can run it.
#include <cstdint>
#include <deque>

#include "sched/ready_queue.hpp"

namespace flowd::sched {

class FcfsQueue final : public ReadyQueue {
public:
  std::string_view name() const noexcept override { return "fcfs"; }
  void push(TaskPtr task) override;
  TaskPtr pop(const WorkerInfo& worker) override;
  bool has_work_for(const WorkerInfo& worker) const noexcept override;
  std::size_t size() const noexcept override { return size_; }

private:
  // One FIFO per distinct capability mask; a worker serves the oldest head
  // among the FIFOs it can run, so order is global FCFS in O(#masks).
  struct Entry {
    std::uint64_t seq;
    TaskPtr task;
  };
  static constexpr int mask_count = 8;
  std::deque<Entry> fifo_[mask_count];
  std::uint64_t next_seq_ = 0;
  std::size_t size_ = 0;
};

}  // namespace flowd::sched

#include "sched/fcfs_queue.hpp"

#include <stdexcept>

namespace flowd::sched {

void FcfsQueue::push(TaskPtr task) {
  const KindMask m = task->runs_on;
  if (m == 0 || m >= mask_count) throw std::logic_error("FcfsQueue: task with no runnable worker kind");
  fifo_[m].push_back({next_seq_++, std::move(task)});
  ++size_;
}

TaskPtr FcfsQueue::pop(const WorkerInfo& worker) {
  const KindMask me = bit(worker.kind);
  std::deque<Entry>* best = nullptr;
  for (int m = 1; m < mask_count; ++m)
    if ((m & me) && !fifo_[m].empty() && (!best || fifo_[m].front().seq < best->front().seq)) best = &fifo_[m];
  if (!best) return nullptr;
  TaskPtr t = std::move(best->front().task);
  best->pop_front();
  --size_;
  return t;
}

bool FcfsQueue::has_work_for(const WorkerInfo& worker) const noexcept {
  for (int m = 1; m < mask_count; ++m)
    if ((m & bit(worker.kind)) && !fifo_[m].empty()) return true;
  return false;
}

}  // namespace flowd::sched

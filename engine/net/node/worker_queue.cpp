#include "net/node/worker_queue.hpp"

#include <algorithm>
#include <limits>

#include "flowd/error.hpp"

namespace flowd::net::node {

WorkerQueue::WorkerQueue(std::size_t slots, std::size_t lookahead, std::size_t pull_ahead)
    : slots_(slots), lookahead_(lookahead), pull_ahead_(pull_ahead) {
  if (slots_ == 0) throw Error("WorkerQueue: a node needs at least one slot");
}

std::uint32_t WorkerQueue::demand() const noexcept {
  const std::size_t held = waiting_.size() + started_.size() + asked_;
  const std::size_t free = held >= capacity() ? 0 : capacity() - held;
  return static_cast<std::uint32_t>(std::min<std::size_t>(free, std::numeric_limits<std::uint32_t>::max()));
}

std::uint32_t WorkerQueue::take_demand() noexcept {
  const std::uint32_t n = demand();
  asked_ += n;
  return n;
}

void WorkerQueue::note_assignment() noexcept {
  if (asked_ > 0) --asked_;
}

bool WorkerQueue::add(QueuedTask task) {
  if (!ids_.insert(task.task_id).second) return false;
  note_assignment();
  waiting_.push_back(std::move(task));
  return true;
}

std::optional<QueuedTask> WorkerQueue::start_next() {
  if (waiting_.empty() || started_.size() >= slots_ + pull_ahead_) return std::nullopt;
  QueuedTask t = std::move(waiting_.front());
  waiting_.pop_front();
  started_.insert(t.task_id);
  return t;
}

bool WorkerQueue::finish(std::uint64_t task_id) {
  if (started_.erase(task_id) == 0) return false;
  ids_.erase(task_id);
  return true;
}

std::vector<std::uint64_t> WorkerQueue::steal(std::size_t max) {
  std::vector<std::uint64_t> out;
  // Newest first; a task stolen once already stays (spec.stealable).
  for (auto it = waiting_.end(); out.size() < max && it != waiting_.begin();) {
    --it;
    if (!it->spec.stealable) continue;
    out.push_back(it->task_id);
    ids_.erase(it->task_id);
    it = waiting_.erase(it);
  }
  return out;
}

std::vector<std::uint64_t> WorkerQueue::drop_waiting() {
  std::vector<std::uint64_t> out;
  for (auto it = waiting_.rbegin(); it != waiting_.rend(); ++it) {
    out.push_back(it->task_id);
    ids_.erase(it->task_id);
  }
  waiting_.clear();
  return out;
}

}  // namespace flowd::net::node

#include "sched/heft_queue.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace flowd::sched {

double HeftQueue::now() const noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void HeftQueue::attach(const std::vector<WorkerInfo>& workers) {
  slots_.clear();
  for (const auto& w : workers) slots_.emplace_back(Slot{w, {}, 0, 0});
}

double HeftQueue::cost(const Task& t, const WorkerInfo& w) const noexcept {
  const double speedup = t.est.speedup > 0 ? t.est.speedup : 1.0;
  const double cpu = t.est.cpu_seconds > 0 ? t.est.cpu_seconds : default_seconds_;
  const double exec = w.kind == WorkerKind::cpu ? cpu : (t.est.gpu_seconds > 0 ? t.est.gpu_seconds : cpu / speedup);
  // Inputs live on the host unless data_worker names a GPU-like worker.
  const bool moves = is_gpu_like(w.kind) ? t.data_worker != w.id : t.data_worker >= 0;
  return exec + (moves ? t.est.transfer_seconds : 0.0);
}

void HeftQueue::push(TaskPtr task) {
  if (slots_.empty()) throw std::logic_error("HeftQueue: push before attach");
  const double t = now();
  Slot* best = nullptr;
  double best_finish = std::numeric_limits<double>::infinity(), best_cost = 0;
  for (auto& s : slots_) {
    if (!(task->runs_on & bit(s.info.kind))) continue;
    const double c = cost(*task, s.info);
    const double finish = std::max(t, s.running_until) + s.queued + c;
    if (finish < best_finish) best = &s, best_finish = finish, best_cost = c;
  }
  if (!best) throw std::logic_error("HeftQueue: no worker can run this task");
  best->queued += best_cost;
  best->fifo.emplace_back(std::move(task), best_cost);
  ++size_;
}

TaskPtr HeftQueue::pop(const WorkerInfo& worker) {
  for (auto& s : slots_) {
    if (s.info.id != worker.id || s.fifo.empty()) continue;
    auto [task, c] = std::move(s.fifo.front());
    s.fifo.pop_front();
    s.queued = std::max(0.0, s.queued - c);
    s.running_until = now() + c;
    --size_;
    return std::move(task);
  }
  return nullptr;
}

bool HeftQueue::has_work_for(const WorkerInfo& worker) const noexcept {
  for (const auto& s : slots_)
    if (s.info.id == worker.id) return !s.fifo.empty();
  return false;
}

void HeftQueue::done(const WorkerInfo& worker, const Estimate&, double) {
  for (auto& s : slots_)
    if (s.info.id == worker.id) s.running_until = now();
}

}  // namespace flowd::sched

#include "exec/worker_pool.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace flowd::exec {

WorkerPool::WorkerPool(std::unique_ptr<sched::ReadyQueue> queue, std::vector<sched::WorkerInfo> workers,
                       PoolOptions opts)
    : opts_(opts), queue_(std::move(queue)), infos_(std::move(workers)) {
  if (infos_.empty()) throw std::invalid_argument("WorkerPool: no workers");
  for (std::size_t i = 0; i < infos_.size(); ++i) slots_.push_back(std::make_unique<Slot>());
  threads_.reserve(infos_.size());
  for (std::size_t i = 0; i < infos_.size(); ++i) threads_.emplace_back([this, i] { loop(i); });
}

WorkerPool::~WorkerPool() { stop(); }

std::vector<sched::WorkerInfo> WorkerPool::cpu_workers(int n) {
  std::vector<sched::WorkerInfo> v;
  for (int i = 0; i < n; ++i) v.push_back({i, sched::WorkerKind::cpu, -1, "cpu" + std::to_string(i)});
  return v;
}

void WorkerPool::submit(sched::TaskPtr task) {
  std::lock_guard lk(m_);
  queue_->push(std::move(task));
  wake_locked(1);
}

void WorkerPool::submit(std::vector<sched::TaskPtr> tasks) {
  if (tasks.empty()) return;
  std::lock_guard lk(m_);
  const std::size_t n = tasks.size();
  for (auto& t : tasks) queue_->push(std::move(t));
  wake_locked(n);
}

void WorkerPool::wait_idle() {
  std::unique_lock lk(m_);
  idle_cv_.wait(lk, [&] { return (running_ == 0 && queue_->size() == 0) || stop_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void WorkerPool::stop() {
  {
    std::lock_guard lk(m_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
    for (auto& s : slots_) s->cv.notify_all();
    idle_cv_.notify_all();
  }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  // Queued tasks are destroyed outside the lock: their destructors may call
  // back into their owners.
  std::vector<sched::TaskPtr> unrun;
  {
    std::lock_guard lk(m_);
    for (const auto& w : infos_)
      while (auto t = queue_->pop(w)) unrun.push_back(std::move(t));
  }
}

PoolStats WorkerPool::stats() const {
  std::lock_guard lk(m_);
  return stats_;
}

bool WorkerPool::any_of_kind(sched::WorkerKind kind, std::size_t except, bool (*pred)(const Slot&)) const {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (i != except && infos_[i].kind == kind && pred(*slots_[i])) return true;
  return false;
}

bool WorkerPool::is_awake(const Slot& s) { return s.state == State::awake; }
bool WorkerPool::is_available(const Slot& s) { return s.state == State::awake && !s.running; }
bool WorkerPool::is_parked(const Slot& s) { return s.state == State::parked; }

// Wakes up to `count` sleeping workers that have something to run. While
// tasks are cheap, an idle worker is woken only if no worker of its kind is
// free to take the work or parked to check on it.
void WorkerPool::wake_locked(std::size_t count) {
  const bool all = expensive();
  const std::size_t none = slots_.size();
  for (std::size_t i = 0; i < slots_.size() && count > 0; ++i) {
    Slot& s = *slots_[i];
    const auto kind = infos_[i].kind;
    if (s.state == State::awake || !queue_->has_work_for(kind)) continue;
    if (!all && (s.state == State::parked || any_of_kind(kind, none, &is_available) || any_of_kind(kind, none, &is_parked)))
      continue;
    s.state = State::awake;
    ++stats_.wakeups;
    s.cv.notify_one();
    --count;
  }
}

// A worker is surplus while tasks are cheap, another worker of its kind is
// awake to take them, and no running task has already outlived the threshold.
bool WorkerPool::surplus(std::size_t index, Clock::time_point now) const {
  if (expensive() || !any_of_kind(infos_[index].kind, index, &is_awake)) return false;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (i != index && slots_[i]->running && now - slots_[i]->started > opts_.wake_threshold) return false;
  return true;
}

void WorkerPool::notify_idle_locked() {
  if (running_ == 0 && queue_->size() == 0) idle_cv_.notify_all();
}

sched::TaskPtr WorkerPool::acquire(std::size_t index, std::unique_lock<std::mutex>& lk) {
  Slot& me = *slots_[index];
  const auto& info = infos_[index];
  auto woken = [&] { return me.state == State::awake || stop_; };
  while (!stop_) {
    if (surplus(index, Clock::now())) {
      me.state = State::parked;
      me.cv.wait_for(lk, opts_.park_recheck, woken);
    } else {
      if (auto t = queue_->pop(info)) return t;
      me.state = State::idle;
      notify_idle_locked();
      me.cv.wait(lk, woken);
    }
    me.state = State::awake;
  }
  return nullptr;
}

void WorkerPool::loop(std::size_t index) {
  Slot& me = *slots_[index];
  const auto kind_bit = sched::bit(infos_[index].kind);
  sched::TaskEnv env(infos_[index]);
  std::unique_lock lk(m_);
  sched::TaskPtr task = acquire(index, lk);
  while (task) {
    ++running_;
    me.running = true;
    me.started = Clock::now();
    if (queue_->size() > 0) wake_locked(queue_->size());
    lk.unlock();

    try {
      task->run(env);
    } catch (...) {
      std::lock_guard g(m_);
      if (!error_) error_ = std::current_exception();
    }
    task.reset();  // outside the lock: a task's destructor may submit work
    const auto end = Clock::now();

    lk.lock();
    // Samples are clamped at 4x the threshold: one preempted task cannot flip
    // the pool into waking everyone, while a run of long tasks still does.
    const double cap = 4.0 * static_cast<double>(opts_.wake_threshold.count());
    const double ns = std::min(cap, static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - me.started).count()));
    ewma_ns_ += (ns - ewma_ns_) * 0.125;
    me.running = false;
    --running_;
    ++stats_.tasks_run;

    sched::TaskPtr next;
    auto& spawned = env.spawned();
    if (!spawned.empty()) {
      std::size_t first = 0;
      if (opts_.continuation && !stop_ && (spawned.front()->runs_on & kind_bit)) {
        next = std::move(spawned.front());
        first = 1;
      }
      for (std::size_t i = first; i < spawned.size(); ++i) queue_->push(std::move(spawned[i]));
      const std::size_t queued = spawned.size() - first;
      spawned.clear();
      // Without a continuation this worker takes one of the queued tasks itself.
      if (queued > (next ? 0u : 1u)) wake_locked(next ? queued : queued - 1);
    }
    if (next) {
      task = std::move(next);  // still counted: no unlock before ++running_
    } else {
      notify_idle_locked();
      task = acquire(index, lk);
    }
  }
  me.state = State::idle;
}

}  // namespace flowd::exec

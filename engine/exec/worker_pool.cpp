#include "exec/worker_pool.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "exec/crash_report.hpp"

namespace flowd::exec {

WorkerPool::WorkerPool(std::unique_ptr<sched::ReadyQueue> queue, std::vector<sched::WorkerInfo> workers,
                       PoolOptions opts)
    : opts_(opts), queue_(std::move(queue)), infos_(std::move(workers)) {
  if (infos_.empty()) throw std::invalid_argument("WorkerPool: no workers");
  queue_->attach(infos_);
  for (const auto& w : infos_) kinds_ |= sched::bit(w.kind);
  for (std::size_t i = 0; i < infos_.size(); ++i) {
    slots_.push_back(std::make_unique<Slot>());
    if (opts_.prefetch && sched::is_gpu_like(infos_[i].kind)) slots_.back()->copier = std::make_unique<JobThread>();
  }
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
  idle_cv_.wait(lk, [&] { return (running_ == 0 && queue_->size() == 0) || stop_.load(); });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

bool WorkerPool::run_one(const sched::WorkerInfo& worker) {
  std::unique_lock lk(m_);
  sched::TaskPtr task = queue_->pop(worker);
  if (!task) return false;
  ++running_;
  const sched::Estimate est = task->est;
  lk.unlock();
  sched::TaskEnv env(worker);
  const std::int64_t start = now_ns();
  try {
    task->run(env);
  } catch (...) {
    task_failed();
  }
  task.reset();
  const std::int64_t took = now_ns() - start;
  lk.lock();
  --running_;
  ++stats_.tasks_run;
  queue_->done(worker, est, static_cast<double>(took) * 1e-9);
  auto& spawned = env.spawned();
  const std::size_t n = spawned.size();
  for (auto& t : spawned) queue_->push(std::move(t));
  if (n) wake_locked(n);
  notify_idle_locked();
  return true;
}

void WorkerPool::task_failed() {
  {
    std::lock_guard g(m_);
    if (!error_) error_ = std::current_exception();
  }
  if (opts_.on_task_error) opts_.on_task_error();
}

void WorkerPool::stop() {
  {
    std::lock_guard lk(m_);
    if (stop_.load() && threads_.empty()) return;
    stop_ = true;
    for (auto& s : slots_) wake_slot_locked(*s);
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

std::size_t WorkerPool::queued() const {
  std::lock_guard lk(m_);
  return queue_->size();
}

bool WorkerPool::is_awake(const Slot& s) { return s.state.load(std::memory_order_relaxed) == State::awake; }
bool WorkerPool::is_available(const Slot& s) { return is_awake(s) && !s.running.load(std::memory_order_relaxed); }
bool WorkerPool::is_parked(const Slot& s) { return s.state.load(std::memory_order_relaxed) == State::parked; }

bool WorkerPool::any_of_kind(sched::WorkerKind kind, std::size_t except, bool (*pred)(const Slot&)) const {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (i != except && infos_[i].kind == kind && pred(*slots_[i])) return true;
  return false;
}

// A parked worker sleeps on its semaphore, an idle one on its condition
// variable; either way the waker marks it awake first (under the lock).
void WorkerPool::wake_slot_locked(Slot& s) {
  const State was = s.state.exchange(State::awake);
  if (was == State::parked) s.park.release();
  else if (was == State::idle) s.cv.notify_one();
}

// Wakes up to `count` sleeping workers that have something to run. With a
// shared queue and cheap tasks, one worker per kind is enough: none is woken
// if a worker of that kind is free, or busy with a parked one checking on it;
// otherwise one is, a parked one first. (A parked worker alone, with nobody
// awake, would leave the work waiting for its timer.) With a queue that binds
// tasks to workers, every sleeping worker that was given work is woken.
void WorkerPool::wake_locked(std::size_t count) {
  const bool all = expensive() || !queue_->shared();
  const std::size_t none = slots_.size();
  for (std::size_t i = 0; i < slots_.size() && count > 0; ++i) {
    Slot& s = *slots_[i];
    const auto kind = infos_[i].kind;
    if (is_awake(s) || !queue_->has_work_for(infos_[i])) continue;
    if (!all) {
      if (any_of_kind(kind, none, &is_available)) continue;
      const bool someone_awake = any_of_kind(kind, none, &is_awake);
      if (someone_awake && any_of_kind(kind, none, &is_parked)) continue;
      if (!someone_awake && !is_parked(s) && any_of_kind(kind, i, &is_parked)) continue;  // wake the parked one
    }
    wake_slot_locked(s);
    ++stats_.wakeups;
    --count;
  }
}

// A worker is surplus while tasks are cheap, another worker of its kind is
// awake to take them, and no running task has already outlived the threshold.
// Reads atomics only, so a parked worker can ask without the lock.
bool WorkerPool::surplus(std::size_t index) const noexcept {
  if (expensive() || !queue_->shared()) return false;
  const auto kind = infos_[index].kind;
  const std::int64_t now = now_ns(), limit = opts_.wake_threshold.count();
  bool other_awake = false;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (i == index || infos_[i].kind != kind) continue;
    const Slot& s = *slots_[i];
    if (s.running.load(std::memory_order_relaxed) && now - s.started_ns.load(std::memory_order_relaxed) > limit)
      return false;
    other_awake |= is_awake(s);
  }
  return other_awake;
}

void WorkerPool::notify_idle_locked() {
  if (running_ == 0 && queue_->size() == 0) idle_cv_.notify_all();
}

// Parks without holding the lock; wakes when woken, or when a timed check
// finds this worker no longer surplus.
void WorkerPool::park(std::size_t index, std::unique_lock<std::mutex>& lk) {
  Slot& me = *slots_[index];
  me.state = State::parked;
  lk.unlock();
  bool woken = false;
  while (!(woken = me.park.try_acquire_for(opts_.park_recheck)))
    if (stop_.load() || !surplus(index)) break;
  lk.lock();
  // A waker that came between the last check and the lock left a token: take it.
  if (!woken && me.state.load() == State::awake) me.park.try_acquire();
  me.state = State::awake;
}

sched::TaskPtr WorkerPool::acquire(std::size_t index, std::unique_lock<std::mutex>& lk) {
  Slot& me = *slots_[index];
  const auto& info = infos_[index];
  queue_->set_free(info, true);
  while (!stop_.load()) {
    if (surplus(index)) {
      park(index, lk);
      continue;
    }
    if (auto t = queue_->pop(info)) {
      queue_->set_free(info, false);
      return t;
    }
    // What is queued is for others: a CPU finds tasks left to free GPU-like
    // workers, a GPU-like worker tasks it has no variant for (e.g. ones it
    // spawned, expecting to take one itself). See that they are awake.
    if (queue_->size() > 0) {
      if (sched::is_gpu_like(info.kind)) wake_locked(queue_->size());
      else wake_gpus_locked();
    }
    me.state = State::idle;
    ++idle_;
    notify_idle_locked();
    me.cv.wait(lk, [&] { return is_awake(me) || stop_.load(); });
    --idle_;
    me.state = State::awake;
  }
  queue_->set_free(info, false);
  return nullptr;
}

void WorkerPool::wake_gpus_locked() {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (sched::is_gpu_like(infos_[i].kind) && !is_awake(*slots_[i]) && queue_->has_work_for(infos_[i])) {
      wake_slot_locked(*slots_[i]);
      ++stats_.wakeups;
    }
}

void WorkerPool::loop(std::size_t index) {
  Slot& me = *slots_[index];
  const auto& info = infos_[index];
  const auto kind_bit = sched::bit(info.kind);
  // Continuation is the CPU locality rule; a GPU's next task is the queue's
  // choice (PATS weighs data reuse against speedup there).
  const bool continues = opts_.continuation && info.kind == sched::WorkerKind::cpu;
  // Operators run on this thread: a stack overflow in one is reported too.
  const AltStack alt_stack;
  if (opts_.on_thread_start) opts_.on_thread_start(info);
  sched::TaskEnv env(info);
  std::unique_lock lk(m_);
  sched::TaskPtr task = acquire(index, lk);
  bool counted = false;  // a prefetched task is counted as running from its reservation
  while (task) {
    if (!counted) ++running_;
    counted = false;
    const std::int64_t start = now_ns();
    me.started_ns.store(start, std::memory_order_relaxed);
    me.running.store(true, std::memory_order_relaxed);
    // With cheap tasks only an idle worker could be woken; skip the scan when
    // there is none (the hot path of a busy worker).
    if (queue_->size() > 0 && (idle_ > 0 || expensive() || !queue_->shared())) wake_locked(queue_->size());
    const sched::Estimate est = task->est;
    // Reserve the next task now so its inputs move while this one computes.
    sched::TaskPtr next;
    if (me.copier && !stop_.load() && queue_->has_work_for(info)) {
      next = queue_->pop(info);
      if (next) ++running_;
    }
    lk.unlock();

    std::future<void> prefetched;
    if (next && next->wants_prefetch(info)) prefetched = me.copier->submit([n = next.get(), &info] { n->prefetch(info); });
    try {
      task->run(env);
    } catch (...) {
      task_failed();
    }
    task.reset();  // outside the lock: a task's destructor may submit work
    const std::int64_t took = now_ns() - start;
    if (prefetched.valid()) prefetched.wait();

    lk.lock();
    // Samples are clamped at 4x the threshold: one preempted task cannot flip
    // the pool into waking everyone, while a run of long tasks still does.
    const double cap = 4.0 * static_cast<double>(opts_.wake_threshold.count());
    const double ewma = ewma_ns_.load(std::memory_order_relaxed);
    ewma_ns_.store(ewma + (std::min(cap, static_cast<double>(took)) - ewma) * 0.125, std::memory_order_relaxed);
    me.running.store(false, std::memory_order_relaxed);
    --running_;
    ++stats_.tasks_run;
    queue_->done(info, est, static_cast<double>(took) * 1e-9);

    sched::TaskPtr follow;
    auto& spawned = env.spawned();
    if (!spawned.empty()) {
      std::size_t first = 0;
      const sched::KindMask runs_on = spawned.front()->runs_on;
      if (continues && !next && !stop_.load() && (runs_on & kind_bit) && !(runs_on & kinds_ & sched::gpu_like)) {
        follow = std::move(spawned.front());
        first = 1;
      }
      for (std::size_t i = first; i < spawned.size(); ++i) queue_->push(std::move(spawned[i]));
      const std::size_t queued = spawned.size() - first;
      spawned.clear();
      // Without a next task in hand this worker takes one of the queued
      // itself, unless the queue binds tasks to workers (it may hold none).
      const bool takes_one = !(follow || next) && queue_->shared();
      if (queued > (takes_one ? 1u : 0u)) wake_locked(takes_one ? queued - 1 : queued);
    }
    if (next) {
      task = std::move(next);
      counted = true;
    } else if (follow) {
      task = std::move(follow);  // still counted: no unlock before ++running_
    } else {
      notify_idle_locked();
      task = acquire(index, lk);
    }
  }
  me.state = State::idle;
}

}  // namespace flowd::exec

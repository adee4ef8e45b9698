#pragma once
// One thread that runs posted jobs one after another, in the order posted:
// for work that must leave the calling thread yet stay in order. The
// coordinator runs its done() callbacks on one, so they never run under its
// locks and may call back into it; a GPU-like worker's copy engine is one, so
// the next task's uploads overlap the current task's compute.
//
// The rules:
//  - post(job) queues `job`; it runs on the thread after every job posted
//    before it. A job is destroyed on the thread as soon as it returns, so
//    what it captured dies there, before the next job starts (a callback that
//    holds the last reference to an item releases it off the caller's locks).
//  - An exception escaping a posted job ends the process (std::terminate, as
//    from any std::thread): a job catches what it means to survive. submit()
//    posts a job whose exception goes to the returned future instead.
//  - drop_all() holds until resume(): no queued job runs afterwards. What is
//    queued now is destroyed uncalled on the caller's thread, outside the
//    lock; what is posted later is destroyed uncalled on the thread (a
//    submit()'s future then holds std::future_error, broken_promise). It
//    waits for the job in progress to end, unless that job is the caller, so
//    a job may call it. resume() makes jobs posted after it run again (the
//    coordinator's last steps after a drained run: a placed sink's commit).
//  - The destructor runs every job still queued (after drop_all(): destroys
//    them uncalled), then joins the thread. It must not run on the thread: a
//    job never destroys its own JobThread.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace flowd {

class JobThread {
public:
  using Job = std::function<void()>;

  JobThread() : thread_([this] { run(); }) {}
  ~JobThread() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  JobThread(const JobThread&) = delete;
  JobThread& operator=(const JobThread&) = delete;

  void post(Job job) {
    {
      std::lock_guard lock(m_);
      q_.push_back(std::move(job));
    }
    cv_.notify_all();
  }

  // Several jobs under one lock, in order: a socket turn's callbacks at once.
  void post_all(std::vector<Job> jobs) {
    if (jobs.empty()) return;
    {
      std::lock_guard lock(m_);
      for (auto& j : jobs)
        q_.push_back(std::move(j));
    }
    cv_.notify_all();
  }

  // The caller waits on the future for the job to have run; what it threw is
  // rethrown by the future's get().
  std::future<void> submit(Job job) {
    // Shared: a std::function must be copyable, a packaged_task is not.
    auto task = std::make_shared<std::packaged_task<void()>>(std::move(job));
    auto done = task->get_future();
    post([task] { (*task)(); });
    return done;
  }

  void drop_all() {
    std::deque<Job> dropped;
    std::unique_lock lock(m_);
    dropping_ = true;
    dropped.swap(q_);
    if (std::this_thread::get_id() != thread_.get_id()) cv_.wait(lock, [&] { return running_ == 0; });
    lock.unlock();
    dropped.clear();  // outside the lock: destroying a capture may run any code, even post()
  }

  void resume() {
    std::deque<Job> dropped;  // posted while dropping: never run
    {
      std::lock_guard lock(m_);
      dropped.swap(q_);
      dropping_ = false;
    }
    dropped.clear();
  }

private:
  // noexcept makes the rule above explicit: a throwing job terminates.
  void run() noexcept {
    std::unique_lock lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !q_.empty(); });
      if (q_.empty()) return;
      auto job = std::move(q_.front());
      q_.pop_front();
      const bool call = !dropping_;
      ++running_;
      lock.unlock();
      if (call && job) job();
      job = nullptr;
      lock.lock();
      --running_;
      cv_.notify_all();  // drop_all() waits for running_ == 0
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Job> q_;
  bool stop_ = false;
  bool dropping_ = false;
  int running_ = 0;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace flowd

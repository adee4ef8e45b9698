#pragma once
// A thread that runs copy jobs one after another: a GPU-like worker's copy
// engine, so the next task's uploads overlap the current task's compute.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace flowd::exec {

class CopyThread {
public:
  CopyThread() : thread_([this] { loop(); }) {}
  ~CopyThread() {
    {
      std::lock_guard lk(m_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  CopyThread(const CopyThread&) = delete;
  CopyThread& operator=(const CopyThread&) = delete;

  std::future<void> submit(std::function<void()> job) {
    std::packaged_task<void()> task(std::move(job));
    auto f = task.get_future();
    {
      std::lock_guard lk(m_);
      jobs_.push_back(std::move(task));
    }
    cv_.notify_one();
    return f;
  }

private:
  void loop() {
    std::unique_lock lk(m_);
    while (true) {
      cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lk.unlock();
      job();  // a packaged_task: exceptions go to the future
      lk.lock();
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace flowd::exec

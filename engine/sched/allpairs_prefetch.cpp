#include "sched/allpairs_prefetch.hpp"

namespace flowd::sched {

Prefetcher::Prefetcher(std::size_t threads, Fetch fetch) : fetch_(std::move(fetch)) {
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this] { loop(); });
}

Prefetcher::~Prefetcher() { stop(); }

void Prefetcher::request(const PrefetchRequest& r) {
  {
    std::lock_guard lk(m_);
    if (stopping_ || threads_.empty()) return;
    queue_.push_back(r);
  }
  cv_.notify_one();
}

void Prefetcher::stop() {
  {
    std::lock_guard lk(m_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void Prefetcher::loop() {
  for (;;) {
    PrefetchRequest r;
    {
      std::unique_lock lk(m_);
      cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      r = queue_.front();
      queue_.pop_front();
    }
    fetch_(r);
  }
}

}  // namespace flowd::sched

#pragma once
// Loader threads of the all-pairs runner (sched/allpairs_run.hpp): items are
// loaded ahead of the lanes that will compare them, as Rocket's I/O threads
// do, so that a lane finds an item cached instead of waiting for its load.
// A request is a hint: the runner's fetch decides, when a thread takes it,
// whether the item still needs loading. Requests are taken in the order
// they were made.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "sched/task.hpp"

namespace flowd::sched {

struct PrefetchRequest {
  std::uint64_t item = 0;
  // A band's row or column: its loader keeps it pinned until a lane takes
  // it, so that the items streaming past cannot evict it first.
  bool keep_pinned = false;
  const WorkerInfo* worker = nullptr;  // the lane that asked (for the trace)
};

class Prefetcher {
public:
  using Fetch = std::function<void(const PrefetchRequest&)>;
  // `threads` loader threads calling fetch (which must not throw); none for 0.
  Prefetcher(std::size_t threads, Fetch fetch);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  void request(const PrefetchRequest& r);
  // Drops the requests not yet taken and waits for the threads.
  void stop();

private:
  void loop();

  Fetch fetch_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<PrefetchRequest> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace flowd::sched

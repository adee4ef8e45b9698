#pragma once
// Ctrl-C and SIGTERM handling: the first signal asks the run to stop cleanly
// (sinks abort, nothing half-written); a second one exits at once.
#include <atomic>
#include <thread>

namespace flowd::cli {

class SignalWatch {
public:
  // Blocks SIGINT/SIGTERM in this thread and every thread it starts later,
  // and waits for them on a dedicated thread.
  SignalWatch();
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  const std::atomic<bool>& interrupted() const noexcept { return interrupted_; }

private:
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace flowd::cli

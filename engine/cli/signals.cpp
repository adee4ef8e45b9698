#include "cli/signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "cli/exit_codes.hpp"

namespace flowd::cli {

SignalWatch::SignalWatch() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this, set] {
    const timespec tick{0, 100'000'000};
    while (!done_.load()) {
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig != SIGINT && sig != SIGTERM) continue;
      if (interrupted_.exchange(true)) {
        static const char msg[] = "\nflowd: second interrupt, exiting now (temporary .flowd-tmp files may remain)\n";
        [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
        ::_exit(exit_interrupted);
      }
    }
  });
}

SignalWatch::~SignalWatch() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace flowd::cli

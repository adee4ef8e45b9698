#include "cli/signals.hpp"

#include <cstdio>
#include <ctime>
#include <signal.h>
#include <unistd.h>

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
      if (done_.load()) break;  // woken by the destructor (or a signal as the command ends)
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
  if (!thread_.joinable()) return;
  // Woken now rather than at its next tick: every command waited up to 100 ms
  // for it at the end.
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

}  // namespace flowd::cli

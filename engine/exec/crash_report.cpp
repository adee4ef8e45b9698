#include "exec/crash_report.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <signal.h>
#include <unistd.h>

namespace flowd::exec {

namespace {

// The record of what this thread runs. A global because a signal handler
// has no other way to learn what its thread was doing; thread-local so each
// thread sees its own and no lock is needed (the handler must not take one).
// The engine is linked into the executable, so this is static TLS: reading it
// in the handler allocates nothing.
thread_local const CurrentTask* current = nullptr;

// Set once by install_crash_report() before any worker thread starts; only
// read afterwards (by the handler).
int note_fd = -1;
// One report per process, even when two threads crash at once.
std::atomic<bool> reporting{false};
static_assert(std::atomic<bool>::is_always_lock_free);

constexpr int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Text built on the handler's stack: no allocation, truncated when full.
class Buffer {
public:
  Buffer& operator<<(std::string_view s) {
    const std::size_t n = std::min(s.size(), sizeof data_ - size_);
    std::memcpy(data_ + size_, s.data(), n);
    size_ += n;
    return *this;
  }
  Buffer& operator<<(std::uintmax_t v) {
    char digits[24];
    std::size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v && n < sizeof digits);
    while (n)
      *this << std::string_view(&digits[--n], 1);
    return *this;
  }
  Buffer& hex(std::uintptr_t v) {
    char digits[2 * sizeof v];
    std::size_t n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v & 0xf];
      v >>= 4;
    } while (v && n < sizeof digits);
    *this << "0x";
    while (n)
      *this << std::string_view(&digits[--n], 1);
    return *this;
  }
  void write_to(int fd) const {
    std::size_t done = 0;
    while (done < size_) {
      const ssize_t n = ::write(fd, data_ + done, size_ - done);
      if (n <= 0) return;  // EINTR included: nothing else may be tried here
      done += static_cast<std::size_t>(n);
    }
  }

private:
  char data_[4096];
  std::size_t size_ = 0;
};

std::string_view describe(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV, invalid memory access or stack overflow";
    case SIGBUS: return "SIGBUS, bus error";
    case SIGFPE: return "SIGFPE, arithmetic error";
    case SIGILL: return "SIGILL, illegal instruction";
    case SIGABRT: return "SIGABRT, abort() called, e.g. by a failed assert or std::terminate";
  }
  return "fatal signal";
}

void on_crash(int sig, siginfo_t* info, void*) {
  if (!reporting.exchange(true)) {
    const auto status = static_cast<std::uintmax_t>(128 + sig);
    Buffer b;
    b << "\nflowd: fatal signal " << static_cast<std::uintmax_t>(sig) << " (" << describe(sig) << ")";
    if ((sig == SIGSEGV || sig == SIGBUS) && info) {
      b << " at address ";
      b.hex(reinterpret_cast<std::uintptr_t>(info->si_addr));
    }
    b << "\n";
    if (const CurrentTask* t = current) {
      b << "flowd: while running stage '" << t->stage << "', operator '" << t->op << "' (plugin " << t->plugin
        << "), on item '" << t->key << "'\n";
    } else {
      b << "flowd: outside any operator (in flowd itself or a library it uses)\n";
    }
    b << "flowd: the process ends with exit status " << status << " (128 + signal); this run's outputs are not "
      << "committed\n";
    b.write_to(STDERR_FILENO);
    if (note_fd >= 0) {
      Buffer note;
      note << static_cast<std::uintmax_t>(sig) << "\t";
      if (const CurrentTask* t = current) note << t->stage << "\t" << t->key;
      note << "\n";
      note.write_to(note_fd);
    }
  }
  // SA_RESETHAND restored the default action; the signal re-raised here is
  // blocked until the handler returns, then ends the process with it.
  ::raise(sig);
}

}  // namespace

void install_crash_report(int fd) {
  note_fd = fd;
  struct sigaction sa {};
  sa.sa_sigaction = &on_crash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (const int sig : crash_signals)
    ::sigaction(sig, &sa, nullptr);
}

CurrentTask::CurrentTask(std::string_view stage_, std::string_view op_, std::string_view plugin_,
                         std::string_view key_) noexcept
    : stage(stage_), op(op_), plugin(plugin_), key(key_), outer_(current) {
  current = this;
}

CurrentTask::~CurrentTask() { current = outer_; }

namespace {
constexpr std::size_t alt_stack_bytes = 64 * 1024;
}

AltStack::AltStack() : memory_(new char[std::max<std::size_t>(alt_stack_bytes, SIGSTKSZ)]) {
  stack_t ss{};
  ss.ss_sp = memory_.get();
  ss.ss_size = std::max<std::size_t>(alt_stack_bytes, SIGSTKSZ);
  ss.ss_flags = 0;
  installed_ = ::sigaltstack(&ss, nullptr) == 0;
}

AltStack::~AltStack() {
  if (!installed_) return;
  stack_t ss{};
  ss.ss_flags = SS_DISABLE;
  ::sigaltstack(&ss, nullptr);
}

}  // namespace flowd::exec

#pragma once
// A crash inside plugin code (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) ends
// the process, but not without a word: a handler writes one block to stderr
// naming the signal and the stage, operator, plugin file and item the
// crashing thread was running, then lets the signal take its default course,
// so the exit status stays 128 + signal (139 for SIGSEGV, 134 for SIGABRT).
//
// The handler is async-signal-safe: it formats into a buffer on its own stack
// and calls write(2) only (no malloc, stdio or locks). What it names comes
// from a per-thread record that the runtime sets before it calls plugin code
// (CurrentTask) and that the handler only reads. Threads that run operators
// also get an alternate signal stack (AltStack), so a stack overflow is
// reported too.
#include <memory>
#include <string_view>

namespace flowd::exec {

// The environment variable through which a parent passes `note_fd` to a
// worker process it starts.
inline constexpr const char* crash_note_env = "FLOWD_CRASH_NOTE_FD";

// Installs the handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT, and
// an alternate stack for the calling thread. `note_fd` >= 0: the handler also
// writes one line "<signal>\t<stage>\t<item key>\n" there, for a parent
// process that wants to know which item killed this one (local workers).
// Call once, early, from the main thread.
void install_crash_report(int note_fd = -1);

// What this thread is running, while the object lives: the handler names it.
// Nested records (a task helping with others while it waits) restore the
// outer one when they end. The views must outlive the object; they are not
// copied, since this is set around every call into an operator.
class CurrentTask {
public:
  CurrentTask(std::string_view stage, std::string_view op, std::string_view plugin, std::string_view key) noexcept;
  ~CurrentTask();
  CurrentTask(const CurrentTask&) = delete;
  CurrentTask& operator=(const CurrentTask&) = delete;

  std::string_view stage, op, plugin, key;

private:
  const CurrentTask* outer_;
};

// An alternate signal stack for the calling thread while the object lives, so
// the crash handler can run after the thread's own stack overflowed.
class AltStack {
public:
  AltStack();
  ~AltStack();
  AltStack(const AltStack&) = delete;
  AltStack& operator=(const AltStack&) = delete;

private:
  std::unique_ptr<char[]> memory_;
  bool installed_ = false;
};

}  // namespace flowd::exec

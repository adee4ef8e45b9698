#pragma once
// flowd's exit codes (documented in docs/cli.md).
namespace flowd::cli {

enum ExitCode : int {
  exit_ok = 0,
  exit_usage = 1,         // bad command line
  exit_invalid = 2,       // invalid workflow, unknown or refused operator, unreadable file or key file: nothing ran
  exit_run_failed = 3,    // a task or an output failed, workers or coordinator never came: nothing was written
  exit_partial = 4,       // --keep-going run finished with failed items: outputs written, failures listed
  exit_interrupted = 130  // SIGINT/SIGTERM: stopped cleanly, nothing was written
};
// Not returned but documented: a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGABRT) ends the process with 128 + the signal (139, 135, 136, 132, 134)
// after exec/crash_report.hpp's report on stderr names the stage, operator,
// plugin and item.

}  // namespace flowd::cli

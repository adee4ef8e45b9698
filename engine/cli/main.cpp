// flowd: run a workflow of plugin operators.
#include <filesystem>
#include <iostream>
#include <system_error>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "flowd/abi.hpp"
#include "flowd/version.hpp"
#include "h5.hpp"
#include "util/exceptions.hpp"
#include "util/malloc_tuning.hpp"
#include "util/text.hpp"

namespace {

constexpr const char* usage = R"(usage: flowd WORKFLOW.json [options]       run a workflow (same as flowd run)
       flowd run WORKFLOW.json [options]
       flowd validate WORKFLOW.json [options]  check a workflow without running it
       flowd plugins [options]                 list plugins and their operators
       flowd inspect OPERATOR|PLUGIN [options] ports, parameters and docs of one operator
       flowd calibrate WORKFLOW.json [options] measure every variant on a sample; update the performance model
       flowd calibrate --transfer              what moving items costs this machine's CPUs (for a sites file)
       flowd perf [options]                    what the performance model has learnt
       flowd plan WORKFLOW.json --sites S --profile P  where each stage should run on a chain of sites
       flowd keygen [NAME] [options]           a CURVE key pair (NAME.key, NAME.pub) for TCP endpoints
       flowd worker --connect ADDR [options]   a worker node of a cluster run (flowd run --listen ADDR)
       flowd --version | --help

Each command takes --help. Common options: --set name=value, --set stage.param=value,
--plugin-path DIR, --quiet, --verbose. Running: --cpu N, --gpu none|all|N|sim:N[:scale],
--scheduler pats|fcfs|heft, --locality on|off, --prefetch on|off, --trace FILE, --report FILE.
Clusters: --workers N (local processes), --listen ADDR --expect N, --key, --authorised-keys;
under srun/mpirun rank 0 coordinates and the other ranks are workers (docs/cluster.md).

Exit codes: 0 ok; 1 bad command line; 2 invalid workflow or plugin (nothing ran);
3 run failed (nothing written); 4 --keep-going run with failed items; 130 interrupted;
128+signal (139 SIGSEGV, 134 SIGABRT) a crash, reported on stderr with its stage and item.
Documentation: docs/cli.md, docs/workflow-format.md, docs/plugin-sdk.md, docs/security.md.)";

}  // namespace

int main(int argc, char** argv) {
  using namespace flowd::cli;
  flowd::tune_malloc_for_tiles();   // before anything allocates much (malloc_tuning.hpp says why)
  flowd::h5::no_cleanup_at_exit();  // before any HDF5 call (h5.hpp says why)
  std::vector<std::string> all(argv, argv + argc);
  if (argc < 2) {
    std::cerr << usage << "\n";
    return exit_usage;
  }
  const std::string first = argv[1];
  Args rest(all.begin() + 2, all.end());
  try {
    if (first == "--version" || first == "-V") {
      std::cout << "flowd " << flowd::version_string << " (plugin ABI " << flowd::abi_version << ")\n";
      return exit_ok;
    }
    if (first == "--help" || first == "-h" || first == "help") {
      std::cout << usage << "\n";
      return exit_ok;
    }
    if (first == "run") return cmd_run(rest, all);
    if (first == "validate") return cmd_validate(rest);
    if (first == "plugins") return cmd_plugins(rest);
    if (first == "inspect") return cmd_inspect(rest);
    if (first == "calibrate") return cmd_calibrate(rest);
    if (first == "plan") return cmd_plan(rest);
    if (first == "perf") return cmd_perf(rest);
    if (first == "keygen") return cmd_keygen(rest);
    if (first == "worker") return cmd_worker(rest);
    if (!first.empty() && first[0] != '-') {
      // A bare word that names no file and does not look like one is a
      // mistyped command more likely than a workflow (issue 38).
      std::error_code ec;
      const bool looks_like_file = std::filesystem::exists(first, ec) || first.find('/') != std::string::npos ||
                                   first.find('.') != std::string::npos;
      if (!looks_like_file) {
        const std::vector<std::string> commands = {"run",  "validate", "plugins", "inspect", "calibrate",
                                                   "perf", "plan",     "keygen",  "worker"};
        const auto near = flowd::closest_match(first, commands);
        std::cerr << "flowd: '" << first << "' is neither a command nor a workflow file"
                  << (near ? " (did you mean 'flowd " + *near + "'?)" : std::string()) << "; commands: "
                  << flowd::join(commands, ", ") << "; to run a workflow, give its file (e.g. workflows/nuclei.json)\n";
        return exit_usage;
      }
      return cmd_run(Args(all.begin() + 1, all.end()), all);
    }
    std::cerr << "flowd: unknown option '" << first << "'\n" << usage << "\n";
    return exit_usage;
  } catch (...) {
    // What no command handled (a plugin may throw anything): named, never
    // std::terminate.
    std::cerr << "flowd: " << flowd::current_exception_message("flowd") << "\n";
    return exit_run_failed;
  }
}

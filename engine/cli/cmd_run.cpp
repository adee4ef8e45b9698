// flowd run / flowd validate.
#include <cstdlib>
#include <iostream>
#include <thread>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/progress_view.hpp"
#include "cli/setup.hpp"
#include "cli/signals.hpp"
#include "runtime/local_run.hpp"
#include "runtime/provenance.hpp"
#include "workflow/diagnostics.hpp"
#include "workflow/validate.hpp"

namespace po = boost::program_options;

namespace flowd::cli {

namespace {

struct CommonOptions {
  std::string workflow;
  std::vector<std::string> sets;
  PluginOptions plugins;
  bool quiet = false;
  bool verbose = false;
};

void add_common(po::options_description& d, CommonOptions& o) {
  d.add_options()
      ("set,s", po::value(&o.sets)->composing(), "override a variable (name=value) or a parameter (stage.param=value); repeatable")
      ("plugin-path,P", po::value(&o.plugins.plugin_path)->composing(), "directory or .so to search for plugins first; repeatable, ':'-separated")
      ("no-plugin-cache", po::bool_switch(&o.plugins.no_cache), "re-read every plugin's manifest instead of using the cache")
      ("quiet,q", po::bool_switch(&o.quiet), "only warnings and errors")
      ("verbose,v", po::bool_switch(&o.verbose), "debug messages too")
      ("help,h", "show this help");
}

std::vector<workflow::Override> overrides(const std::vector<std::string>& sets) {
  std::vector<workflow::Override> out;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw po::error("--set expects name=value or stage.param=value, got '" + s + "'");
    out.push_back({s.substr(0, eq), s.substr(eq + 1)});
  }
  return out;
}

Logger make_logger(const CommonOptions& o) {
  return Logger::to_stderr(o.quiet ? LogLevel::warning : (o.verbose ? LogLevel::debug : LogLevel::info));
}

// Loads, validates and builds the graph; throws ValidationError or flowd::Error.
workflow::Graph load_graph(const CommonOptions& o, Logger& log) {
  workflow::Workflow wf = workflow::load_workflow(o.workflow, overrides(o.sets));
  auto registry = make_registry(o.plugins, log, wf.plugin_path);
  return workflow::validate(std::move(wf), registry);
}

}  // namespace

int cmd_validate(const Args& args) {
  CommonOptions o;
  po::options_description desc("Options");
  desc.add_options()("workflow", po::value(&o.workflow)->required(), "workflow JSON file");
  add_common(desc, o);
  po::variables_map vm;
  if (auto rc = parse_command(args, desc, "usage: flowd validate WORKFLOW.json [options]", "workflow", vm)) return *rc;
  Logger log = make_logger(o);
  try {
    const auto g = load_graph(o, log);
    std::string stages;
    for (const auto& s : g.stages) stages += (stages.empty() ? "" : " -> ") + s.name + " (" + s.spec().name + ")";
    std::cout << o.workflow << ": valid; " << g.stages.size() << " stages: " << stages << "\n";
    return exit_ok;
  } catch (const std::exception& e) {
    log.error(e.what());
    return exit_invalid;
  }
}

int cmd_run(const Args& args, const std::vector<std::string>& full_command_line) {
  CommonOptions o;
  int cpu = -1, max_in_flight = 0;
  bool keep_going = false, no_progress = false;
  std::string scheduler, gpu;
  po::options_description desc("Options");
  desc.add_options()
      ("workflow", po::value(&o.workflow)->required(), "workflow JSON file")
      ("cpu,j", po::value(&cpu), "CPU worker threads (default: the workflow's run.cpu, else all cores)")
      ("scheduler", po::value(&scheduler), "ready-queue policy: fcfs")
      ("gpu", po::value(&gpu), "GPU workers: none (this build runs CPU workers only)")
      ("keep-going,k", po::bool_switch(&keep_going), "record failed items and go on; exit 4 if any failed")
      ("max-in-flight", po::value(&max_in_flight), "source items alive at once, per source (default 2 x workers)")
      ("no-progress", po::bool_switch(&no_progress), "no progress line or progress log lines");
  add_common(desc, o);
  po::variables_map vm;
  if (auto rc = parse_command(args, desc, "usage: flowd [run] WORKFLOW.json [options]", "workflow", vm)) return *rc;
  if (vm.count("cpu") && cpu < 0) {
    std::cerr << "flowd: --cpu must be >= 0\n";
    return exit_usage;
  }
  if (vm.count("max-in-flight") && max_in_flight < 1) {
    std::cerr << "flowd: --max-in-flight must be >= 1\n";
    return exit_usage;
  }

  SignalWatch signals;  // before any thread starts, so every thread inherits the mask
  Logger log = make_logger(o);
  workflow::Graph graph;
  runtime::RunOptions ro;
  try {
    graph = load_graph(o, log);
    const auto& run = graph.workflow.run;
    ro.cpu_workers = cpu >= 0 ? cpu : run.cpu.value_or(0);
    ro.scheduler = !scheduler.empty() ? scheduler : run.scheduler.value_or("fcfs");
    ro.keep_going = keep_going || run.keep_going.value_or(false);
    ro.max_in_flight = max_in_flight > 0 ? max_in_flight : run.max_in_flight.value_or(0);
    const std::string gpus = !gpu.empty() ? gpu : run.gpu.value_or("none");
    if (ro.scheduler != "fcfs")
      throw Error((scheduler.empty() ? "/run/scheduler" : "--scheduler") + std::string(": unknown scheduler '") +
                  ro.scheduler + "'; available: fcfs");
    if (gpus != "none" && gpus != "all" && gpus != "0")
      throw Error((gpu.empty() ? "/run/gpu" : "--gpu") + std::string(": ") + gpus +
                  " GPU workers requested, but this flowd build has no GPU execution; use \"none\"");
  } catch (const std::exception& e) {
    log.error(e.what());
    return exit_invalid;
  }
  ro.interrupt = &signals.interrupted();
  ro.provenance = runtime::make_provenance(graph, full_command_line);

  const int workers = ro.cpu_workers > 0 ? ro.cpu_workers : static_cast<int>(std::thread::hardware_concurrency());
  log.info("running " + o.workflow + " (" + std::to_string(graph.stages.size()) + " stages, " + std::to_string(workers) +
           " CPU workers, scheduler " + ro.scheduler + ", workflow sha256 " +
           ro.provenance["workflow_sha256"].get<std::string>().substr(0, 12) + ")");
  ProgressView view(log, !no_progress && !o.quiet);
  runtime::RunReport report;
  try {
    runtime::LocalRun run(graph, std::move(ro), log);
    report = run.execute([&](const runtime::Progress& p) { view.update(p); });
  } catch (const std::exception& e) {
    log.error(e.what());
    return exit_run_failed;
  }
  view.finish(report);
  switch (report.status) {
    case runtime::RunStatus::succeeded: return exit_ok;
    case runtime::RunStatus::completed_with_failures: return exit_partial;
    case runtime::RunStatus::failed: return exit_run_failed;
    case runtime::RunStatus::interrupted: return exit_interrupted;
  }
  return exit_run_failed;
}

}  // namespace flowd::cli

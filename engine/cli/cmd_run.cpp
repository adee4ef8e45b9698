// flowd run / flowd validate / flowd calibrate (a workflow, or --transfer).
#include <cstdlib>
#include <iostream>
#include <thread>

#include <boost/program_options.hpp>

#include "cli/cluster_options.hpp"
#include "cli/cluster_session.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/graph_listing.hpp"
#include "cli/progress_view.hpp"
#include "cli/run_placement.hpp"
#include "cli/setup.hpp"
#include "cli/signals.hpp"
#include "cli/workflow_options.hpp"
#include "exec/crash_report.hpp"
#include "net/cluster/launcher.hpp"
#include "net/cluster/rendezvous.hpp"
#include "net/node/worker_node.hpp"
#include "net/transport/transfer_cost.hpp"
#include "runtime/provenance.hpp"
#include "runtime/run.hpp"
#include "runtime/schedulers.hpp"
#include "store/checkpoint.hpp"
#include "trace/chrome_trace.hpp"
#include "trace/html_report.hpp"
#include "workflow/diagnostics.hpp"
#include "workflow/validate.hpp"

namespace po = boost::program_options;

namespace flowd::cli {

namespace {

// How a run executes: workers, policy, performance model, trace.
struct ExecOptions {
  int cpu = -1;
  std::string scheduler, gpu, locality, prefetch;
  double transfer_impact = -1, sim_bandwidth_gb = 12, speedup_error = 0;
  int max_in_flight = 0;
  std::uint64_t limit = 0;
  bool keep_going = false;
  std::string perf_model;
  bool no_perf_model = false;
};

// "pats (default), fcfs, heft", from the runtime's list.
std::string scheduler_help() {
  std::string names;
  for (const auto name : runtime::schedulers())
    names += (names.empty() ? std::string(name) + " (default)" : ", " + std::string(name));
  return "ready-queue policy: " + names;
}

void add_exec(po::options_description& d, ExecOptions& o) {
  d.add_options()
      ("cpu,j", po::value(&o.cpu), "CPU worker threads, at least 1 (default: the workflow's run.cpu, else all cores)")
      ("cpus", po::value(&o.cpu), "the same as --cpu (flowd worker's spelling)")
      ("gpu", po::value(&o.gpu), "GPU workers: none, all, a count, or sim:N[:scale] for N simulated GPUs (default: run.gpu, else all)")
      ("scheduler", po::value(&o.scheduler), scheduler_help().c_str())
      ("locality", po::value(&o.locality), "on|off: data-locality rule on GPUs, dependents first on CPUs (default on)")
      ("prefetch", po::value(&o.prefetch), "on|off: GPUs move the next task's inputs during the current one (default on)")
      ("transfer-impact", po::value(&o.transfer_impact), "share of transfer time in a GPU task, for the locality rule (default: measured)")
      ("sim-bandwidth", po::value(&o.sim_bandwidth_gb), "GB/s of a simulated GPU's transfers (default 12)")
      ("speedup-error", po::value(&o.speedup_error), "0..1: confound speedup estimates (sensitivity experiments)")
      ("max-in-flight", po::value(&o.max_in_flight), "source items alive at once, per source (default 2 x workers)")
      ("limit", po::value(&o.limit), "stop each source after N items, N at least 1")
      ("perf-model", po::value(&o.perf_model), "performance model file (default $FLOWD_PERF_MODEL or ~/.cache/flowd/perf-model.json)")
      ("no-perf-model", po::bool_switch(&o.no_perf_model), "neither read nor update a performance model file");
}

// Values no run can use, said instead of read as "the default" (issue 38:
// --cpu 0 ran on every core, --limit 0 ran every item).
std::optional<std::string> exec_problem(const po::variables_map& vm, const ExecOptions& e) {
  if (vm.count("cpu") && vm.count("cpus")) return "--cpu and --cpus are one option: give one of them";
  if ((vm.count("cpu") || vm.count("cpus")) && e.cpu < 1)
    return "--cpu " + std::to_string(e.cpu) + ": a run needs at least 1 CPU worker (sources and sinks run on CPUs); "
           "leave --cpu out for every core";
  if (vm.count("limit") && e.limit == 0) return "--limit 0 would run no item; leave --limit out to run every item";
  if (vm.count("max-in-flight") && e.max_in_flight < 1) return "--max-in-flight must be at least 1";
  return std::nullopt;
}

// A value given on the command line that flowd cannot use: exit 1 (a bad
// command line), where the same value in the workflow's run section is an
// invalid workflow (exit 2).
struct UsageError : Error {
  using Error::Error;
};

bool on_off(const std::string& v, const char* flag) {
  if (v == "on" || v == "true" || v == "1") return true;
  if (v == "off" || v == "false" || v == "0") return false;
  throw UsageError(std::string("--") + flag + " expects on or off, got '" + v + "'");
}

// Command line over the workflow's run section over the defaults.
runtime::RunOptions run_options(const ExecOptions& e, const workflow::Graph& g) {
  const auto& run = g.workflow.run;
  runtime::RunOptions ro;
  ro.cpu_workers = e.cpu >= 0 ? e.cpu : run.cpu.value_or(0);
  ro.scheduler = !e.scheduler.empty() ? e.scheduler : run.scheduler.value_or("pats");
  if (auto why = runtime::scheduler_problem(ro.scheduler)) {
    if (e.scheduler.empty()) throw Error("/run/scheduler: " + *why);
    throw UsageError("--scheduler: " + *why);
  }
  try {
    ro.gpus = runtime::GpuSpec::parse(!e.gpu.empty() ? e.gpu : run.gpu.value_or("all"));
  } catch (const std::exception& ex) {
    if (e.gpu.empty()) throw Error(std::string("/run/gpu: ") + ex.what());
    throw UsageError(std::string("--gpu: ") + ex.what());
  }
  if (!e.locality.empty()) ro.locality = on_off(e.locality, "locality");
  if (!e.prefetch.empty()) ro.prefetch = on_off(e.prefetch, "prefetch");
  if (e.transfer_impact >= 0) {
    if (e.transfer_impact > 1) throw UsageError("--transfer-impact expects a share in [0, 1]");
    ro.transfer_impact = e.transfer_impact;
  }
  if (e.sim_bandwidth_gb <= 0) throw UsageError("--sim-bandwidth must be > 0 GB/s");
  ro.sim_bandwidth = e.sim_bandwidth_gb * 1e9;
  if (e.speedup_error < 0 || e.speedup_error > 1) throw UsageError("--speedup-error expects a fraction in [0, 1]");
  ro.speedup_error = e.speedup_error;
  ro.keep_going = e.keep_going || run.keep_going.value_or(false);
  ro.max_in_flight = e.max_in_flight > 0 ? e.max_in_flight : run.max_in_flight.value_or(0);
  ro.item_limit = e.limit;
  return ro;
}

std::optional<std::filesystem::path> model_path(const ExecOptions& e) {
  if (e.no_perf_model) return std::nullopt;
  if (!e.perf_model.empty()) return std::filesystem::path(e.perf_model);
  return sched::default_perf_model_path();
}

void save_model(const sched::PerfModel& m, const std::optional<std::filesystem::path>& path, Logger& log) {
  if (!path) return;
  try {
    m.save(*path);
    log.debug("performance model saved to " + path->string());
  } catch (const std::exception& e) {
    log.warn(std::string("the performance model could not be saved: ") + e.what());
  }
}

int exit_code(runtime::RunStatus s) {
  switch (s) {
    case runtime::RunStatus::succeeded: return exit_ok;
    case runtime::RunStatus::completed_with_failures: return exit_partial;
    case runtime::RunStatus::failed: return exit_run_failed;
    case runtime::RunStatus::interrupted: return exit_interrupted;
  }
  return exit_run_failed;
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
    // Inputs too (issue 38): a workflow that names a folder that is not
    // there is not ready to run, whatever its JSON says.
    if (auto missing = workflow::missing_inputs(g); !missing.empty())
      throw workflow::ValidationError(o.workflow, std::move(missing));
    std::cout << o.workflow << ": valid; " << g.stages.size() << " stages, in execution order:\n" << graph_listing(g);
    return exit_ok;
  } catch (const std::exception& e) {
    log.error(e.what());
    return exit_invalid;
  }
}

// A rank other than 0 of srun/mpirun: a worker of the coordinator rank 0
// started (found through FLOWD_COORDINATOR or the rendezvous file).
int run_as_launched_worker(const net::cluster::LaunchInfo& launch, const CommonOptions& o, const ExecOptions& e,
                           const ClusterOptions& cluster, const std::vector<std::string>& labels, long rank,
                           const SignalWatch& signals, Logger& log) {
  net::node::WorkerNodeOptions w;
  try {
    // A worker rank waits for rank 0 as long as rank 0 waits for it
    // (--wait-workers), so a rank 0 that died never leaves it hanging longer.
    if (cluster.wait_seconds < 1) throw std::invalid_argument("--wait-workers must be at least 1 second");
    net::cluster::WaitOptions wait;
    wait.timeout = std::chrono::seconds(cluster.wait_seconds);
    wait.interrupt = &signals.interrupted();
    const auto where = net::cluster::resolve_coordinator(net::cluster::process_env(), launch, wait);
    w.coordinator = where.endpoint;
    w.curve = worker_credentials(cluster, where.server_public_key);
    w.name = launch.node + ":rank" + std::to_string(launch.rank);
    // Other nodes pull items from every interface only when CURVE protects
    // them; without keys the item server stays on loopback, as the
    // coordinator's default --listen does (the endpoint policy refuses more).
    w.data_bind = w.curve ? "tcp://0.0.0.0:*" : "tcp://127.0.0.1:*";
    w.cpus = e.cpu > 0 ? e.cpu : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    w.gpus = runtime::GpuSpec::parse(e.gpu.empty() ? "all" : e.gpu);
    w.labels = node_labels(labels, rank);
    w.interrupt = &signals.interrupted();
  } catch (const net::cluster::RendezvousTimeout& ex) {
    log.error(ex.what());
    return exit_run_failed;
  } catch (const net::cluster::RendezvousInterrupted& ex) {
    log.warn(std::string(ex.what()) + "; nothing was run");
    return exit_interrupted;
  } catch (const std::exception& ex) {
    log.error(ex.what());
    return exit_usage;
  }
  log.info("rank " + std::to_string(launch.rank) + " of " + std::to_string(launch.size) + " (" + launch.launcher +
           "): worker of " + w.coordinator);
  return run_worker_node(std::move(w), o.plugins, log);
}

int cmd_run(const Args& args, const std::vector<std::string>& full_command_line) {
  CommonOptions o;
  ExecOptions e;
  ClusterOptions cluster;
  std::vector<std::string> labels;
  long label_rank = 0;
  bool no_progress = false;
  std::string trace_file, report_file, stage_profile_file;
  PlacementOptions placement_options;
  std::string journal_dir;
  bool resume = false;
  bool overwrite = false;
  po::options_description desc("Options");
  desc.add_options()("workflow", po::value(&o.workflow)->required(), "workflow JSON file")
      ("keep-going,k", po::bool_switch(&e.keep_going), "record failed items and go on; exit 4 if any failed")
      ("trace", po::value(&trace_file), "write a Chrome/Perfetto trace of the run to FILE")
      ("report", po::value(&report_file), "write a self-contained HTML report of the run to FILE")
      ("stage-profile", po::value(&stage_profile_file), "write each stage's cost per source item to FILE, for flowd plan")
      ("sites", po::value(&placement_options.sites), "the chain of sites this run spans (docs/cluster.md \"Sites\"), for --placement; "
       "alone, the demand-driven default beside the model (with --profile)")
      ("placement", po::value(&placement_options.placement),
       "auto (planned from --profile) or PLAN.json (flowd plan --write): hold each stage to its site's nodes")
      ("profile", po::value(&placement_options.profile), "the stage profile --placement plans with and predicts from")
      ("replan-margin", po::value(&placement_options.replan_margin),
       "with --placement auto: plan again when a stage's measured cost differs from the profile's by more than this "
       "fraction (default 0.5)")
      ("no-progress", po::bool_switch(&no_progress), "no progress table or progress log lines")
      ("journal", po::value(&journal_dir), "keep a journal of finished work in DIR so the run can be resumed")
      ("resume", po::bool_switch(&resume), "continue the run journalled in --journal DIR: skip what it finished")
      ("overwrite", po::bool_switch(&overwrite), "let outputs replace files that no earlier flowd run wrote (otherwise refused)")
      ("label", po::value(&labels)->composing(), "under srun/mpirun: a context label of this rank's worker; repeatable")
      ("rank", po::value(&label_rank), "under srun/mpirun: this rank's label rank");
  add_exec(desc, e);
  add_coordinator_options(desc, cluster);
  add_worker_key_options(desc, cluster);
  add_common(desc, o);
  po::variables_map vm;
  if (auto rc = parse_command(args, desc, "usage: flowd [run] WORKFLOW.json [options]", "workflow", vm)) return *rc;
  if (const auto why = exec_problem(vm, e)) {
    std::cerr << "flowd: " << *why << "\n";
    return exit_usage;
  }

  exec::install_crash_report();
  SignalWatch signals;  // before any thread starts, so every thread inherits the mask
  Logger log = make_logger(o);
  std::optional<net::cluster::LaunchInfo> launch;
  try {
    launch = net::cluster::detect_launcher(net::cluster::process_env());
  } catch (const std::exception& ex) {
    log.error(ex.what());
    return exit_usage;
  }
  if (launch && launch->size > 1 && !launch->is_coordinator())
    return run_as_launched_worker(*launch, o, e, cluster, labels, label_rank, signals, log);
  workflow::Graph graph;
  runtime::RunOptions ro;
  sched::PerfModel model;
  const auto model_file = model_path(e);
  try {
    graph = load_graph(o, log);
    ro = run_options(e, graph);
    if (model_file) model = sched::PerfModel::load(*model_file);
  } catch (const UsageError& ex) {
    log.error(ex.what());
    return exit_usage;
  } catch (const std::exception& ex) {
    log.error(ex.what());
    return exit_invalid;
  }
  ro.interrupt = &signals.interrupted();
  ro.provenance = runtime::make_provenance(graph, full_command_line);
  ro.model = &model;
  trace::Recorder recorder(!trace_file.empty() || !report_file.empty());
  ro.recorder = &recorder;
  // --journal DIR [--resume] (docs/stores.md, "Resuming a run"); opened by
  // the run once nothing can refuse it any more (sinks opened, outputs
  // checked), so a refused run creates no journal, and before any work.
  std::unique_ptr<store::JournalCheckpoint> checkpoint;
  if (resume && journal_dir.empty()) {
    log.error("--resume needs --journal DIR, the directory of the run to continue");
    return exit_usage;
  }
  if (!journal_dir.empty()) {
    ro.open_checkpoint = [&]() -> runtime::Checkpoint* {
      checkpoint = std::make_unique<store::JournalCheckpoint>(
          journal_dir, ro.provenance["workflow_sha256"].get<std::string>(), resume);
      for (const auto& w : checkpoint->warnings())
        log.warn(w);
      if (resume)
        log.info("resuming " + checkpoint->journal_path().string() + " (run " + std::to_string(checkpoint->epoch()) +
                 "): " + std::to_string(checkpoint->finished_count()) + " source items finished, " +
                 std::to_string(checkpoint->replay_count()) + " sink inputs to replay, " +
                 std::to_string(checkpoint->discarded_count()) + " kept for unfinished items dropped");
      return checkpoint.get();
    };
  }
  ro.overwrite = overwrite;
  if (!journal_dir.empty()) ro.not_outputs.push_back(journal_dir);

  std::optional<AppliedPlacement> placed;
  std::optional<placement::Prediction> unplaced;  // --sites alone: the default, modelled
  if (placement_options.given() || !placement_options.sites.empty()) {
    try {
      if (placement_options.given())
        placed = apply_placement(graph, placement_options, log);
      else
        unplaced = demand_driven(graph, placement_options);
    } catch (const std::exception& ex) {
      log.error(ex.what());
      return exit_invalid;
    }
  }

  std::unique_ptr<ClusterSession> session;
  try {
    session = ClusterSession::start(cluster, {o.workflow, o.plugins.plugin_path, o.quiet, o.verbose, launch}, graph, ro, log);
    if (session) {
      ro.remote = &session->coordinator();
      if (ro.max_in_flight == 0)
        ro.max_in_flight = session->default_in_flight(
            ro.cpu_workers > 0 ? ro.cpu_workers : static_cast<int>(std::thread::hardware_concurrency()));
    }
  } catch (const SessionError& ex) {
    log.error(ex.what());
    return ex.code();
  }

  ProgressView view(log, !no_progress && !o.quiet);
  runtime::RunReport report;
  try {
    runtime::Run run(graph, ro, log);
    log.info("running " + o.workflow + " (" + std::to_string(graph.stages.size()) + " stages, scheduler " + ro.scheduler +
             ", workflow sha256 " + ro.provenance["workflow_sha256"].get<std::string>().substr(0, 12) + ")");
    std::optional<Replanner> replanner;
    if (placed && placed->planned && session) replanner.emplace(*placed, placement_options.replan_margin);
    report = run.execute([&](const runtime::Progress& p) {
      view.update(p);
      if (!replanner) return;
      std::string why;
      const auto moved = replanner->check(p, &why);
      if (why.empty()) return;
      if (!moved) {
        log.info("placement: measured costs drifted from the profile (" + why + "); planned again, the placement stays");
        return;
      }
      for (const auto& st : graph.stages)
        if (moves_during_a_run(st))
          session->coordinator().set_stage_labels(st.index, site_labels(placed->sites.sites[placed->where[st.index]]));
      log.info("placement: measured costs drifted from the profile (" + why + "); re-planned: " +
               describe(graph, *placed));
    });
  } catch (const std::exception& ex) {
    log.error(ex.what());
    return exit_invalid;
  }
  view.finish(report);
  if (session) {
    const auto st = session->coordinator().stats();
    // Every worker that took part: one lost mid-run ran tasks too.
    log.info("cluster: " + std::to_string(st.done) + " tasks on " + std::to_string(st.workers + st.workers_lost) +
             " workers" + (st.workers_lost > 0 ? " (" + std::to_string(st.workers_lost) + " lost or gone)" : "") + ", " +
             std::to_string(st.reassigned) + " reassigned after a loss, " + std::to_string(st.recomputed) +
             " items recomputed, " + std::to_string(st.steal_requests) + " steals (" + std::to_string(st.stolen) +
             " tasks moved" +
             (st.steal_replies_empty > 0 ? ", " + std::to_string(st.steal_replies_empty) + " came back empty" : "") +
             ")");
    for (const auto& w : session->coordinator().worker_report()) {
      char busy[32];
      std::snprintf(busy, sizeof busy, "%.2f", w["busy_seconds"].get<double>());
      log.info("  worker " + w["name"].get<std::string>() + ": " + std::to_string(w["tasks"].get<std::uint64_t>()) +
               " tasks, " + busy + " s busy" + (w["live"].get<bool>() ? "" : " (lost)"));
    }
    session->finish();
  }
  save_model(model, model_file, log);
  if (placed) {
    // The report's configuration table shows it (docs/report.md).
    Json stages = Json::object();
    for (const auto& st : graph.stages) stages[st.name] = placed->sites.sites[placed->where[st.index]].name;
    Json entry = {{"sites", placement_options.sites}, {"placement", placement_options.placement}, {"stages", stages},
                  {"measured_seconds", report.final.elapsed.count()}};
    if (placed->predicted) {
      entry["predicted_seconds"] = placed->predicted->total;
      entry["predicted_bottleneck"] = placed->predicted->bottleneck_name;
    }
    report.config["placement"] = std::move(entry);
  }
  if (placed && placed->predicted) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "placement: predicted %.2f s (bottleneck %s), measured %.2f s", placed->predicted->total,
                  placed->predicted->bottleneck_name.c_str(), report.final.elapsed.count());
    log.info(buf);
  } else if (!placed && !placement_options.sites.empty()) {
    char buf[200];
    if (unplaced)
      std::snprintf(buf, sizeof buf, "placement: none (demand-driven), modelled %.2f s (bottleneck %s), measured %.2f s",
                    unplaced->total, unplaced->bottleneck_name.c_str(), report.final.elapsed.count());
    else
      std::snprintf(buf, sizeof buf, "placement: none (demand-driven), measured %.2f s", report.final.elapsed.count());
    log.info(buf);
  }
  if (!stage_profile_file.empty()) {
    if (report.status != runtime::RunStatus::succeeded) {
      log.warn("no stage profile written: the run did not succeed");
    } else {
      try {
        placement::save_profile(measured_profile(graph, report.final), stage_profile_file);
        log.info("stage profile written to " + stage_profile_file);
      } catch (const std::exception& ex) {
        log.error(ex.what());
        return exit_run_failed;
      }
    }
  }
  if (recorder.enabled()) {
    const auto t = recorder.snapshot(report.config);
    try {
      if (!trace_file.empty()) {
        trace::write_chrome_trace(t, trace_file);
        log.info("trace written to " + trace_file + " (open it in ui.perfetto.dev)");
      }
      if (!report_file.empty()) {
        trace::write_html_report(t, report_file);
        log.info("report written to " + report_file);
      }
    } catch (const std::exception& ex) {
      log.error(ex.what());
      if (report.status == runtime::RunStatus::succeeded) return exit_run_failed;
    }
  }
  view.outputs(report);  // the last lines: where the results are
  return exit_code(report.status);
}

namespace {

// `flowd calibrate --transfer`: what moving items costs this machine's CPUs,
// for a sites file's hosts (docs/cluster.md "Sites").
int calibrate_transfer(double item_mb, int fetches) {
  if (!(item_mb > 0 && item_mb <= 4096) || fetches < 1) {
    std::cerr << "flowd: --transfer-mb must be in (0, 4096] and --transfer-fetches at least 1\n";
    return exit_usage;
  }
  try {
    const auto cost =
        net::transport::measure_transfer_cost(static_cast<std::uint64_t>(item_mb * 1e6), fetches);
    const double ms_per_mb_both = cost.cpu_seconds_per_byte * 1e6 * 1e3;
    std::cout << "moving items over loopback TCP" << (cost.curve ? " with CURVE" : " (libzmq without CURVE: unencrypted)")
              << ", " << fetches << " fetches of " << item_mb << " MB: " << cost.bytes_per_second / 1e6
              << " MB/s, " << ms_per_mb_both << " ms of CPU per MB at both ends together\n"
              << "transfer_cpu_ms_per_mb " << ms_per_mb_both / 2 << "\n"
              << "(each end's share, for the hosts of a sites file; a real network's kernel work is not in it)\n";
  } catch (const std::exception& ex) {
    std::cerr << "flowd: calibrate --transfer: " << ex.what() << "\n";
    return exit_run_failed;
  }
  return exit_ok;
}

}  // namespace

int cmd_calibrate(const Args& args) {
  CommonOptions o;
  ExecOptions e;
  e.limit = 8;
  bool transfer = false;
  double transfer_mb = 4;
  int transfer_fetches = 64;
  po::options_description desc("Options");
  desc.add_options()("workflow", po::value(&o.workflow), "workflow JSON file");
  desc.add_options()
      ("transfer", po::bool_switch(&transfer),
       "instead of a workflow: measure the CPU that moving items between nodes costs this machine "
       "(transfer_cpu_ms_per_mb of a sites file's hosts)")
      ("transfer-mb", po::value(&transfer_mb), "with --transfer: the size of the item moved, in MB (default 4)")
      ("transfer-fetches", po::value(&transfer_fetches), "with --transfer: how often it is fetched (default 64)");
  add_exec(desc, e);
  add_common(desc, o);
  po::variables_map vm;
  const char* usage =
      "usage: flowd calibrate WORKFLOW.json [options]\n"
      "       flowd calibrate --transfer [--transfer-mb MB] [--transfer-fetches N]\n"
      "Runs a sample of items (--limit, default 8 per source) on every available variant, writes\n"
      "no outputs, and records the durations in the performance model. With --transfer, measures\n"
      "instead what moving items costs this machine's CPUs, for a sites file (docs/cluster.md \"Sites\").";
  if (auto rc = parse_command(args, desc, usage, "workflow", vm)) return *rc;
  if (const auto why = exec_problem(vm, e)) {
    std::cerr << "flowd: " << *why << "\n";
    return exit_usage;
  }
  if (transfer != o.workflow.empty()) {
    std::cerr << "flowd: calibrate takes a workflow or --transfer (one of them)\n" << usage << "\n";
    return exit_usage;
  }
  if (transfer) return calibrate_transfer(transfer_mb, transfer_fetches);
  if (e.no_perf_model) {
    std::cerr << "flowd: calibrate writes the performance model; --no-perf-model makes no sense here\n";
    return exit_usage;
  }
  exec::install_crash_report();
  SignalWatch signals;
  Logger log = make_logger(o);
  const auto model_file = model_path(e);
  sched::PerfModel model;
  try {
    if (model_file) model = sched::PerfModel::load(*model_file);
    // The CPU variants on CPU workers, then (when there are GPUs) the GPU
    // variants on GPU workers.
    for (const bool gpu_pass : {false, true}) {
      auto graph = load_graph(o, log);  // fresh operators: sources start again
      runtime::RunOptions ro = run_options(e, graph);
      if (!gpu_pass) ro.gpus = runtime::GpuSpec{};
      else if (ro.gpus.mode == runtime::GpuSpec::Mode::none || ro.gpus.mode == runtime::GpuSpec::Mode::sim) break;
      ro.prefer_gpu = gpu_pass;
      ro.commit = false;
      ro.interrupt = &signals.interrupted();
      ro.model = &model;
      runtime::Run run(graph, ro, log);
      const auto report = run.execute();
      if (report.status != runtime::RunStatus::succeeded) {
        log.error("calibration run failed; the model was not saved");
        return exit_code(report.status);
      }
      if (gpu_pass && report.workers.size() == static_cast<std::size_t>(std::count_if(
                          report.workers.begin(), report.workers.end(),
                          [](const auto& w) { return w.kind == sched::WorkerKind::cpu; }))) {
        log.info("no GPU to calibrate: " + report.gpu_note);
        break;
      }
      log.info(std::string(gpu_pass ? "GPU" : "CPU") + " variants measured on " +
               std::to_string(report.final.source_items) + " source items");
    }
  } catch (const UsageError& ex) {
    log.error(ex.what());
    return exit_usage;
  } catch (const std::exception& ex) {
    log.error(ex.what());
    return exit_invalid;
  }
  if (!model_file) {
    log.error("no place for the performance model: set FLOWD_PERF_MODEL or --perf-model");
    return exit_usage;
  }
  model.save(*model_file);
  log.info("performance model written to " + model_file->string() + " (see `flowd perf`)");
  return exit_ok;
}

}  // namespace flowd::cli

// flowd worker: a node of a cluster run (docs/cluster.md). It joins the
// coordinator, runs the map tasks it is given and serves its outputs to
// whoever needs them, until the coordinator says the run is over.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include <boost/program_options.hpp>

#include "cli/cluster_options.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/setup.hpp"
#include "cli/signals.hpp"
#include "exec/crash_report.hpp"
#include "net/cluster/launcher.hpp"
#include "net/node/worker_node.hpp"
#include "sched/perf_model.hpp"

namespace po = boost::program_options;

namespace flowd::cli {

int run_worker_node(net::node::WorkerNodeOptions options, const PluginOptions& plugins, Logger& log) {
  options.make_registry = [plugins, &log](const std::vector<std::filesystem::path>& extra) {
    return make_registry(plugins, log, extra);
  };
  try {
    net::node::WorkerNode node(std::move(options), log);
    return node.run();
  } catch (const std::exception& e) {
    log.error(e.what());
    return exit_run_failed;
  }
}

int cmd_worker(const Args& args) {
  std::string connect, bind, advertise, name, gpu = "all", perf_model, store_dir;
  int cpus = 0, lookahead = -1, pull_ahead = 1, join_timeout = 30;
  double emulate_link = 0;
  long rank = 0;
  std::vector<std::string> labels;
  bool quiet = false, verbose = false;
  ClusterOptions cluster;
  PluginOptions plugins;
  po::options_description desc("Options");
  desc.add_options()
      ("connect", po::value(&connect)->required(), "the coordinator's endpoint (what its log prints: tcp://HOST:PORT)")
      ("cpu,j", po::value(&cpus), "CPU worker threads, at least 1 (default: all cores)")
      ("cpus", po::value(&cpus), "the same as --cpu (the older spelling)")
      ("gpu", po::value(&gpu), "GPU workers: none, all, a count, or sim:N[:scale] (default all)")
      ("label", po::value(&labels)->composing(), "a context label of this node (e.g. gpu, site:amsterdam); repeatable")
      ("rank", po::value(&rank), "this node's label rank (e.g. cores or GPU memory), for stages ranking nodes")
      ("bind", po::value(&bind), "where this node serves its items (default: with keys, the address this host reaches the coordinator from; else tcp://127.0.0.1:*)")
      ("advertise", po::value(&advertise), "host name or address peers reach this node at, when --bind is a wildcard")
      ("name", po::value(&name), "this node's name in logs (default host:pid)")
      ("emulate-link-mb-s", po::value(&emulate_link), "experiments: pulls from other nodes take at least bytes / (this many MB/s)")
      ("join-timeout", po::value(&join_timeout), "seconds to wait for the coordinator's welcome (default 30)")
      ("store", po::value(&store_dir), "keep this node's items in an HDF5 file in DIR instead of memory (items beyond memory)")
      ("lookahead", po::value(&lookahead), "tasks asked for beyond free threads, waiting to start (default: = threads)")
      ("pull-ahead", po::value(&pull_ahead), "of those, tasks whose inputs are pulled while every thread is busy (default 1; 0: only once a thread is free)")
      ("perf-model", po::value(&perf_model), "performance model file to learn into (default: none)")
      ("plugin-path,P", po::value(&plugins.plugin_path)->composing(), "directory or .so to search for plugins first; repeatable")
      ("no-plugin-cache", po::bool_switch(&plugins.no_cache), "re-read every plugin's manifest")
      ("quiet,q", po::bool_switch(&quiet), "only warnings and errors")
      ("verbose,v", po::bool_switch(&verbose), "debug messages too")
      ("help,h", "show this help");
  add_worker_key_options(desc, cluster);
  po::variables_map vm;
  if (auto rc = parse_command(args, desc, "usage: flowd worker --connect tcp://HOST:PORT [options]", "connect", vm)) return *rc;
  // The parent of a local worker reads which item a crash was in from here.
  const char* note = std::getenv(exec::crash_note_env);
  exec::install_crash_report(note && *note ? std::atoi(note) : -1);
  SignalWatch signals;
  Logger log = Logger::to_stderr(quiet ? LogLevel::warning : (verbose ? LogLevel::debug : LogLevel::info));
  net::node::WorkerNodeOptions o;
  try {
    o.coordinator = connect;
    o.curve = worker_credentials(cluster);
    o.name = name;
    // --advertise names the host for a wildcard bind: without --bind, bind one.
    o.data_bind = bind.empty() && !advertise.empty() ? "tcp://0.0.0.0:*" : bind;
    o.advertise_host = advertise;
    if ((vm.count("cpu") || vm.count("cpus")) && cpus < 1)
      throw Error("--cpu " + std::to_string(cpus) + ": a worker needs at least 1 CPU thread; leave it out for every core");
    o.cpus = cpus > 0 ? cpus : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    o.gpus = runtime::GpuSpec::parse(gpu);
    o.lookahead = lookahead;
    if (pull_ahead < 0) throw Error("--pull-ahead must be 0 or more");
    o.pull_ahead = pull_ahead;
    o.store_dir = store_dir;
    o.welcome_timeout = std::chrono::seconds(std::max(1, join_timeout));
    if (emulate_link < 0) throw Error("--emulate-link-mb-s must be >= 0");
    o.emulate_link_mb_s = emulate_link;
    o.labels = node_labels(labels, rank);
    o.interrupt = &signals.interrupted();
  } catch (const std::exception& e) {
    log.error(e.what());
    return exit_usage;
  }
  sched::PerfModel model;
  if (!perf_model.empty()) {
    try {
      model = sched::PerfModel::load(perf_model);
    } catch (const std::exception& e) {
      log.error(e.what());
      return exit_invalid;
    }
    o.model = &model;
  }
  const int rc = run_worker_node(std::move(o), plugins, log);
  if (!perf_model.empty()) model.save(perf_model);
  return rc;
}

}  // namespace flowd::cli

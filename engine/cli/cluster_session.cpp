#include "cli/cluster_session.hpp"

#include <filesystem>
#include <thread>

#include "net/cluster/rendezvous.hpp"
#include "net/security/curve.hpp"

namespace flowd::cli {

namespace sec = net::security;
namespace fs = std::filesystem;

namespace {

// Runs `f`, turning any error into a SessionError with `code`.
template <class F>
auto failing_with(ExitCode code, F&& f) {
  try {
    return f();
  } catch (const SessionError&) {
    throw;
  } catch (const std::exception& e) {
    throw SessionError(code, e.what());
  }
}

}  // namespace

std::unique_ptr<ClusterSession> ClusterSession::start(const ClusterOptions& o, const SessionContext& ctx,
                                                      const workflow::Graph& graph, const runtime::RunOptions& ro,
                                                      Logger& log) {
  const bool launched = ctx.launch && ctx.launch->size > 1;
  if (o.workers <= 0 && o.listen.empty() && !launched) return nullptr;
  const auto usage = [](const std::string& m) { return SessionError(exit_usage, m); };
  if (o.workers > 0 && (!o.listen.empty() || launched))
    throw usage("--workers starts local workers; it cannot be combined with --listen or a launcher (srun/mpirun)");
  // Under a launcher the workers are the launcher's other ranks, so --expect
  // is implied; given anyway, it must agree.
  if (launched && o.expect > 0 && o.expect != ctx.launch->size - 1)
    throw usage("--expect " + std::to_string(o.expect) + " disagrees with the launcher: " + ctx.launch->launcher +
                " started " + std::to_string(ctx.launch->size) + " ranks, so " + std::to_string(ctx.launch->size - 1) +
                " workers");
  if (!o.listen.empty() && !launched && o.expect < 1)
    throw usage("--listen needs --expect N (the workers to wait for) when no launcher (srun/mpirun) started flowd");
  if (o.steal != "on" && o.steal != "off") throw usage("--steal expects on or off, got '" + o.steal + "'");
  if (o.heartbeat_ms < 10 || o.missed_heartbeats < 1)
    throw usage("--heartbeat-ms must be >= 10 and --missed-heartbeats >= 1");
  if (o.wait_seconds < 1) throw usage("--wait-workers must be at least 1 second");
  if (o.workers <= 0 && (o.key.empty() != o.authorised_keys.empty()))
    throw usage("--key and --authorised-keys go together");
  return failing_with(exit_run_failed, [&] { return start_checked(o, ctx, graph, ro, log); });
}

std::unique_ptr<ClusterSession> ClusterSession::start_checked(const ClusterOptions& o, const SessionContext& ctx,
                                                              const workflow::Graph& graph,
                                                              const runtime::RunOptions& ro, Logger& log) {
  const bool launched = ctx.launch && ctx.launch->size > 1;
  net::node::CoordinatorOptions co;
  co.heartbeat_period = std::chrono::milliseconds(o.heartbeat_ms);
  co.missed_heartbeats = static_cast<std::uint32_t>(o.missed_heartbeats);
  co.steal = o.steal == "on";
  co.locality = ro.locality;
  co.log = [&log](LogLevel level, std::string_view m) { log.log(level, m); };
  co.recorder = ro.recorder;
  std::vector<sec::ClientCredentials> local_credentials;
  std::size_t expect = 0;
  if (o.workers > 0) {
    // Keys made for this run only: even loopback traffic is authenticated.
    auto keys = sec::make_local_keys(static_cast<std::size_t>(o.workers));
    for (const auto& w : keys.workers)
      local_credentials.push_back({keys.server.public_key, w});
    co.curve = net::node::CoordinatorCurve{keys.server, keys.authorised()};
    co.membership_endpoint = "tcp://127.0.0.1:*";
    expect = static_cast<std::size_t>(o.workers);
  } else {
    if (!o.key.empty())
      co.curve = failing_with(exit_invalid, [&] {
        return net::node::CoordinatorCurve{sec::load_secret_key(o.key).keys,
                                           sec::AuthorisedKeys::load(o.authorised_keys)};
      });
    co.membership_endpoint = !o.listen.empty() ? o.listen : "tcp://0.0.0.0:*";
    // The task channel and item server listen where membership does.
    co.bind_host_endpoint = co.membership_endpoint;
    expect = launched ? static_cast<std::size_t>(ctx.launch->size - 1) : static_cast<std::size_t>(o.expect);
  }

  // Checked here so the refusal names the address the user gave; a bad
  // command line, since it is the address or the missing keys.
  failing_with(exit_usage, [&] { sec::check_bind_endpoint(co.membership_endpoint, co.curve.has_value()); });

  net::node::RunConfig config;
  config.workflow = Json::parse(graph.workflow.resolved.dump());
  config.workflow_name = graph.workflow.name;
  config.base_dir = graph.workflow.file.empty() ? fs::current_path().string()
                                                : fs::absolute(graph.workflow.file).parent_path().string();
  config.plugin_path = ctx.plugin_path;
  config.run = {{"scheduler", ro.scheduler}, {"locality", ro.locality}, {"prefetch", ro.prefetch}};
  // Sources and sinks that run on a worker node (a placement's): the nodes open them.
  Json sources = Json::array(), sinks = Json::array();
  for (const auto& s : graph.stages) {
    if (s.source_on_a_node()) sources.push_back(s.name);
    if (s.sink_on_a_node()) sinks.push_back(s.name);
  }
  if (!sources.empty()) config.run["sources"] = std::move(sources);
  if (!sinks.empty()) config.run["sinks"] = std::move(sinks);

  std::unique_ptr<ClusterSession> s(new ClusterSession());
  s->coordinator_ = std::make_unique<net::node::Coordinator>(graph, std::move(config), std::move(co));
  const std::string endpoint = s->coordinator_->endpoint();
  log.info("coordinating " + std::to_string(expect) + " worker" + (expect == 1 ? "" : "s") + " at " + endpoint);

  if (launched) {
    if (auto path = net::cluster::rendezvous_path(net::cluster::process_env())) {
      net::cluster::write_rendezvous(
          *path,
          {endpoint, o.key.empty() ? std::string() : sec::load_secret_key(o.key).keys.public_key, ctx.launch->job_id});
      log.info("rendezvous written to " + path->string());
    }
  }
  if (o.workers > 0) {
    const int cpus = o.worker_cpus > 0 ? o.worker_cpus
                                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / o.workers);
    std::vector<std::string> args{"--cpus", std::to_string(cpus), "--gpu", ro.gpus.str()};
    if (o.worker_lookahead >= 0) args.insert(args.end(), {"--lookahead", std::to_string(o.worker_lookahead)});
    if (o.worker_pull_ahead >= 0) args.insert(args.end(), {"--pull-ahead", std::to_string(o.worker_pull_ahead)});
    if (!o.worker_store.empty()) args.insert(args.end(), {"--store", fs::absolute(o.worker_store).string()});
    for (const auto& p : ctx.plugin_path)
      args.insert(args.end(), {"-P", p});
    if (ctx.quiet) args.push_back("--quiet");
    if (ctx.verbose) args.push_back("--verbose");
    auto& coordinator = *s->coordinator_;
    LocalWorkerHooks hooks;
    hooks.expect_more = [&coordinator](int delta) { coordinator.expect_more_workers(delta); };
    hooks.registered = [&coordinator](const std::string& name) { return coordinator.has_registered(name); };
    hooks.ended = [&coordinator](const std::string& name, net::node::WorkerLoss loss) {
      coordinator.worker_process_ended(name, std::move(loss));
    };
    s->local_ = std::make_unique<LocalWorkers>(endpoint, args, local_credentials, log, std::move(hooks),
                                               std::chrono::seconds(o.wait_seconds));
  }
  try {
    s->coordinator_->wait_for_workers(expect, std::chrono::seconds(o.wait_seconds), ro.interrupt);
  } catch (const net::node::WaitInterrupted& e) {
    throw SessionError(exit_interrupted, std::string(e.what()) + "; nothing was run");
  } catch (const std::exception& e) {
    throw SessionError(exit_run_failed, "gave up waiting for workers after " + std::to_string(o.wait_seconds) +
                                            " s (--wait-workers): " + e.what());
  }
  std::string names;
  for (const auto& n : s->coordinator_->worker_names())
    names += (names.empty() ? "" : ", ") + n;
  log.info("workers joined: " + names);
  return s;
}

int ClusterSession::default_in_flight(int local_workers) const {
  // Items are alive while they run or wait on a node (its threads plus as
  // many queued ahead by default, more under --lookahead) and on their way to
  // the sinks here: without room for all of them the source window, not the
  // nodes, would bound the run.
  std::uint64_t slots = 0;
  for (const auto& w : coordinator_->worker_report())
    slots += w.value("slots", 0u);
  return static_cast<int>(2 * static_cast<std::uint64_t>(std::max(1, local_workers)) + 4 * slots);
}

void ClusterSession::finish() {
  if (local_) local_->stop_replacing();  // workers leave after the bye: not a loss
  if (coordinator_) coordinator_->finish();
  local_.reset();
}

ClusterSession::~ClusterSession() { finish(); }

}  // namespace flowd::cli

// Joining a run: membership hello and welcome, the run's workflow opened
// with the plugins found here, the TaskHost, the item server and the
// task-channel registration.
#include <algorithm>
#include <cctype>

#include "net/cluster/advertise.hpp"
#include "net/cluster/item_bind.hpp"
#include "net/node/worker_node_impl.hpp"
#include "store/hdf5_store.hpp"
#include "workflow/validate.hpp"
#include "workflow/workflow.hpp"

namespace flowd::net::node {

namespace {

// Messages the task DEALER buffers before a send would block. Control
// messages are small; what does not fit waits in the outbox, never dropped.
constexpr int task_sndhwm = 10000;

}  // namespace

std::string default_node_name(long pid) { return cluster::local_hostname() + ":" + std::to_string(pid); }

WorkerNode::Impl::Impl(WorkerNodeOptions o, Logger& l) : options(std::move(o)), log(l) {
  netlog = [this](LogLevel level, std::string_view m) { log.log(level, m); };
  name = options.name.empty() ? default_node_name(::getpid()) : options.name;
  if (options.coordinator.empty()) throw Error("worker node: no coordinator endpoint given");
  try {
    join();
  } catch (const membership::MembershipError&) {
    throw;  // names the endpoint and the likely causes already
  } catch (const std::exception& e) {
    throw Error("worker '" + name + "' cannot join the run of the coordinator at " + options.coordinator + ": " +
                e.what());
  }
}

void WorkerNode::Impl::join() {
  if (!options.make_registry) throw Error("WorkerNodeOptions::make_registry is required");
  if (options.cpus < 0) throw Error("cpus must be at least 0");
  if (options.lookahead < -1) throw Error("lookahead must be -1 (as many as slots) or more");
  if (options.pull_ahead < 0) throw Error("pull-ahead must be 0 or more");

  membership::ClientOptions mo;
  mo.endpoint = options.coordinator;
  mo.curve = options.curve;
  mo.name = name;
  // The item server starts after the welcome (its authorised keys come in
  // the run config), so its endpoint travels in the task-channel hello.
  mo.data_endpoint = "";
  mo.cpu_slots = static_cast<std::uint32_t>(options.cpus);
  mo.gpu_slots = static_cast<std::uint32_t>(options.gpus.mode == runtime::GpuSpec::Mode::none ? 0 : options.gpus.count);
  mo.labels = options.labels;
  mo.welcome_timeout = options.welcome_timeout;
  mo.log = netlog;
  membership = std::make_unique<membership::MembershipClient>(std::move(mo));
  worker_id = membership->worker_id();

  try {
    config = RunConfig::from_json(membership->config());
  } catch (const std::exception& e) {
    throw Error(std::string("unusable run config in the welcome: ") + e.what());
  }

  const auto wf = workflow::parse_workflow(config.workflow.dump(), config.workflow_name, {}, config.base_dir);
  // The run's -P entries, then the workflow's own plugin_path where it
  // exists on this machine (it was resolved on the coordinator's).
  std::vector<std::filesystem::path> extra;
  for (const auto& p : config.plugin_path)
    extra.emplace_back(p);
  for (const auto& p : wf.plugin_path) {
    std::error_code ec;
    if (std::filesystem::exists(p, ec) && std::find(extra.begin(), extra.end(), p) == extra.end()) extra.push_back(p);
  }
  registry.emplace(options.make_registry(extra));
  // Sources and sinks a placement moved to worker nodes (cluster.md
  // "Placement"): this node opens them too, in case it is the one chosen.
  std::set<std::string> placed;
  for (const char* key : {"sources", "sinks"})
    if (const auto it = config.run.find(key); it != config.run.end() && it->is_array())
      for (const auto& s : *it)
        if (s.is_string()) placed.insert(s.get<std::string>());
  auto opened = workflow::open_map_stages(wf, *registry, placed);
  graph = std::move(opened.graph);
  unavailable = std::move(opened.unavailable);
  for (const auto& [stage, why] : unavailable)
    log.warn("worker " + std::to_string(worker_id) + ": cannot run stage '" + stage + "': " + why);

  runtime::RunOptions ro;
  ro.cpu_workers = options.cpus;
  ro.gpus = options.gpus;
  ro.model = options.model;
  // Node defaults from the run ({"scheduler", "locality", "prefetch"});
  // anything of another type is ignored rather than failing the join.
  if (const auto it = config.run.find("scheduler"); it != config.run.end() && it->is_string())
    ro.scheduler = it->get<std::string>();
  if (const auto it = config.run.find("locality"); it != config.run.end() && it->is_boolean())
    ro.locality = it->get<bool>();
  if (const auto it = config.run.find("prefetch"); it != config.run.end() && it->is_boolean())
    ro.prefetch = it->get<bool>();
  host = std::make_unique<runtime::TaskHost>(graph, std::move(ro), log);
  const auto slots = static_cast<std::size_t>(std::max(1, host->slots()));
  std::uint32_t gpu_slots = 0;
  for (const auto& w : host->workers())
    gpu_slots += w.kind != sched::WorkerKind::cpu;
  const std::size_t lookahead = options.lookahead < 0 ? slots : static_cast<std::size_t>(options.lookahead);
  const auto pull_ahead = std::min(lookahead, static_cast<std::size_t>(options.pull_ahead));
  queue.emplace(slots, lookahead, pull_ahead);

  transport::ServerOptions so;
  so.endpoint = options.data_bind.empty() ? cluster::default_item_bind(options.coordinator, options.curve.has_value())
                                          : options.data_bind;
  so.log = netlog;
  if (options.curve) {
    security::AuthorisedKeys allowed;
    for (const auto& k : config.peer_public_keys)
      if (!allowed.contains(k)) allowed.add(k);
    so.curve = transport::CurveServerKeys{options.curve->own, std::move(allowed)};
  }
  if (options.store_dir.empty()) {
    store = std::make_unique<store::MemoryItemStore>();
  } else {
    // One file per node and run: what it holds means nothing after the run.
    std::string stem;
    for (const char ch : name)
      stem += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ? ch : '_';
    std::filesystem::create_directories(options.store_dir);
    store_file = options.store_dir / (stem + "-" + std::to_string(::getpid()) + ".h5");
    store = std::make_unique<store::Hdf5ItemStore>(store_file);
    log.info(who() + ": keeping its items in " + store_file.string());
  }
  server = std::make_unique<transport::ItemServer>(*store, std::move(so));
  data_endpoint = cluster::advertise_as(server->endpoint(), options.advertise_host);

  socket = zmq::socket_t(ctx, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, task_sndhwm);
  socket.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(limits.max_header_bytes));
  if (options.curve) security::configure_curve_client(socket, *options.curve);
  try {
    security::secure_connect(socket, config.task_endpoint);
  } catch (const std::exception& e) {
    throw Error("cannot connect to the task channel " + config.task_endpoint + ": " + e.what());
  }

  Registration reg;
  reg.worker_id = worker_id;
  reg.server_public_key = options.curve ? options.curve->own.public_key : "";
  reg.labels = options.labels;
  reg.unavailable = unavailable;
  wire::Hello hello;
  hello.name = name;
  hello.data_endpoint = data_endpoint;
  hello.cpu_slots =
      static_cast<std::uint32_t>(slots) - std::min<std::uint32_t>(gpu_slots, static_cast<std::uint32_t>(slots));
  hello.gpu_slots = gpu_slots;
  hello.info = reg.to_json();
  if (!post(hello)) throw Error("cannot encode the task-channel hello");
  flush();

  transport::ClientOptions co;
  co.curve = options.curve;
  co.log = netlog;
  co.abandon = [this](const std::string& endpoint) -> std::optional<std::string> {
    // A node that stops (its coordinator lost, or told to) waits for no pull.
    if (stopping) return std::string("this node is stopping");
    std::lock_guard lock(lost_m);
    const auto it = lost_holders.find(endpoint);
    if (it == lost_holders.end()) return std::nullopt;
    return it->second;
  };
  client_options = co;
  pool = std::make_unique<FetchPool>(
      slots + pull_ahead, co, [this](transport::ItemClient& c, QueuedTask t) { fetch_and_submit(c, std::move(t)); });

  log.info("worker " + std::to_string(worker_id) + " (" + name + ") joined the coordinator at " + options.coordinator +
           ": " + std::to_string(graph.stages.size()) + " stage(s) open, " + std::to_string(slots) +
           " slot(s), lookahead " + std::to_string(lookahead) + " (inputs pulled ahead for " +
           std::to_string(pull_ahead) + "), items served at " + data_endpoint +
           "; the coordinator counts as lost after " + std::to_string(membership->missed_heartbeats()) + " x " +
           std::to_string(membership->heartbeat_period().count()) + " ms of silence");
}

}  // namespace flowd::net::node

// The coordinator's public face: binding its sockets and starting the socket
// thread, and what the run (runtime::Run) calls: submit, drain, finish. The rest
// lives in the files coordinator_state.hpp lists.
#include "net/node/coordinator.hpp"

#include <algorithm>
#include <sstream>

#include "flowd/error.hpp"
#include "net/cluster/advertise.hpp"
#include "net/node/coordinator_state.hpp"

namespace flowd::net::node {

namespace {

// Internal (recompute) jobs sort before every task of the run.
constexpr std::uint64_t external_order_base = 1ull << 62;

// "tcp://HOST:*" (or the ipc path with a suffix) for the task and data binds.
std::string bind_for(const std::string& host_endpoint, const char* suffix) {
  const auto e = security::parse_endpoint(host_endpoint);
  switch (e.transport) {
    case security::Transport::tcp: {
      const bool v6 = e.address.find(':') != std::string::npos;
      return "tcp://" + (v6 ? "[" + e.address + "]" : e.address) + ":*";
    }
    case security::Transport::ipc: return "ipc://" + e.address + "-" + suffix;
    case security::Transport::inproc: break;
  }
  throw Error("coordinator: cannot bind the " + std::string(suffix) + " socket on '" + host_endpoint +
              "': the cluster runtime needs tcp:// or ipc://");
}

}  // namespace

Coordinator::Coordinator(const workflow::Graph& graph, RunConfig config, CoordinatorOptions options)
    : config_(std::move(config)) {
  core_ = std::make_shared<Core>(std::move(options));
  auto& core = *core_;
  for (const auto& s : graph.stages) {
    core.stages.push_back(StagePlacement{s.name, s.labels});
    core.is_map.push_back(s.spec().pattern == Pattern::map);
    core.source_on_a_node.push_back(s.source_on_a_node());
    core.sink_on_a_node.push_back(s.sink_on_a_node());
    core.output_count.push_back(s.spec().outputs.size());
  }
  core.stage_seconds.resize(graph.stages.size());
  const auto& opt = core.options;
  loop_ = std::make_unique<Loop>(core);
  auto& l = *loop_;

  // Keys: the workers' item servers accept the workers and us.
  std::vector<std::string> peer_keys;
  if (opt.curve) {
    std::istringstream lines(opt.curve->authorised.format());
    for (std::string line; std::getline(lines, line);)
      if (const auto key = line.substr(0, line.find(' ')); !key.empty()) peer_keys.push_back(key);
    peer_keys.push_back(opt.curve->server.public_key);
    core.server_public_key = opt.curve->server.public_key;
  }

  transport::ServerOptions ds;
  ds.endpoint = bind_for(opt.bind_host_endpoint, "data");
  if (opt.curve) ds.curve = transport::CurveServerKeys{opt.curve->server, opt.curve->authorised};
  ds.log = opt.log;
  l.item_server = std::make_unique<transport::ItemServer>(core.published, std::move(ds));
  core.data_endpoint = cluster::advertise_as(l.item_server->endpoint(), opt.advertise_host);

  if (opt.curve) l.zap = std::make_unique<security::ZapHandler>(l.ctx, opt.curve->authorised, opt.log);
  l.socket = zmq::socket_t(l.ctx, zmq::socket_type::router);
  l.socket.set(zmq::sockopt::linger, 0);
  l.socket.set(zmq::sockopt::router_mandatory, true);
  l.socket.set(zmq::sockopt::sndhwm, 10000);
  l.socket.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(l.limits.max_header_bytes));
  if (opt.curve) {
    security::configure_curve_server(l.socket, *l.zap, opt.curve->server);
    l.monitor = std::make_unique<security::HandshakeMonitor>(l.ctx, l.socket, opt.log);
  }
  l.task_endpoint = cluster::advertise_as(security::secure_bind(l.socket, bind_for(opt.bind_host_endpoint, "task")),
                                          opt.advertise_host);

  config_.task_endpoint = l.task_endpoint;
  config_.data_endpoint = core.data_endpoint;
  config_.server_public_key = core.server_public_key;
  config_.peer_public_keys = peer_keys;

  membership::ServerOptions ms;
  ms.endpoint = opt.membership_endpoint;
  if (opt.curve) ms.curve = membership::CurveServerKeys{opt.curve->server, opt.curve->authorised};
  ms.heartbeat_period = opt.heartbeat_period;
  ms.missed_heartbeats = opt.missed_heartbeats;
  ms.config = config_.to_json();
  ms.log = opt.log;
  l.membership = std::make_unique<membership::MembershipServer>(std::move(ms));
  endpoint_ = cluster::advertise_as(l.membership->endpoint(), opt.advertise_host);
  // The socket is used only by the thread from now on.
  l.thread = std::thread([&l] { l.run(); });
}

Coordinator::~Coordinator() { finish(); }

const std::string& Coordinator::endpoint() const { return endpoint_; }

void Coordinator::wait_for_workers(std::size_t n, std::chrono::milliseconds timeout,
                                   const std::atomic<bool>* interrupt) {
  auto& core = *core_;
  std::unique_lock lock(core.m);
  core.expected = std::max(core.expected, n);
  const auto live = [&] {
    return static_cast<std::size_t>(
        std::count_if(core.workers.begin(), core.workers.end(), [](const auto& w) { return w.second.live; }));
  };
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  // In slices, so a signal is noticed without anyone notifying the cv.
  for (;;) {
    const auto slice = std::min<std::chrono::steady_clock::duration>(deadline - std::chrono::steady_clock::now(),
                                                                     std::chrono::milliseconds(100));
    if (core.cv.wait_for(lock, slice, [&] { return live() >= n || core.closed; })) {
      if (!core.closed) return;
      break;
    }
    if (interrupt && interrupt->load())
      throw WaitInterrupted(
          "interrupted while waiting for workers: " + std::to_string(live()) + " of " + std::to_string(n) +
          " registered in " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count()) +
          " ms at " + endpoint_);
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  std::string registered;
  for (const auto& [id, w] : core.workers)
    if (w.live) registered += (registered.empty() ? "" : ", ") + w.label();
  const std::size_t have = live();
  lock.unlock();
  std::string joined;
  if (loop_ && loop_->membership)
    for (const auto& w : loop_->membership->workers())
      joined += (joined.empty() ? "" : ", ") + worker_label(w.id, w.name);
  throw Error("only " + std::to_string(have) + " of " + std::to_string(n) + " workers registered within " +
              std::to_string(timeout.count()) + " ms at " + endpoint_ +
              "; registered: " + (registered.empty() ? "none" : registered) +
              "; joined membership: " + (joined.empty() ? "none" : joined) +
              " (a worker that joined but never registered could not load the workflow: see its log)");
}

std::vector<std::string> Coordinator::worker_names() const {
  const auto& core = *core_;
  std::lock_guard lock(core.m);
  std::vector<std::string> names;
  for (const auto& [id, w] : core.workers)
    if (w.live) names.push_back(w.view.name);
  return names;
}

bool Coordinator::has_registered(const std::string& name) const {
  const auto& core = *core_;
  std::lock_guard lock(core.m);
  return std::any_of(core.workers.begin(), core.workers.end(),
                     [&](const auto& w) { return w.second.view.name == name; });
}

void Coordinator::expect_more_workers(int delta) {
  auto& core = *core_;
  {
    std::lock_guard lock(core.m);
    const auto n = static_cast<std::size_t>(delta < 0 ? -delta : delta);
    core.expected = delta < 0 ? core.expected - std::min(core.expected, n) : core.expected + n;
  }
  core.wake();
}

void Coordinator::worker_process_ended(const std::string& name, WorkerLoss loss) {
  auto& core = *core_;
  {
    std::lock_guard lock(core.m);
    core.ended.emplace_back(name, std::move(loss));
  }
  core.wake();
}

bool Coordinator::takes(std::size_t stage) const {
  const auto& core = *core_;
  return stage < core.is_map.size() && core.is_map[stage] && !core.closed;
}

bool Coordinator::takes_source(std::size_t stage) const {
  const auto& core = *core_;
  return stage < core.source_on_a_node.size() && core.source_on_a_node[stage] && !core.closed;
}

bool Coordinator::takes_sink(std::size_t stage) const {
  const auto& core = *core_;
  return stage < core.sink_on_a_node.size() && core.sink_on_a_node[stage] && !core.closed;
}

std::vector<runtime::RemoteNode> Coordinator::nodes_for(std::size_t stage) const {
  const auto& core = *core_;
  std::lock_guard lock(core.m);
  std::vector<runtime::RemoteNode> out;
  if (stage >= core.stages.size() || core.closed || core.drained) return out;
  for (const auto& [id, w] : core.workers)
    if (w.live && !w.unavailable.contains(core.stages[stage].name) &&
        placement_preference(core.stages[stage], w.view).has_value())
      out.push_back({id, w.label(), static_cast<int>(std::max<std::uint32_t>(1, w.slots))});
  return out;
}

void Coordinator::submit(runtime::RemoteTask task) {
  auto& core = *core_;
  {
    std::lock_guard lock(core.m);
    if (core.drained || core.closed) {
      core.log(LogLevel::debug, "coordinator: task '" + task.key + "' submitted after the run was drained; ignored");
      // Dropped below, outside the lock.
    } else {
      if (task.stage >= core.stages.size())
        throw Error("coordinator: submit for unknown stage " + std::to_string(task.stage));
      auto job = std::make_shared<Job>();
      job->order = external_order_base + core.next_order++;
      job->stage = task.stage;
      job->key = std::move(task.key);
      job->inputs = std::move(task.inputs);
      job->done = std::move(task.done);
      job->ports = std::move(task.ports);
      job->scan = std::move(task.scan);
      job->pin = task.node;
      if (job->pin) job->moved = true;  // never stolen: its node was chosen for it
      core.ready[job->order] = std::move(job);
    }
  }
  core.wake();
}

void Coordinator::drain() {
  auto& core = *core_;
  std::vector<JobPtr> trash;
  {
    std::lock_guard lock(core.m);
    core.drained = true;
    for (auto& [o, j] : core.ready)
      trash.push_back(j);
    for (auto& [w, j] : core.assigned)
      trash.push_back(j);
    core.ready.clear();
    core.assigned.clear();
    for (auto& [o, j] : core.recomputing)
      trash.push_back(j);
    core.recomputing.clear();
    for (auto& [id, w] : core.workers) {
      w.tasks.clear();
      w.thieves.clear();
      w.steal_pending = false;
    }
    for (const auto& j : trash)
      for (const auto& id : j->published)
        core.published.take(id);
    core.cv.notify_all();
  }
  if (loop_) loop_->dispatcher.drop_all();
  trash.clear();  // outside the lock: inputs and credits go here
}

void Coordinator::resume() {
  auto& core = *core_;
  {
    std::lock_guard lock(core.m);
    if (core.closed) return;
    core.drained = false;
  }
  if (loop_) loop_->dispatcher.resume();
  core.wake();
}

void Coordinator::finish() {
  std::lock_guard lock(finish_m_);
  if (finished_) return;
  finished_ = true;
  auto& core = *core_;
  drain();
  core.closed = true;
  core.cv.notify_all();
  loop_.reset();  // bye on the task channel, then membership's bye; threads joined
  {
    std::lock_guard rl(core.release_m);
    core.releases.clear();
  }
}

void Coordinator::set_stage_labels(std::size_t stage, workflow::StageLabels labels) {
  auto& core = *core_;
  {
    std::lock_guard lock(core.m);
    if (stage >= core.stages.size()) throw std::out_of_range("set_stage_labels: no stage " + std::to_string(stage));
    core.stages[stage].labels = std::move(labels);
  }
  core.cv.notify_all();
}

CoordinatorStats Coordinator::stats() const {
  const auto& core = *core_;
  std::lock_guard lock(core.m);
  CoordinatorStats s = core.st;
  s.workers = static_cast<std::size_t>(
      std::count_if(core.workers.begin(), core.workers.end(), [](const auto& w) { return w.second.live; }));
  s.workers_lost = core.workers.size() - s.workers;
  return s;
}

Json Coordinator::worker_report() const {
  const auto& core = *core_;
  std::lock_guard lock(core.m);
  Json out = Json::array();
  for (const auto& [id, w] : core.workers)
    out.push_back(Json{{"id", id},
                       {"name", w.view.name},
                       {"tasks", w.tasks_run},
                       {"busy_seconds", w.busy_seconds},
                       {"live", w.live},
                       {"slots", w.slots}});
  return out;
}

}  // namespace flowd::net::node

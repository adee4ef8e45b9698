#include "net/node/worker_node.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include <zmq.hpp>

#include "flowd/error.hpp"
#include "net/cluster/advertise.hpp"
#include "net/membership/membership.hpp"
#include "net/node/protocol.hpp"
#include "net/node/worker_queue.hpp"
#include "net/transport/client.hpp"
#include "net/transport/server.hpp"
#include "store/hdf5_store.hpp"
#include "store/item_store.hpp"
#include "wire/wire.hpp"
#include "net/zio/zio.hpp"
#include "runtime/task_host.hpp"
#include "workflow/validate.hpp"
#include "workflow/workflow.hpp"

namespace flowd::net::node {

namespace {

// Short enough that an interrupt or a membership event is noticed at once,
// long enough not to spin; sockets and completions wake the poll anyway.
constexpr auto max_poll = std::chrono::milliseconds(50);
// Messages the task DEALER buffers before a send would block. Control
// messages are small; what does not fit waits in the outbox, never dropped.
constexpr int task_sndhwm = 10000;
// How long closing waits for a final bye (and the task_failed before it).
constexpr int bye_linger_ms = 250;

// Wakes the socket thread's poll from other threads: ZeroMQ polls file
// descriptors next to sockets, and an eventfd is the cheapest one.
class Wakeup {
public:
  Wakeup() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw Error(std::string("worker node: eventfd: ") + std::strerror(errno));
  }
  ~Wakeup() { ::close(fd_); }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  void signal() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto r = ::write(fd_, &one, sizeof one);  // a full counter still wakes the poll
  }
  void clear() noexcept {
    std::uint64_t v = 0;
    [[maybe_unused]] const auto r = ::read(fd_, &v, sizeof v);  // EAGAIN when nothing was signalled
  }
  int fd() const noexcept { return fd_; }

private:
  int fd_;
};

// A task that ended, for the socket thread to report.
struct Completion {
  std::uint64_t task_id = 0;
  bool ok = false;
  bool retryable = false;
  std::string message;  // when not ok
  double seconds = 0;
  std::vector<wire::TaskOutput> outputs;  // when ok: stored already
};

// `threads` fetcher threads, each with its own ItemClient, running `work`
// on started tasks. Clients are made here, so a bad option throws in the
// constructor; their sockets are made lazily by the fetching thread.
class FetchPool {
public:
  using Work = std::function<void(transport::ItemClient&, QueuedTask)>;

  FetchPool(std::size_t threads, const transport::ClientOptions& client_options, Work work) : work_(std::move(work)) {
    std::vector<std::unique_ptr<transport::ItemClient>> clients;
    for (std::size_t i = 0; i < threads; ++i) clients.push_back(std::make_unique<transport::ItemClient>(client_options));
    try {
      for (auto& c : clients) threads_.emplace_back([this, client = std::move(c)] { loop(*client); });
    } catch (...) {
      stop();
      throw;
    }
  }
  ~FetchPool() { stop(); }
  FetchPool(const FetchPool&) = delete;
  FetchPool& operator=(const FetchPool&) = delete;

  void push(QueuedTask t) {
    {
      std::lock_guard lock(m_);
      q_.push_back(std::move(t));
    }
    cv_.notify_one();
  }
  // Drops what was not picked up; a fetch in progress ends (succeeds, or
  // fails within the client's retries) before its thread is joined.
  void stop() {
    {
      std::lock_guard lock(m_);
      closed_ = true;
      q_.clear();
    }
    cv_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

private:
  void loop(transport::ItemClient& client) {
    while (true) {
      QueuedTask t;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return closed_ || !q_.empty(); });
        if (closed_) return;
        t = std::move(q_.front());
        q_.pop_front();
      }
      work_(client, std::move(t));  // never throws: failures become completions
    }
  }

  Work work_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<QueuedTask> q_;
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

std::string default_name() { return cluster::local_hostname() + ":" + std::to_string(::getpid()); }

// The payload size an item travels with (ItemRef::bytes, for the
// coordinator's locality preference): exact for arrays and JSON; a table's
// is its serialised size.
std::uint64_t payload_bytes(const Item& item) {
  switch (kind_of(item.value)) {
    case ValueKind::none: return 0;
    case ValueKind::array: return item.array().nbytes();
    case ValueKind::json: return item.json().dump().size();
    case ValueKind::table: {
      auto out = wire::OutgoingItem::make(item, 0);
      return out ? out->payload_bytes() : 0;
    }
  }
  return 0;
}

}  // namespace

struct WorkerNode::Impl {
  WorkerNodeOptions options;
  Logger& log;
  zio::NetLog netlog;
  wire::Limits limits{};
  std::string name;

  std::unique_ptr<membership::MembershipClient> membership;
  std::uint32_t worker_id = 0;
  RunConfig config;
  std::optional<plugin::Registry> registry;  // before graph: the graph's operators come from its plugins
  workflow::Graph graph;
  std::map<std::string, std::string> unavailable;

  // The node's outputs: memory, or an HDF5 file with --store (before server,
  // which reads it).
  std::unique_ptr<store::NodeItemStore> store;
  std::filesystem::path store_file;  // removed when the node ends
  std::unique_ptr<transport::ItemServer> server;
  std::string data_endpoint;

  std::atomic<std::uint64_t> tasks_run{0}, tasks_failed{0}, tasks_stolen{0}, items_fetched{0}, bytes_fetched{0},
      items_released{0}, release_unknown{0}, rejected{0};
  std::atomic<bool> stopping{false};

  // Completions from TaskHost workers and fetchers; before host, whose
  // destructor may still complete running tasks.
  Wakeup wake;
  std::mutex done_m;
  std::vector<Completion> done;

  std::unique_ptr<runtime::TaskHost> host;
  // TaskHost::submit does not promise to be safe from several threads at
  // once; fetchers take turns (a submit only queues the task).
  std::mutex submit_m;
  std::optional<WorkerQueue> queue;  // socket thread only

  zmq::context_t ctx{1};
  zmq::socket_t socket;  // the task channel; the socket thread's only
  std::uint64_t seq = 0;
  std::deque<wire::OutMessage> outbox;  // encoded, waiting for room in the socket
  zio::RateLimitedLog reject_log;
  bool ran = false;

  std::unique_ptr<FetchPool> pool;  // last: its threads use everything above

  Impl(WorkerNodeOptions o, Logger& l) : options(std::move(o)), log(l) {
    netlog = [this](LogLevel level, std::string_view m) { log.log(level, m); };
    name = options.name.empty() ? default_name() : options.name;
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

  ~Impl() {
    stopping = true;
    // Fetchers first (they submit to the host), then the host (its running
    // operators finish; their completions are not reported any more).
    pool.reset();
    host.reset();
    // The item server reads the store: both go before the file.
    server.reset();
    store.reset();
    if (!store_file.empty()) {
      std::error_code ec;
      std::filesystem::remove(store_file, ec);
    }
  }

  void join() {
    if (!options.make_registry) throw Error("WorkerNodeOptions::make_registry is required");
    if (options.cpus < 0) throw Error("cpus must be at least 0");
    if (options.lookahead < -1) throw Error("lookahead must be -1 (as many as slots) or more");

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
    for (const auto& p : config.plugin_path) extra.emplace_back(p);
    for (const auto& p : wf.plugin_path) {
      std::error_code ec;
      if (std::filesystem::exists(p, ec) && std::find(extra.begin(), extra.end(), p) == extra.end()) extra.push_back(p);
    }
    registry.emplace(options.make_registry(extra));
    auto opened = workflow::open_map_stages(wf, *registry);
    graph = std::move(opened.graph);
    unavailable = std::move(opened.unavailable);
    for (const auto& [stage, why] : unavailable) log.warn("worker " + std::to_string(worker_id) + ": cannot run stage '" + stage + "': " + why);

    runtime::RunOptions ro;
    ro.cpu_workers = options.cpus;
    ro.gpus = options.gpus;
    ro.model = options.model;
    // Node defaults from the run ({"scheduler", "locality", "prefetch"});
    // anything of another type is ignored rather than failing the join.
    if (const auto it = config.run.find("scheduler"); it != config.run.end() && it->is_string()) ro.scheduler = it->get<std::string>();
    if (const auto it = config.run.find("locality"); it != config.run.end() && it->is_boolean()) ro.locality = it->get<bool>();
    if (const auto it = config.run.find("prefetch"); it != config.run.end() && it->is_boolean()) ro.prefetch = it->get<bool>();
    host = std::make_unique<runtime::TaskHost>(graph, std::move(ro), log);
    const auto slots = static_cast<std::size_t>(std::max(1, host->slots()));
    std::uint32_t gpu_slots = 0;
    for (const auto& w : host->workers()) gpu_slots += w.kind != sched::WorkerKind::cpu;
    const std::size_t lookahead = options.lookahead < 0 ? slots : static_cast<std::size_t>(options.lookahead);
    queue.emplace(slots, lookahead);

    transport::ServerOptions so;
    so.endpoint = options.data_bind;
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
      for (const char ch : name) stem += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ? ch : '_';
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
    hello.cpu_slots = static_cast<std::uint32_t>(slots) - std::min<std::uint32_t>(gpu_slots, static_cast<std::uint32_t>(slots));
    hello.gpu_slots = gpu_slots;
    hello.info = reg.to_json();
    if (!post(hello)) throw Error("cannot encode the task-channel hello");
    flush();

    transport::ClientOptions co;
    co.curve = options.curve;
    co.log = netlog;
    pool = std::make_unique<FetchPool>(slots, co, [this](transport::ItemClient& c, QueuedTask t) { fetch_and_submit(c, std::move(t)); });

    log.info("worker " + std::to_string(worker_id) + " (" + name + ") joined the coordinator at " + options.coordinator + ": " +
             std::to_string(graph.stages.size()) + " stage(s) open, " + std::to_string(slots) + " slot(s), lookahead " +
             std::to_string(lookahead) + ", items served at " + data_endpoint);
  }

  // ---- socket thread ----

  std::string who() const { return "worker " + std::to_string(worker_id) + " (" + name + ")"; }

  // Encodes and queues a message for the coordinator; false when it cannot
  // be encoded (the caller decides what that means).
  bool post(const wire::Body& body) {
    auto msg = wire::encode(++seq, body, limits);
    if (!msg) {
      log.error(who() + ": cannot encode " + std::string(wire::to_string(wire::type_of(body))) + ": " + msg.error().describe());
      return false;
    }
    outbox.push_back(std::move(*msg));
    return true;
  }

  // Sends what the socket takes now; the rest waits for the next turn.
  void flush() {
    while (!outbox.empty()) {
      if (zio::send(socket, {}, outbox.front(), true) != zio::SendResult::sent) return;
      outbox.pop_front();
    }
  }

  void reject(const std::string& line) {
    ++rejected;
    reject_log(netlog, who() + ": " + line);
  }

  void fail(std::uint64_t task_id, bool retryable, const std::string& message) {
    ++tasks_failed;
    log.warn(who() + ": " + message + (retryable ? " (retryable)" : ""));
    wire::TaskFailed f{task_id, retryable, message};
    if (!post(f)) {
      // Only an over-long message can break the limits: send it cut.
      f.message = message.substr(0, std::min<std::size_t>(message.size(), limits.max_string_bytes / 2)) + "...";
      (void)post(f);
    }
  }

  // Checks an assignment against the graph and the spec; "" when usable.
  std::string check(const wire::AssignTask& a, const TaskSpec& spec, bool& retryable) const {
    retryable = false;
    const auto* stage = graph.find(a.stage);
    if (!stage) {
      if (const auto it = unavailable.find(a.stage); it != unavailable.end()) {
        retryable = true;  // another node may be able to
        return "this node cannot run stage '" + a.stage + "': " + it->second;
      }
      return "stage '" + a.stage + "' is not a map stage of the run";
    }
    if (spec.ports.size() != a.inputs.size())
      return "the spec names " + std::to_string(spec.ports.size()) + " port(s) for " + std::to_string(a.inputs.size()) + " input(s)";
    const std::size_t ports = stage->spec().inputs.size();
    std::vector<bool> seen(ports, false);
    for (std::size_t i = 0; i < a.inputs.size(); ++i) {
      const auto p = spec.ports[i];
      if (p >= ports) return "input " + std::to_string(i) + " goes to port " + std::to_string(p) + ", but stage '" + a.stage + "' has " + std::to_string(ports) + " input port(s)";
      if (seen[p]) return "two inputs go to port " + std::to_string(p);
      seen[p] = true;
      const auto holder = a.inputs[i].holder;
      if (holder != worker_id && !spec.peers.contains(holder))
        return "no address for holder " + std::to_string(holder) + " of input " + wire::describe(a.inputs[i].id);
    }
    return {};
  }

  void on_assign(const wire::AssignTask& a) {
    if (stopping) return;
    if (queue->holds(a.task_id)) {
      reject("ignored a second assign_task for task " + std::to_string(a.task_id) + ", which this node holds");
      return;
    }
    const std::string what = "task " + std::to_string(a.task_id) + " of stage '" + a.stage + "'";
    TaskSpec spec;
    try {
      spec = TaskSpec::from_json(a.spec);
    } catch (const std::exception& e) {
      queue->note_assignment();
      fail(a.task_id, false, what + ": malformed assignment: " + e.what());
      return;
    }
    bool retryable = false;
    if (const auto why = check(a, spec, retryable); !why.empty()) {
      queue->note_assignment();
      fail(a.task_id, retryable, what + (retryable ? ": " : ": malformed assignment: ") + why);
      return;
    }
    queue->add(QueuedTask{a.task_id, a.stage, a.inputs, std::move(spec)});
  }

  void on_steal(const wire::StealRequest& s) {
    // While stopping nothing waits: the reply is empty.
    auto ids = queue->steal(s.max_tasks);
    tasks_stolen += ids.size();
    if (!ids.empty())
      log.debug(who() + ": gave " + std::to_string(ids.size()) + " unstarted task(s) up for worker " + std::to_string(s.for_worker));
    (void)post(wire::StealReply{std::move(ids)});
  }

  void on_release(const wire::ReleaseItems& r) {
    for (const auto& id : r.ids) {
      if (store->erase(id)) ++items_released;
      else ++release_unknown;  // released twice, or never made here: nothing to do
    }
  }

  enum class Handled { ok, bye };

  Handled handle(std::vector<zmq::message_t>& frames) {
    const auto v = zio::views(frames, 0);
    const auto m = wire::decode(v, limits);
    if (!m) {
      reject("dropped a message from the coordinator at " + config.task_endpoint + ": " + m.error().describe());
      return Handled::ok;
    }
    if (const auto* a = std::get_if<wire::AssignTask>(&m->body)) on_assign(*a);
    else if (const auto* s = std::get_if<wire::StealRequest>(&m->body)) on_steal(*s);
    else if (const auto* r = std::get_if<wire::ReleaseItems>(&m->body)) on_release(*r);
    else if (const auto* b = std::get_if<wire::Bye>(&m->body)) {
      log.info(who() + ": the coordinator at " + options.coordinator + " said bye" + (b->reason.empty() ? "" : ": " + b->reason));
      return Handled::bye;
    } else
      reject("ignored an unexpected " + std::string(wire::to_string(m->header.type)) + " on the task channel");
    return Handled::ok;
  }

  void report(Completion c) {
    if (!queue->finish(c.task_id)) return;  // reported already (shutting down)
    if (!c.ok) {
      fail(c.task_id, c.retryable, c.message);
      return;
    }
    wire::TaskDone d{c.task_id, c.seconds, c.outputs};
    if (auto msg = wire::encode(++seq, d, limits)) {
      outbox.push_back(std::move(*msg));
      ++tasks_run;
    } else {
      // E.g. attrs beyond the wire's limits: the outputs cannot be
      // described, so they are useless here.
      for (const auto& o : c.outputs) store->erase(o.ref.id);
      fail(c.task_id, false, "task " + std::to_string(c.task_id) + ": its outputs cannot be sent: " + msg.error().describe());
    }
  }

  void drain_completions() {
    std::vector<Completion> batch;
    {
      std::lock_guard lock(done_m);
      batch.swap(done);
    }
    for (auto& c : batch) report(std::move(c));
  }

  void start_tasks() {
    while (auto t = queue->start_next()) pool->push(std::move(*t));
  }

  void ask_for_work() {
    if (const auto n = queue->take_demand(); n > 0) (void)post(wire::RequestWork{n, 0});
  }

  int serve() {
    using namespace std::chrono_literals;
    while (true) {
      try {
        if (options.interrupt && options.interrupt->load()) {
          leave_interrupted();
          return 130;
        }
        if (auto ev = membership->poll_event(0ms)) {
          if (ev->kind == membership::CoordinatorEventKind::lost) {
            log.error(who() + ": lost the coordinator at " + options.coordinator + ": " + ev->reason);
            return 3;
          }
          log.info(who() + ": the coordinator at " + options.coordinator + " left" + (ev->reason.empty() ? "" : ": " + ev->reason));
          return 0;
        }
        drain_completions();
        start_tasks();
        ask_for_work();
        membership->set_load(static_cast<std::uint32_t>(queue->started()), static_cast<std::uint32_t>(queue->waiting()));
        flush();

        zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, wake.fd(), ZMQ_POLLIN, 0}};
        zmq::poll(items, 2, outbox.empty() ? max_poll : std::chrono::milliseconds(5));
        for (auto frames = zio::receive(socket); !frames.empty(); frames = zio::receive(socket))
          if (handle(frames) == Handled::bye) return 0;
        wake.clear();
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        log.error(who() + ": task channel: " + e.what());
        return 3;
      } catch (const std::exception& e) {
        // A bug, not the peer's doing (its input is checked): keep serving.
        reject_log(netlog, who() + ": " + e.what());
      }
    }
  }

  // Interrupted: every task this node holds goes back to the coordinator
  // as a retryable failure, then bye.
  void leave_interrupted() {
    stopping = true;
    log.info(who() + ": interrupted, leaving the coordinator at " + options.coordinator);
    std::vector<std::uint64_t> ids = queue->drop_waiting();
    for (auto id : queue->started_ids()) {
      queue->finish(id);
      ids.push_back(id);
    }
    for (auto id : ids) fail(id, true, "task " + std::to_string(id) + ": " + who() + " is shutting down");
    (void)post(wire::Bye{"worker interrupted"});
    flush();
    socket.set(zmq::sockopt::linger, bye_linger_ms);
  }

  // ---- fetcher threads ----

  void complete(Completion c) {
    {
      std::lock_guard lock(done_m);
      done.push_back(std::move(c));
    }
    wake.signal();
  }

  void fetch_and_submit(transport::ItemClient& client, QueuedTask task) {
    const std::string what = "task " + std::to_string(task.task_id) + " of stage '" + task.stage + "'";
    try {
      const auto* stage = graph.find(task.stage);  // checked on assignment
      if (!stage) throw Error("stage '" + task.stage + "' is not open here");
      std::vector<std::optional<Item>> inputs(stage->spec().inputs.size());
      for (std::size_t i = 0; i < task.inputs.size(); ++i) {
        if (stopping) {
          complete({task.task_id, false, true, what + ": " + who() + " is shutting down", 0, {}});
          return;
        }
        const auto& ref = task.inputs[i];
        const auto port = task.spec.ports[i];
        try {
          if (ref.holder == worker_id) {
            const auto held = store->find(ref.id);
            if (!held) throw Error("it is no longer held here");
            inputs[port] = *held;
          } else {
            const auto& peer = task.spec.peers.at(ref.holder);
            const auto t0 = std::chrono::steady_clock::now();
            inputs[port] = client.fetch(transport::Peer{peer.endpoint, peer.public_key}, ref.id, options.fetch_timeout);
            const auto bytes = payload_bytes(*inputs[port]);
            if (options.emulate_link_mb_s > 0)
              std::this_thread::sleep_until(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                     std::chrono::duration<double>(static_cast<double>(bytes) /
                                                                                   (options.emulate_link_mb_s * 1e6))));
            ++items_fetched;
            bytes_fetched += bytes;
          }
        } catch (const std::exception& e) {
          const auto it = task.spec.peers.find(ref.holder);
          complete({task.task_id, false, true,
                    what + ": cannot pull input '" + stage->spec().inputs[port].name + "' (" + wire::describe(ref.id) +
                        ") from holder " + std::to_string(ref.holder) +
                        (it != task.spec.peers.end() ? " at " + it->second.endpoint : std::string()) + ": " + e.what(),
                    0,
                    {}});
          return;
        }
      }
      std::lock_guard lock(submit_m);  // done() may run inside submit: hosted() takes no lock of ours but done_m
      host->submit(task.stage, task.spec.key, std::move(inputs),
                   [this, id = task.task_id, key = task.spec.key, stage_name = task.stage](runtime::HostedResult r) {
                     hosted(id, key, stage_name, std::move(r));
                   });
    } catch (const std::exception& e) {
      complete({task.task_id, false, false, what + " on item '" + task.spec.key + "': " + e.what(), 0, {}});
    }
  }

  // ---- TaskHost worker threads ----

  // Stores the outputs before reporting them: the coordinator may hand
  // them to consumers as soon as task_done arrives.
  void hosted(std::uint64_t task_id, const std::string& key, const std::string& stage, runtime::HostedResult r) {
    Completion c;
    c.task_id = task_id;
    c.seconds = r.seconds;
    if (!r.ok) {
      c.message = "stage '" + stage + "' failed on item '" + (r.key.empty() ? key : r.key) + "': " + r.error;
      complete(std::move(c));
      return;
    }
    try {
      for (std::size_t i = 0; i < r.outputs.size(); ++i) {
        auto& [port, item] = r.outputs[i];
        wire::TaskOutput o;
        o.ref.id = output_id(key, task_id, static_cast<std::uint32_t>(i));
        o.ref.holder = worker_id;
        o.ref.bytes = payload_bytes(item);
        o.port = static_cast<std::uint32_t>(port);
        o.meta = item.meta;
        store->put(o.ref.id, std::make_shared<const Item>(std::move(item)));
        c.outputs.push_back(std::move(o));
      }
      c.ok = true;
    } catch (const std::exception& e) {
      for (const auto& o : c.outputs) store->erase(o.ref.id);
      c.outputs.clear();
      c.message = "stage '" + stage + "' on item '" + key + "': cannot keep its outputs: " + e.what();
    }
    complete(std::move(c));
  }

  // ---- after serving ----

  void shutdown() {
    stopping = true;
    queue->drop_waiting();
    pool.reset();
    host.reset();
    socket.close();
    membership.reset();  // says bye on the membership channel unless the coordinator is gone
  }
};

WorkerNode::WorkerNode(WorkerNodeOptions options, Logger& log) : impl_(std::make_unique<Impl>(std::move(options), log)) {}

WorkerNode::~WorkerNode() = default;

int WorkerNode::run() {
  if (impl_->ran) throw Error("WorkerNode::run() may be called once");
  impl_->ran = true;
  const int rc = impl_->serve();
  impl_->shutdown();
  return rc;
}

std::uint32_t WorkerNode::id() const { return impl_->worker_id; }

const std::string& WorkerNode::data_endpoint() const { return impl_->data_endpoint; }

WorkerNodeStats WorkerNode::stats() const {
  WorkerNodeStats s;
  s.tasks_run = impl_->tasks_run;
  s.tasks_failed = impl_->tasks_failed;
  s.tasks_stolen_from_me = impl_->tasks_stolen;
  s.items_fetched = impl_->items_fetched;
  s.bytes_fetched = impl_->bytes_fetched;
  s.items_served = impl_->server ? impl_->server->stats().transfers_completed : 0;
  s.items_released = impl_->items_released;
  s.release_unknown = impl_->release_unknown;
  s.messages_rejected = impl_->rejected;
  return s;
}

}  // namespace flowd::net::node

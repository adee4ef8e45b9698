// A worker node (net/node/worker_node.hpp) against a scripted coordinator
// built from real pieces: a MembershipServer, a ROUTER for the task channel
// and an ItemServer holding inputs as holder 0. The node runs on a thread
// of its own; the test plays the coordinator's side of docs/cluster.md
// "Runtime protocol" message by message.
//
// Every wait has a timeout, so a lost message fails a test, never hangs
// it; nothing asserts on wall time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "net/membership/membership.hpp"
#include "net/node/protocol.hpp"
#include "net/node/worker_node.hpp"
#include "net/node/worker_queue.hpp"
#include "net/security/curve.hpp"
#include "net/transport/client.hpp"
#include "net/transport/server.hpp"
#include "store/item_store.hpp"
#include "wire/wire.hpp"
#include "net/zio/zio.hpp"
#include "support/helpers.hpp"

using namespace flowd;
using namespace std::chrono_literals;
namespace node = flowd::net::node;
namespace wire = flowd::wire;
namespace zio = flowd::net::zio;
namespace transport = flowd::net::transport;
namespace ms = flowd::net::membership;
namespace sec = flowd::net::security;

namespace {

// ---------------------------------------------------------------- queue

node::QueuedTask task(std::uint64_t id) { return node::QueuedTask{id, "s", {}, {}}; }

TEST(WorkerQueue, AsksOnlyForRoomNotAskedFor) {
  node::WorkerQueue q(2, 1);
  EXPECT_EQ(q.take_demand(), 3u);
  EXPECT_EQ(q.take_demand(), 0u) << "the same room asked for twice";
  EXPECT_TRUE(q.add(task(1)));
  EXPECT_EQ(q.demand(), 0u) << "an assignment fills asked-for room, it frees none";
  ASSERT_TRUE(q.start_next());
  EXPECT_TRUE(q.finish(1));
  EXPECT_EQ(q.take_demand(), 1u);
  EXPECT_EQ(q.asked(), 3u);  // 2 still asked from the first request, 1 from the second
}

TEST(WorkerQueue, StartsAtMostSlotsOldestFirst) {
  node::WorkerQueue q(2, 2);
  for (std::uint64_t i = 1; i <= 4; ++i) EXPECT_TRUE(q.add(task(i)));
  EXPECT_FALSE(q.add(task(2))) << "duplicate task id accepted";
  EXPECT_EQ(q.start_next()->task_id, 1u);
  EXPECT_EQ(q.start_next()->task_id, 2u);
  EXPECT_FALSE(q.start_next()) << "more started than slots";
  EXPECT_TRUE(q.finish(1));
  EXPECT_FALSE(q.finish(1));
  EXPECT_EQ(q.start_next()->task_id, 3u);
}

TEST(WorkerQueue, PullsAheadForTheNextTasksWhileEverySlotIsBusy) {
  // One slot, three held beyond it, one of them started early so that its
  // inputs arrive while the slot works.
  node::WorkerQueue q(1, 3, 1);
  for (std::uint64_t i = 1; i <= 4; ++i) q.add(task(i));
  EXPECT_EQ(q.start_next()->task_id, 1u);
  EXPECT_EQ(q.start_next()->task_id, 2u) << "the next task's inputs are not pulled ahead";
  EXPECT_FALSE(q.start_next()) << "more pulled ahead than asked";
  EXPECT_EQ(q.started(), 2u);
  // A task pulled ahead is started: never stolen.
  EXPECT_EQ(q.steal(10), (std::vector<std::uint64_t>{4, 3}));
  EXPECT_TRUE(q.finish(1));
  EXPECT_FALSE(q.start_next()) << "nothing waits";
  EXPECT_EQ(q.demand(), 3u);
  // Without pull-ahead, only the slots start.
  node::WorkerQueue plain(1, 3);
  for (std::uint64_t i = 1; i <= 3; ++i) plain.add(task(i));
  EXPECT_EQ(plain.start_next()->task_id, 1u);
  EXPECT_FALSE(plain.start_next());
}

TEST(WorkerQueue, StealTakesNewestUnstarted) {
  node::WorkerQueue q(1, 3);
  for (std::uint64_t i = 1; i <= 4; ++i) q.add(task(i));
  ASSERT_EQ(q.start_next()->task_id, 1u);
  EXPECT_EQ(q.steal(2), (std::vector<std::uint64_t>{4, 3}));
  EXPECT_EQ(q.steal(10), (std::vector<std::uint64_t>{2}));
  EXPECT_TRUE(q.steal(10).empty()) << "a started task was stolen";
  EXPECT_TRUE(q.holds(1));
  EXPECT_FALSE(q.holds(2));
  EXPECT_EQ(q.demand(), 3u) << "stolen room is free again";
  EXPECT_TRUE(q.add(task(2))) << "a stolen id may come back";
}

TEST(WorkerQueue, ATaskStolenOnceIsNeverGivenUpAgain) {
  node::WorkerQueue q(1, 4);
  for (std::uint64_t i = 1; i <= 5; ++i) {
    auto t = task(i);
    t.spec.stealable = i != 5 && i != 3;  // 3 and 5 came here by a steal
    q.add(std::move(t));
  }
  ASSERT_EQ(q.start_next()->task_id, 1u);
  EXPECT_EQ(q.steal(2), (std::vector<std::uint64_t>{4, 2})) << "newest stealable first, stolen ones skipped";
  EXPECT_TRUE(q.steal(10).empty());
  EXPECT_TRUE(q.holds(3));
  EXPECT_TRUE(q.holds(5));
  // Shutting down drops every waiting task, stealable or not.
  EXPECT_EQ(q.drop_waiting(), (std::vector<std::uint64_t>{5, 3}));
  EXPECT_EQ(q.waiting(), 0u);
  EXPECT_FALSE(q.holds(5));
}

TEST(TaskSpec, StealableIsWrittenOnlyWhenFalseAndReadBack) {
  node::TaskSpec s;
  s.key = "k";
  EXPECT_FALSE(s.to_json().contains("stealable")) << "older workers' specs stay as they were";
  EXPECT_TRUE(node::TaskSpec::from_json(s.to_json()).stealable);
  s.stealable = false;
  EXPECT_FALSE(node::TaskSpec::from_json(s.to_json()).stealable);
  auto bad = s.to_json();
  bad["stealable"] = "no";
  EXPECT_THROW(node::TaskSpec::from_json(bad), Error);
}

TEST(WorkerQueue, UnaskedAssignmentsAreKeptAndDemandNeverGoesNegative) {
  node::WorkerQueue q(1, 0);
  EXPECT_TRUE(q.add(task(1)));
  EXPECT_TRUE(q.add(task(2)));
  EXPECT_EQ(q.demand(), 0u);
  q.note_assignment();  // a refused assignment with nothing asked: no effect
  EXPECT_EQ(q.asked(), 0u);
  EXPECT_THROW(node::WorkerQueue(0, 1), Error);
}

// ---------------------------------------------------------------- scripted coordinator

constexpr auto wait = 10s;  // for a message that must come

std::string workflow_json() {
  return R"({"version": 1, "stages": {
    "src":    {"op": "test.count", "params": {"count": 4}},
    "double": {"op": "test.double", "inputs": {"in": "src.out"}},
    "step":   {"op": "test.step", "inputs": {"in": "src.out"}, "params": {"fail_key": "bad", "copies": 2}},
    "pair":   {"op": "test.pair", "inputs": {"a": "src.out", "b": "double.out"}},
    "ghost":  {"op": "nosuch.op", "inputs": {"in": "src.out"}}
  }})";
}

Item json_item(const std::string& key, std::int64_t i) {
  Item it;
  it.meta.key = key;
  it.meta.version = 2;
  it.meta.attrs["i"] = i;
  it.value = Json{{"i", i}};
  return it;
}

struct Got {
  std::string rid;
  wire::MessageType type{};
  wire::Body body;
};

std::string type_name(const Got& g) { return std::string(wire::to_string(g.type)); }

// A log file the node's Logger writes; read back whole.
struct LogFile {
  std::filesystem::path path;
  std::FILE* f;
  Logger log;
  explicit LogFile(std::filesystem::path p)
      : path(std::move(p)), f(std::fopen(path.c_str(), "w")), log(f, false, LogLevel::debug) {}
  ~LogFile() { std::fclose(f); }
  std::string text() const { return test::slurp(path); }
};

// With CURVE: the coordinator's key pair and the one worker key it accepts.
struct CurveSetup {
  sec::KeyPair coordinator = sec::generate_keypair();
  sec::KeyPair worker = sec::generate_keypair();
  sec::AuthorisedKeys workers() const {
    sec::AuthorisedKeys k;
    k.add(worker.public_key, "worker");
    return k;
  }
};

class FakeCoordinator {
public:
  explicit FakeCoordinator(std::optional<CurveSetup> keys = std::nullopt) : curve(std::move(keys)) {
    task = zmq::socket_t(ctx, zmq::socket_type::router);
    task.set(zmq::sockopt::linger, 0);
    transport::ServerOptions ho;
    if (curve) {
      zap = std::make_unique<sec::ZapHandler>(ctx, curve->workers(), sec::SecurityLog([](LogLevel, std::string_view) {}));
      sec::configure_curve_server(task, *zap, curve->coordinator);
      ho.curve = transport::CurveServerKeys{curve->coordinator, curve->workers()};
    }
    task_endpoint = sec::secure_bind(task, "tcp://127.0.0.1:*");
    holder = std::make_unique<transport::ItemServer>(inputs, std::move(ho));

    node::RunConfig c;
    c.workflow = Json::parse(workflow_json());
    c.workflow_name = "test.json";
    c.base_dir = test::scratch().string();
    c.task_endpoint = task_endpoint;
    c.data_endpoint = holder->endpoint();
    if (curve) {
      c.server_public_key = curve->coordinator.public_key;
      c.peer_public_keys = {curve->coordinator.public_key, curve->worker.public_key};
    }
    config = c.to_json();

    ms::ServerOptions so;
    so.heartbeat_period = 100ms;
    so.missed_heartbeats = 10;
    so.config = config;
    if (curve) so.curve = ms::CurveServerKeys{curve->coordinator, curve->workers()};
    membership = std::make_unique<ms::MembershipServer>(std::move(so));
  }

  std::optional<Got> next(std::chrono::milliseconds timeout = wait) {
    zmq::pollitem_t item{task.handle(), 0, ZMQ_POLLIN, 0};
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      zmq::poll(&item, 1, 20ms);
      auto frames = zio::receive(task);
      if (frames.empty()) continue;
      if (frames.size() < 2) throw std::runtime_error("a message without a header frame on the task channel");
      const auto v = zio::views(frames, 1);
      auto m = wire::decode(v);
      if (!m) throw std::runtime_error("the worker sent an undecodable message: " + m.error().describe());
      Got g{frames[0].to_string(), m->header.type, m->body};
      rid = g.rid;
      return g;
    }
    return std::nullopt;
  }

  template <class T> T expect(std::chrono::milliseconds timeout = wait) {
    auto g = next(timeout);
    if (!g) throw std::runtime_error("no message from the worker");
    if (!std::holds_alternative<T>(g->body)) throw std::runtime_error("unexpected message from the worker: " + type_name(*g));
    return std::get<T>(g->body);
  }

  // The next message of type T, passing over the node's requests for work.
  template <class T> T expect_past_requests(std::chrono::milliseconds timeout = wait) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      auto g = next(std::max(left, 1ms));
      if (!g) throw std::runtime_error("no message from the worker");
      if (std::holds_alternative<wire::RequestWork>(g->body)) continue;
      if (!std::holds_alternative<T>(g->body)) throw std::runtime_error("unexpected message from the worker: " + type_name(*g));
      return std::get<T>(g->body);
    }
  }

  void send(const wire::Body& body) {
    auto m = wire::encode(++seq, body);
    if (!m) throw std::runtime_error("test cannot encode: " + m.error().describe());
    if (zio::send(task, rid, *m, false) != zio::SendResult::sent) throw std::runtime_error("test cannot send");
  }
  void send_raw(std::vector<std::string> frames) {
    task.send(zmq::buffer(rid), zmq::send_flags::sndmore);
    for (std::size_t i = 0; i < frames.size(); ++i)
      task.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }

  // An assign_task of `stage` on `inputs` (all held by holder 0 unless
  // given), for ports 0.. in order unless given.
  void assign(std::uint64_t id, const std::string& stage, const std::string& key, std::vector<wire::ItemRef> refs,
              std::vector<std::uint32_t> ports = {}, std::map<std::uint32_t, node::PeerAddress> peers = {}) {
    node::TaskSpec spec;
    spec.key = key;
    if (ports.empty())
      for (std::uint32_t i = 0; i < refs.size(); ++i) ports.push_back(i);
    spec.ports = ports;
    spec.peers = peers.empty() ? std::map<std::uint32_t, node::PeerAddress>{{0, {holder->endpoint(), ""}}} : peers;
    send(wire::AssignTask{id, stage, refs, spec.to_json()});
  }

  wire::ItemRef hold(const Item& item) {
    inputs.put(item);
    return wire::ItemRef{wire::id_of(item.meta), 0, 0};
  }

  std::optional<CurveSetup> curve;
  zmq::context_t ctx{1};
  std::unique_ptr<sec::ZapHandler> zap;  // after the context, before the socket it guards
  zmq::socket_t task;
  std::string task_endpoint;
  store::MemoryItemStore inputs;
  std::unique_ptr<transport::ItemServer> holder;
  Json config;
  std::unique_ptr<ms::MembershipServer> membership;
  std::string rid;  // the worker's routing id, from its first message
  std::uint64_t seq = 0;
};

node::WorkerNodeOptions options(const std::string& coordinator, int cpus = 1, int lookahead = -1) {
  node::WorkerNodeOptions o;
  o.coordinator = coordinator;
  o.name = "test-node";
  o.cpus = cpus;
  o.lookahead = lookahead;
  o.labels = {{"site", "a"}};
  o.make_registry = [](const std::vector<std::filesystem::path>&) { return test::default_registry(); };
  o.welcome_timeout = 5s;
  o.fetch_timeout = 5s;
  return o;
}

// The node with run() on a thread.
struct Running {
  std::unique_ptr<node::WorkerNode> node;
  std::atomic<int> rc{-1};
  std::thread thread;
  Running(node::WorkerNodeOptions o, Logger& log) : node(std::make_unique<node::WorkerNode>(std::move(o), log)) {
    thread = std::thread([this] { rc = node->run(); });
  }
  ~Running() {
    if (thread.joinable()) thread.join();
  }
  // run()'s result, or -1 when it has not returned within `timeout`.
  int result(std::chrono::milliseconds timeout = wait) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (rc.load() == -1 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(10ms);
    return rc.load();
  }
};

// A registered node and its first request_work.
struct Session {
  FakeCoordinator coord;
  LogFile log{test::scratch() / "worker.log"};
  std::unique_ptr<Running> run;
  wire::Hello hello;
  std::uint32_t first_request = 0;

  explicit Session(int cpus = 1, int lookahead = -1, std::function<void(node::WorkerNodeOptions&)> tweak = {},
                   std::optional<CurveSetup> curve = std::nullopt)
      : coord(curve) {
    auto o = options(coord.membership->endpoint(), cpus, lookahead);
    if (curve) o.curve = sec::ClientCredentials{curve->coordinator.public_key, curve->worker};
    if (tweak) tweak(o);
    run = std::make_unique<Running>(std::move(o), log.log);
    hello = coord.expect<wire::Hello>();
    first_request = coord.expect<wire::RequestWork>().cpu_slots;
  }
  ~Session() {
    if (run->rc.load() == -1) {
      try {
        coord.send(wire::Bye{"test over"});
      } catch (const std::exception&) {
      }
    }
    run.reset();
  }
  node::WorkerNode& node() { return *run->node; }
};

Item fetch_from(const std::string& endpoint, const wire::ItemId& id) {
  transport::ItemClient c;
  return c.fetch(endpoint, id, 5s);
}

template <class Pred> bool eventually(Pred p, std::chrono::milliseconds timeout = wait) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (p()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return p();
}

// ---------------------------------------------------------------- tests

TEST(WorkerNode, RegistersWithItsStagesAndSlots) {
  Session s(2, 1);
  EXPECT_EQ(s.hello.name, "test-node");
  EXPECT_EQ(s.hello.data_endpoint, s.node().data_endpoint());
  EXPECT_EQ(s.hello.cpu_slots, 2u);
  EXPECT_EQ(s.hello.gpu_slots, 0u);
  const auto reg = node::Registration::from_json(s.hello.info);
  EXPECT_EQ(reg.worker_id, s.node().id());
  EXPECT_NE(reg.worker_id, 0u);
  EXPECT_EQ(reg.server_public_key, "");
  EXPECT_EQ(reg.labels, (Json{{"site", "a"}}));
  ASSERT_EQ(reg.unavailable.size(), 1u) << s.hello.info.dump();
  ASSERT_TRUE(reg.unavailable.contains("ghost"));
  EXPECT_NE(reg.unavailable.at("ghost").find("nosuch.op"), std::string::npos) << reg.unavailable.at("ghost");
  EXPECT_NE(s.log.text().find("cannot run stage 'ghost'"), std::string::npos) << s.log.text();
  EXPECT_EQ(s.first_request, 3u) << "slots (2) + lookahead (1)";
  // The membership side knows the node under the same id and name.
  const auto members = s.coord.membership->workers();
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members[0].id, reg.worker_id);
  EXPECT_EQ(members[0].name, "test-node");
}

TEST(WorkerNode, RunsATaskAndServesItsOutputs) {
  Session s;
  const auto a = s.coord.hold(json_item("k/1", 3));
  s.coord.assign(11, "double", "k/1", {a});
  const auto done = s.coord.expect<wire::TaskDone>();
  EXPECT_EQ(done.task_id, 11u);
  ASSERT_EQ(done.outputs.size(), 1u);
  const auto& o = done.outputs[0];
  EXPECT_EQ(o.ref.id, node::output_id("k/1", 11, 0));
  EXPECT_EQ(o.ref.holder, s.node().id());
  EXPECT_EQ(o.port, 0u);
  EXPECT_EQ(o.meta.key, "k/1");
  EXPECT_EQ(o.meta.version, 2);
  const auto item = fetch_from(s.hello.data_endpoint, o.ref.id);
  EXPECT_EQ(item.json(), (Json{{"i", 6}}));
  EXPECT_EQ(o.ref.bytes, item.json().dump().size());
  // The value travels with the metadata it was made with, not its store name.
  EXPECT_EQ(item.meta.key, o.meta.key);
  EXPECT_EQ(item.meta.version, o.meta.version);
  EXPECT_EQ(item.meta.attrs, o.meta.attrs);
  EXPECT_EQ(s.coord.expect<wire::RequestWork>().cpu_slots, 1u) << "the finished task's slot";
  EXPECT_EQ(s.node().stats().tasks_run, 1u);
  EXPECT_EQ(s.node().stats().items_fetched, 1u);
}

TEST(WorkerNode, OutputsKeepEmissionOrderAndInputsGoByPort) {
  Session s;
  // step emits two copies: their order is the emission order.
  const auto x = s.coord.hold(json_item("x", 1));
  s.coord.assign(1, "step", "x", {x});
  auto done = s.coord.expect<wire::TaskDone>();
  ASSERT_EQ(done.outputs.size(), 2u);
  EXPECT_EQ(done.outputs[0].meta.key, "x/copy0");
  EXPECT_EQ(done.outputs[1].meta.key, "x/copy1");
  EXPECT_EQ(done.outputs[1].ref.id, node::output_id("x", 1, 1));
  EXPECT_EQ(fetch_from(s.hello.data_endpoint, done.outputs[1].ref.id).meta.key, "x/copy1");
  (void)s.coord.expect<wire::RequestWork>();

  // pair: inputs[0] goes to port 1 (b), inputs[1] to port 0 (a); one
  // input is the node's own output of the first task.
  const auto a = s.coord.hold(json_item("p", 5));
  const wire::ItemRef own = done.outputs[0].ref;
  s.coord.assign(2, "pair", "p", {own, a}, {1, 0},
                 {{0, {s.coord.holder->endpoint(), ""}}});
  done = s.coord.expect<wire::TaskDone>();
  ASSERT_EQ(done.outputs.size(), 1u);
  const auto item = fetch_from(s.hello.data_endpoint, done.outputs[0].ref.id);
  EXPECT_EQ(item.json(), (Json{{"a", 5}, {"b", 1}, {"c", false}}));
  EXPECT_EQ(s.node().stats().items_fetched, 2u) << "its own output is taken from its store, not fetched";
}

TEST(WorkerNode, FetchFailureIsRetryableAndNamesHolderAndItem) {
  Session s;
  const wire::ItemRef missing{wire::ItemId{"gone/1", 0, 0}, 0, 10};
  s.coord.assign(5, "double", "gone/1", {missing});
  const auto f = s.coord.expect<wire::TaskFailed>();
  EXPECT_EQ(f.task_id, 5u);
  EXPECT_TRUE(f.retryable);
  EXPECT_NE(f.message.find("holder 0"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("gone/1"), std::string::npos) << f.message;
  EXPECT_EQ(s.coord.expect<wire::RequestWork>().cpu_slots, 1u);
  EXPECT_EQ(s.node().stats().tasks_failed, 1u);
}

TEST(WorkerNode, OperatorFailureIsNotRetryable) {
  Session s;
  const auto bad = s.coord.hold(json_item("bad", 1));
  s.coord.assign(6, "step", "bad", {bad});
  const auto f = s.coord.expect<wire::TaskFailed>();
  EXPECT_EQ(f.task_id, 6u);
  EXPECT_FALSE(f.retryable);
  EXPECT_NE(f.message.find("asked to fail on bad"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("step"), std::string::npos) << f.message;
}

TEST(WorkerNode, MalformedAssignmentsFailWithTheReason) {
  Session s;
  s.coord.send(wire::AssignTask{7, "double", {}, Json{{"nope", 1}}});
  auto f = s.coord.expect<wire::TaskFailed>();
  EXPECT_EQ(f.task_id, 7u);
  EXPECT_FALSE(f.retryable);
  EXPECT_NE(f.message.find("malformed"), std::string::npos) << f.message;
  EXPECT_EQ(s.coord.expect<wire::RequestWork>().cpu_slots, 1u) << "a refused assignment's room is asked for again";

  const auto a = s.coord.hold(json_item("a", 1));
  s.coord.assign(8, "double", "a", {a}, {4});  // double has one port
  f = s.coord.expect<wire::TaskFailed>();
  EXPECT_FALSE(f.retryable);
  EXPECT_NE(f.message.find("port 4"), std::string::npos) << f.message;
  (void)s.coord.expect<wire::RequestWork>();

  s.coord.assign(9, "ghost", "a", {a});  // unavailable here; maybe not elsewhere
  f = s.coord.expect<wire::TaskFailed>();
  EXPECT_TRUE(f.retryable);
  EXPECT_NE(f.message.find("cannot run stage 'ghost'"), std::string::npos) << f.message;
  (void)s.coord.expect<wire::RequestWork>();

  s.coord.assign(10, "double", "a", {wire::ItemRef{wire::id_of(json_item("a", 1).meta), 42, 0}});  // no address for 42
  f = s.coord.expect<wire::TaskFailed>();
  EXPECT_NE(f.message.find("holder 42"), std::string::npos) << f.message;
}

TEST(WorkerNode, DemandNeverExceedsSlotsPlusLookahead) {
  Session s(2, 1);
  constexpr std::uint64_t total = 12;
  const std::int64_t capacity = 3;
  ASSERT_EQ(s.first_request, 3u);
  std::int64_t asked = s.first_request;  // asked for and not assigned
  std::int64_t held = 0;                 // assigned and not ended
  std::uint64_t assigned = 0, ended = 0;
  // Assign one task per turn only, so that requests and completions
  // interleave; each time check what the node has asked for plus what it
  // holds against its capacity.
  while (ended < total) {
    if (asked > 0 && assigned < total) {
      const auto key = "d/" + std::to_string(assigned);
      const auto ref = s.coord.hold(json_item(key, static_cast<std::int64_t>(assigned)));
      s.coord.assign(100 + assigned, "double", key, {ref});
      ++assigned;
      --asked;
      ++held;
    }
    auto g = s.coord.next(asked > 0 && assigned < total ? 50ms : wait);
    if (!g) {
      ASSERT_TRUE(asked > 0 && assigned < total) << "the node went quiet with " << held << " task(s) held";
      continue;
    }
    if (const auto* r = std::get_if<wire::RequestWork>(&g->body)) {
      EXPECT_GT(r->cpu_slots, 0u);
      asked += r->cpu_slots;
    } else if (std::holds_alternative<wire::TaskDone>(g->body)) {
      --held;
      ++ended;
    } else {
      FAIL() << "unexpected " << type_name(*g);
    }
    ASSERT_LE(asked + held, capacity) << "asked " << asked << " holding " << held;
  }
  EXPECT_EQ(s.node().stats().tasks_run, total);
}

// An item server that never answers: a task pulling from it stays started,
// fetching, until its pull times out.
struct SilentHolder {
  zmq::context_t ctx;
  zmq::socket_t socket{ctx, zmq::socket_type::router};
  std::string endpoint;
  SilentHolder() {
    socket.set(zmq::sockopt::linger, 0);
    socket.bind("tcp://127.0.0.1:*");
    endpoint = socket.get(zmq::sockopt::last_endpoint);
  }
  // Whether a pull reached it within the tests' wait.
  bool asked() {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    return zmq::poll(&item, 1, std::chrono::milliseconds(wait)) == 1;
  }
};

TEST(WorkerNode, StealGivesUpOnlyUnstartedTasksNewestFirst) {
  // Task 1's input is on a holder that never answers: it stays started
  // (fetching) while the test steals, whatever the machine's speed.
  SilentHolder silent;

  // No pulling ahead: tasks 2 and 3 both wait unstarted behind task 1 (with
  // it, task 2 would start, and run, while task 1 fetches).
  Session s(1, 2, [](node::WorkerNodeOptions& o) {
    o.fetch_timeout = 1s;
    o.pull_ahead = 0;
  });
  ASSERT_EQ(s.first_request, 3u);
  const auto a = s.coord.hold(json_item("a", 1));
  const std::map<std::uint32_t, node::PeerAddress> peers{{0, {s.coord.holder->endpoint(), ""}}, {7, {silent.endpoint, ""}}};
  s.coord.assign(1, "double", "s1", {wire::ItemRef{wire::ItemId{"far", 0, 0}, 7, 1}}, {}, peers);
  s.coord.assign(2, "double", "a", {a}, {}, peers);
  s.coord.assign(3, "double", "a", {a}, {}, peers);
  // Task 1 has started: its fetch reached the silent holder.
  ASSERT_TRUE(silent.asked()) << "task 1 was never started";

  s.coord.send(wire::StealRequest{5, 9});
  const auto reply = s.coord.expect<wire::StealReply>();
  EXPECT_EQ(reply.task_ids, (std::vector<std::uint64_t>{3, 2}));
  EXPECT_EQ(s.coord.expect<wire::RequestWork>().cpu_slots, 2u) << "the stolen tasks' room";
  EXPECT_EQ(s.node().stats().tasks_stolen_from_me, 2u);

  // Nothing left to steal; task 1 then fails its fetch (retryable).
  s.coord.send(wire::StealRequest{5, 9});
  EXPECT_TRUE(s.coord.expect<wire::StealReply>().task_ids.empty());
  const auto f = s.coord.expect<wire::TaskFailed>();
  EXPECT_EQ(f.task_id, 1u);
  EXPECT_TRUE(f.retryable);
  EXPECT_NE(f.message.find("holder 7"), std::string::npos) << f.message;
}

TEST(WorkerNode, PullsTheNextTasksInputsWhileItsSlotIsBusy) {
  // One slot, taken by task 1, whose input is on a holder that never
  // answers. Task 2 is pulled ahead (the default): its input arrives and it
  // runs and answers while task 1 still waits, instead of only after task
  // 1's pull gives up.
  SilentHolder silent;

  Session s(1, 2, [](node::WorkerNodeOptions& o) { o.fetch_timeout = 3s; });
  const auto a = s.coord.hold(json_item("a", 1));
  const std::map<std::uint32_t, node::PeerAddress> peers{{0, {s.coord.holder->endpoint(), ""}}, {7, {silent.endpoint, ""}}};
  s.coord.assign(1, "double", "s1", {wire::ItemRef{wire::ItemId{"far", 0, 0}, 7, 1}}, {}, peers);
  ASSERT_TRUE(silent.asked()) << "task 1 was never started";
  s.coord.assign(2, "double", "a", {a}, {}, peers);
  const auto done = s.coord.expect_past_requests<wire::TaskDone>(1500ms);
  EXPECT_EQ(done.task_id, 2u) << "task 2 waited for task 1";
  const auto f = s.coord.expect_past_requests<wire::TaskFailed>(5s);
  EXPECT_EQ(f.task_id, 1u);
  EXPECT_TRUE(f.retryable);
}

TEST(WorkerNode, ReleaseErasesOutputsAndIgnoresUnknownIds) {
  Session s;
  const auto a = s.coord.hold(json_item("r", 2));
  s.coord.assign(1, "double", "r", {a});
  const auto done = s.coord.expect<wire::TaskDone>();
  ASSERT_EQ(done.outputs.size(), 1u);
  const auto id = done.outputs[0].ref.id;
  EXPECT_EQ(fetch_from(s.hello.data_endpoint, id).json(), (Json{{"i", 4}}));
  s.coord.send(wire::ReleaseItems{{id, wire::ItemId{"never", 1, 2}}});
  ASSERT_TRUE(eventually([&] { return s.node().stats().items_released == 1; }));
  EXPECT_EQ(s.node().stats().release_unknown, 1u);
  try {
    (void)fetch_from(s.hello.data_endpoint, id);
    ADD_FAILURE() << "a released item is still served";
  } catch (const transport::FetchError& e) {
    EXPECT_EQ(e.kind(), transport::FetchError::Kind::not_found) << e.what();
  }
}

TEST(WorkerNode, ByeOnTheTaskChannelEndsRunWithZero) {
  Session s;
  s.coord.send(wire::Bye{std::string(node::bye_run_over)});
  EXPECT_EQ(s.run->result(), 0);
}

// Refused at registration or cut off (issue 18): exit 3, saying why.
TEST(WorkerNode, ByeForAnyOtherReasonEndsRunWithThreeSayingWhy) {
  Session s;
  s.coord.send(wire::Bye{"cut off: its items could not be pulled for 2100 ms"});
  EXPECT_EQ(s.run->result(), 3);
  EXPECT_NE(s.log.text().find("sent it away: cut off: its items could not be pulled for 2100 ms"), std::string::npos)
      << s.log.text();
}

TEST(WorkerNode, MembershipByeEndsRunWithZero) {
  Session s;
  s.coord.membership.reset();  // says bye to every member
  EXPECT_EQ(s.run->result(), 0);
}

TEST(WorkerNode, InterruptReportsHeldTasksAndSaysBye) {
  SilentHolder silent;
  std::atomic<bool> stop{false};
  Session s(1, 1, [&](node::WorkerNodeOptions& o) {
    o.interrupt = &stop;
    o.fetch_timeout = 1s;
  });
  const std::map<std::uint32_t, node::PeerAddress> peers{{7, {silent.endpoint, ""}}};
  s.coord.assign(1, "double", "s1", {wire::ItemRef{wire::ItemId{"far", 0, 0}, 7, 1}}, {}, peers);
  s.coord.assign(2, "double", "s2", {wire::ItemRef{wire::ItemId{"far2", 0, 0}, 7, 1}}, {}, peers);
  ASSERT_TRUE(silent.asked());
  stop = true;
  std::set<std::uint64_t> failed;
  for (int i = 0; i < 2; ++i) {
    const auto f = s.coord.expect<wire::TaskFailed>();
    EXPECT_TRUE(f.retryable);
    EXPECT_NE(f.message.find("shutting down"), std::string::npos) << f.message;
    failed.insert(f.task_id);
  }
  EXPECT_EQ(failed, (std::set<std::uint64_t>{1, 2}));
  (void)s.coord.expect<wire::Bye>();
  EXPECT_EQ(s.run->result(), 130);
}

TEST(WorkerNode, GarbageFramesAreRejectedNotFatal) {
  Session s;
  s.coord.send_raw({"not a flowd frame"});
  s.coord.send_raw({std::string(32, '\0')});
  s.coord.send_raw({std::string(200, '\xff'), "extra", "frames"});
  // A real header prefix, then garbage.
  auto hb = wire::encode(1, wire::Heartbeat{1, 2});
  ASSERT_TRUE(hb);
  std::string header(reinterpret_cast<const char*>((*hb)[0].bytes.data()), (*hb)[0].bytes.size());
  s.coord.send_raw({header.substr(0, 20)});
  header[header.size() - 1] ^= 0x5a;  // checksum no longer matches
  s.coord.send_raw({header});
  // Well formed, but nothing a coordinator sends on the task channel.
  s.coord.send(wire::Hello{"x", "y", 1, 1, Json::object()});
  s.coord.send(wire::TaskDone{1, 0, {}});
  ASSERT_TRUE(eventually([&] { return s.node().stats().messages_rejected >= 7; }))
      << s.node().stats().messages_rejected;
  // Still serving.
  const auto a = s.coord.hold(json_item("g", 21));
  s.coord.assign(1, "double", "g", {a});
  EXPECT_EQ(s.coord.expect<wire::TaskDone>().task_id, 1u);
  EXPECT_EQ(s.run->rc.load(), -1);
}

TEST(WorkerNode, WithCurveEverySocketIsAuthenticated) {
  if (!sec::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  const CurveSetup keys;
  Session s(1, -1, {}, keys);
  const auto reg = node::Registration::from_json(s.hello.info);
  EXPECT_EQ(reg.server_public_key, keys.worker.public_key) << "the item server's key is the node's own";
  // The input comes from holder 0 over CURVE (the coordinator's key).
  const auto a = s.coord.hold(json_item("c", 4));
  s.coord.assign(1, "double", "c", {a}, {}, {{0, {s.coord.holder->endpoint(), keys.coordinator.public_key}}});
  const auto done = s.coord.expect<wire::TaskDone>();
  ASSERT_EQ(done.outputs.size(), 1u);
  // The coordinator's key may fetch the output; an unknown key may not.
  transport::ClientOptions co;
  co.curve = sec::ClientCredentials{keys.worker.public_key, keys.coordinator};
  transport::ItemClient allowed(co);
  EXPECT_EQ(allowed.fetch(s.hello.data_endpoint, done.outputs[0].ref.id, 5s).json(), (Json{{"i", 8}}));
  transport::ClientOptions bo;
  bo.curve = sec::ClientCredentials{keys.worker.public_key, sec::generate_keypair()};
  bo.retry_interval = 100ms;
  bo.max_retries = 2;
  transport::ItemClient refused(bo);
  EXPECT_THROW((void)refused.fetch(s.hello.data_endpoint, done.outputs[0].ref.id, 1s), transport::FetchError);
}

// A membership endpoint that welcomes the node and then never speaks again:
// the coordinator vanished without a bye.
TEST(WorkerNode, LostCoordinatorEndsRunWithThree) {
  FakeCoordinator coord;
  zmq::context_t ctx;
  zmq::socket_t fake(ctx, zmq::socket_type::router);
  fake.set(zmq::sockopt::linger, 0);
  fake.bind("tcp://127.0.0.1:*");
  const std::string ep = fake.get(zmq::sockopt::last_endpoint);
  std::thread welcomer([&] {
    zmq::pollitem_t item{fake.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(wait)) != 1) return;
    auto frames = zio::receive(fake);
    if (frames.size() < 2) return;
    // 250 ms heartbeats, never sent: the node declares the coordinator lost
    // after its missed-heartbeat window, long enough that a slow join on a
    // loaded machine still registers (sends hello) first.
    auto m = wire::encode(1, wire::Welcome{5, 250, coord.config});
    if (m) (void)zio::send(fake, frames[0].to_string(), *m, false);
  });
  LogFile log(test::scratch() / "worker.log");
  auto o = options(ep);
  o.welcome_timeout = wait;
  Running run(std::move(o), log.log);
  welcomer.join();
  EXPECT_EQ(run.node->id(), 5u);
  (void)coord.expect<wire::Hello>();
  EXPECT_EQ(run.result(), 3);
  EXPECT_NE(log.text().find("lost the coordinator"), std::string::npos) << log.text();
}

TEST(WorkerNode, NoCoordinatorIsAnErrorNamingTheEndpoint) {
  LogFile log(test::scratch() / "worker.log");
  auto o = options("tcp://127.0.0.1:1");
  o.welcome_timeout = 300ms;
  try {
    node::WorkerNode n(std::move(o), log.log);
    FAIL() << "joined nobody";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tcp://127.0.0.1:1"), std::string::npos) << e.what();
  }
}

}  // namespace

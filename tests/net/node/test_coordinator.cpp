// The coordinator against scripted fake workers built from real pieces:
// MembershipClient, a DEALER on the task channel, an ItemServer for outputs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "net/membership/membership.hpp"
#include "net/node/assignment.hpp"
#include "net/node/coordinator.hpp"
#include "net/transport/server.hpp"
#include "store/item_store.hpp"
#include "wire/wire.hpp"
#include "net/zio/zio.hpp"
#include "support/helpers.hpp"

namespace flowd::net::node {
namespace {

using namespace std::chrono_literals;
namespace ms = membership;

// Generous bounds: a test fails when something does not happen within them.
constexpr auto patience = 10s;

struct Log {
  std::mutex m;
  std::vector<std::string> lines;
  std::function<void(LogLevel, std::string_view)> fn() {
    return [this](LogLevel, std::string_view s) {
      std::lock_guard lock(m);
      if (std::getenv("FLOWD_TEST_VERBOSE")) std::fprintf(stderr, "log: %.*s\n", int(s.size()), s.data());
      lines.emplace_back(s);
    };
  }
  bool contains(const std::string& text) {
    std::lock_guard lock(m);
    for (const auto& l : lines)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
};

struct WorkerSetup {
  std::string name = "w";
  Json labels = Json::array();
  std::map<std::string, std::string> unavailable{};
  std::optional<security::KeyPair> key{};  // CURVE: our key
  std::string server_key{};
  std::uint32_t slots = 1;  // tasks it says it runs at once
};

class FakeWorker {
public:
  FakeWorker(const std::string& endpoint, WorkerSetup s) : setup_(std::move(s)) {
    transport::ServerOptions so;
    so.endpoint = "tcp://127.0.0.1:*";
    // (Under CURVE the fake worker serves nothing: only registration is tested.)
    if (!setup_.key) server_ = std::make_unique<transport::ItemServer>(store_, so);
    ms::ClientOptions co;
    co.endpoint = endpoint;
    co.name = setup_.name;
    co.data_endpoint = server_ ? server_->endpoint() : "tcp://127.0.0.1:1";
    co.cpu_slots = setup_.slots;
    co.labels = setup_.labels;
    if (setup_.key) co.curve = security::ClientCredentials{setup_.server_key, *setup_.key};
    member_ = std::make_unique<ms::MembershipClient>(co);
    config_ = RunConfig::from_json(member_->config());
    dealer_ = zmq::socket_t(ctx_, zmq::socket_type::dealer);
    dealer_.set(zmq::sockopt::linger, 0);
    if (setup_.key) security::configure_curve_client(dealer_, {setup_.server_key, *setup_.key});
    security::secure_connect(dealer_, config_.task_endpoint);
    Registration r;
    r.worker_id = member_->worker_id();
    r.labels = setup_.labels;
    r.unavailable = setup_.unavailable;
    send(wire::Hello{setup_.name, co.data_endpoint, setup_.slots, 0, r.to_json()});
  }

  std::uint32_t id() const { return member_->worker_id(); }
  const RunConfig& config() const { return config_; }

  void send(const wire::Body& b) {
    const auto msg = wire::encode(++seq_, b);
    ASSERT_TRUE(static_cast<bool>(msg));
    zio::send(dealer_, "", *msg, false);
  }
  void send_raw(const std::string& bytes) { dealer_.send(zmq::buffer(bytes), zmq::send_flags::none); }

  // The next message of type T within the bound; other messages are kept
  // (release_items collected, the rest ignored).
  template <class T> std::optional<T> expect(std::chrono::milliseconds within = patience) {
    const auto end = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < end) {
      zmq::pollitem_t item{dealer_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 20ms);
      auto frames = zio::receive(dealer_);
      if (frames.empty()) continue;
      const auto v = zio::views(frames, 0);
      auto m = wire::decode(v);
      if (!m) continue;
      if (auto* rel = std::get_if<wire::ReleaseItems>(&m->body))
        for (auto& id : rel->ids) released.push_back(id);
      if (auto* t = std::get_if<T>(&m->body)) return std::move(*t);
    }
    return std::nullopt;
  }

  // Nothing of type T within `quiet`.
  template <class T> bool none(std::chrono::milliseconds quiet) { return !expect<T>(quiet).has_value(); }

  // Runs the task "as" test.step: stores the outputs, answers task_done.
  void complete(const wire::AssignTask& a, std::vector<Item> outputs) {
    const auto spec = TaskSpec::from_json(a.spec);
    wire::TaskDone d{a.task_id, 0.01, {}};
    for (std::uint32_t i = 0; i < outputs.size(); ++i) {
      const auto id = output_id(spec.key, a.task_id, i);
      Item stored = outputs[i];
      stored.meta.key = id.key;
      stored.meta.version = id.version;
      stored.meta.timestamp = id.timestamp;
      store_.put(std::move(stored));
      d.outputs.push_back(wire::TaskOutput{wire::ItemRef{id, this->id(), 8}, 0, outputs[i].meta});
    }
    send(d);
  }

  // Gone without a trace: no bye on the task channel, no store.
  void crash() {
    server_.reset();
    member_.reset();  // membership bye: "left"
    dealer_.close();
  }

  std::vector<wire::ItemId> released;

private:
  WorkerSetup setup_;
  store::MemoryItemStore store_;
  std::unique_ptr<transport::ItemServer> server_;
  std::unique_ptr<ms::MembershipClient> member_;
  RunConfig config_;
  zmq::context_t ctx_{1};
  zmq::socket_t dealer_;
  std::uint64_t seq_ = 0;
};

Item json_item(const std::string& key, int i) {
  Item it;
  it.meta.key = key;
  it.value = Json{{"i", i}};
  return it;
}

runtime::CarriedPtr local(const std::string& key, int i) {
  auto c = std::make_shared<runtime::Carried>();
  c->item = json_item(key, i);
  return c;
}

// Collects results; waits for them with a bound.
struct Results {
  std::mutex m;
  std::condition_variable cv;
  std::vector<runtime::RemoteResult> got;
  std::function<void(runtime::RemoteResult)> sink() {
    return [this](runtime::RemoteResult r) {
      std::lock_guard lock(m);
      got.push_back(std::move(r));
      cv.notify_all();
    };
  }
  bool wait(std::size_t n) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, patience, [&] { return got.size() >= n; });
  }
};

const char* two_maps = R"({"version": 1, "stages": {
  "src": {"op": "test.count", "params": {"count": 3}},
  "a":   {"op": "test.step", "inputs": {"in": "src.out"}LABELS},
  "b":   {"op": "test.step", "inputs": {"in": "a.out"}},
  "sink": {"op": "test.sum", "inputs": {"in": "b.out"}}}})";

workflow::Graph make_graph(const std::string& labels = "") {
  std::string doc = two_maps;
  doc.replace(doc.find("LABELS"), 6, labels);
  return test::graph(doc);
}

// Until the coordinator counts n live workers (a loss was processed).
void wait_workers(Coordinator& c, std::size_t n) {
  const auto end = std::chrono::steady_clock::now() + patience;
  while (c.stats().workers != n && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(c.stats().workers, n);
}

struct Fixture {
  workflow::Graph graph;
  Log log;
  std::unique_ptr<Coordinator> coord;
  std::size_t a = 0, b = 0;
  explicit Fixture(const std::string& labels = "", CoordinatorOptions o = {}, std::uint32_t missed = 3)
      : graph(make_graph(labels)) {
    o.log = log.fn();
    o.heartbeat_period = 100ms;
    o.missed_heartbeats = missed;
    coord = std::make_unique<Coordinator>(graph, RunConfig{}, std::move(o));
    a = graph.find("a")->index;
    b = graph.find("b")->index;
  }
  runtime::RemoteTask task(std::size_t stage, const std::string& key, runtime::CarriedPtr in,
                           std::function<void(runtime::RemoteResult)> done) {
    runtime::RemoteTask t;
    t.stage = stage;
    t.key = key;
    t.inputs = {std::move(in)};
    t.done = std::move(done);
    return t;
  }
};

// Stage a's task on `key` runs on `w`, which keeps its output: that output
// (null when the task or its result did not come within the bound).
std::shared_ptr<const runtime::RemoteItem> made_on(Fixture& f, FakeWorker& w, Results& res, const std::string& key,
                                                   int value) {
  const std::size_t before = res.got.size();
  f.coord->submit(f.task(f.a, key, local(key, value), res.sink()));
  w.send(wire::RequestWork{1, 0});
  const auto t = w.expect<wire::AssignTask>();
  if (!t) return nullptr;
  w.complete(*t, {json_item(key, value)});
  if (!res.wait(before + 1) || res.got[before].outputs.empty()) return nullptr;
  return res.got[before].outputs[0].item;
}

// Submits tasks k<first>.. k<first + n - 1> of stage a.
void submit_keys(Fixture& f, Results& res, int first, int n) {
  for (int i = first; i < first + n; ++i)
    f.coord->submit(f.task(f.a, "k" + std::to_string(i), local("k" + std::to_string(i), i), res.sink()));
}

// `w` asks for n tasks and gets them, in order (fewer on a timeout).
std::vector<wire::AssignTask> take(FakeWorker& w, int n) {
  w.send(wire::RequestWork{static_cast<std::uint32_t>(n), 0});
  std::vector<wire::AssignTask> got;
  for (int i = 0; i < n; ++i)
    if (auto t = w.expect<wire::AssignTask>()) got.push_back(std::move(*t));
  return got;
}

TEST(Assignment, PrefersLabelsThenLocalityThenAge) {
  std::vector<StagePlacement> stages(2);
  stages[0].name = "a";
  stages[1].name = "b";
  stages[1].labels.prefer = {"gpu"};
  stages[1].labels.anywhere = true;
  NodeView cpu{1, "cpu", {}, {}}, gpu{2, "gpu", {{"gpu"}, 0}, {}};
  std::vector<NodeView> live{cpu, gpu};
  const auto best = best_preferences(stages, live);
  std::vector<ReadyTask> ready{{1, 0, {{2, 100}}}, {2, 0, {{1, 50}}}, {3, 1, {}}};
  // cpu: stage b waits for the gpu node while it asks for work too; of the
  // rest, its local input wins.
  EXPECT_EQ(choose_task(ready, cpu, stages, best), 1u);
  // gpu: prefers b (preference 0 vs 0 for a... a has no prefer: 0 too), then
  // locality: task 1 holds 100 bytes there.
  EXPECT_EQ(choose_task(ready, gpu, stages, best), 0u);
  // Blind to locality, the oldest of equal preference wins.
  EXPECT_EQ(choose_task(ready, cpu, stages, best, false), 0u);
  // With the gpu node busy (or gone), cpu may take b.
  std::vector<NodeView> only_cpu{cpu};
  const auto best2 = best_preferences(stages, only_cpu);
  std::vector<ReadyTask> just_b{{3, 1, {}}};
  EXPECT_EQ(choose_task(just_b, cpu, stages, best2), 0u);
  NodeView sick{3, "sick", {}, {"a"}};
  std::vector<ReadyTask> just_a{{1, 0, {}}};
  EXPECT_FALSE(choose_task(just_a, sick, stages, best2).has_value());
  EXPECT_NE(why_not(stages[0], sick, "plugin missing").find("plugin missing"), std::string::npos);
}

TEST(Assignment, RankPolicyPicksAmongEquallyPreferredNodes) {
  std::vector<StagePlacement> stages(1);
  stages[0].name = "big-job";
  stages[0].labels.rank = flowd::workflow::RankPolicy::biggest;
  NodeView small{1, "small", {{}, 8}, {}}, large{2, "large", {{}, 64}, {}};
  std::vector<NodeView> asking{small, large};
  const auto best = best_preferences(stages, asking);
  const auto ranks = best_ranks(stages, asking, best);
  std::vector<ReadyTask> ready{{1, 0, {}}};
  EXPECT_FALSE(choose_task(ready, small, stages, best, true, ranks).has_value());
  EXPECT_EQ(choose_task(ready, large, stages, best, true, ranks), 0u);
  // Smallest: the other way round; alone, the small node takes it anyway.
  stages[0].labels.rank = flowd::workflow::RankPolicy::smallest;
  const auto smallest = best_ranks(stages, asking, best);
  EXPECT_EQ(choose_task(ready, small, stages, best, true, smallest), 0u);
  EXPECT_FALSE(choose_task(ready, large, stages, best, true, smallest).has_value());
  std::vector<NodeView> only_small{small};
  const auto best1 = best_preferences(stages, only_small);
  stages[0].labels.rank = flowd::workflow::RankPolicy::biggest;
  EXPECT_EQ(choose_task(ready, small, stages, best1, true, best_ranks(stages, only_small, best1)), 0u);
}

TEST(Assignment, AThiefRobsTheVictimWithMostToGiveWithinItsSite) {
  using flowd::workflow::NodeLabels;
  NodeView thief{9, "thief", NodeLabels{{"site:a"}, 0}, {}};
  std::vector<NodeView> victims{{1, "a1", NodeLabels{{"site:a"}, 0}, {}},
                                {2, "b1", NodeLabels{{"site:b"}, 0}, {}},
                                {3, "a2", NodeLabels{{"site:a"}, 0}, {}}};
  // Within its own site, the node with the most tasks worth moving, even
  // when another site's node has more.
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    EXPECT_EQ(choose_victim(thief, victims, seed, std::vector<std::uint32_t>{1, 9, 4}), 2u) << seed;
    EXPECT_EQ(choose_victim(thief, victims, seed, std::vector<std::uint32_t>{5, 9, 4}), 0u) << seed;
  }
  // A thief without a site: the most worth anywhere.
  NodeView nowhere{9, "thief", {}, {}};
  EXPECT_EQ(choose_victim(nowhere, victims, 3, std::vector<std::uint32_t>{1, 9, 4}), 1u);
  // Without weights: the seeded site-first order alone.
  const auto plain = choose_victim(thief, victims, 3);
  ASSERT_TRUE(plain);
  EXPECT_NE(*plain, 1u);
}

TEST(Coordinator, DemandDrivenAssignment) {
  Fixture f;
  FakeWorker w(f.coord->endpoint(), {.name = "w1"});
  f.coord->wait_for_workers(1, patience);
  Results res;
  for (int i = 0; i < 3; ++i) f.coord->submit(f.task(f.a, "k" + std::to_string(i), local("k" + std::to_string(i), i), res.sink()));
  EXPECT_TRUE(w.none<wire::AssignTask>(300ms)) << "no request_work, no task";
  w.send(wire::RequestWork{2, 0});
  auto t1 = w.expect<wire::AssignTask>();
  auto t2 = w.expect<wire::AssignTask>();
  ASSERT_TRUE(t1 && t2);
  EXPECT_EQ(t1->stage, "a");
  EXPECT_EQ(TaskSpec::from_json(t1->spec).key, "k0");  // oldest first
  EXPECT_TRUE(w.none<wire::AssignTask>(300ms)) << "credit was 2";
  w.complete(*t1, {json_item("k0", 0)});
  ASSERT_TRUE(res.wait(1));
  EXPECT_TRUE(res.got[0].ok);
  EXPECT_EQ(res.got[0].node, "w1");
  ASSERT_EQ(res.got[0].outputs.size(), 1u);
  EXPECT_EQ(res.got[0].outputs[0].item->holder(), "worker " + std::to_string(w.id()) + " (w1)");
  // The coordinator's own value was served to the worker: fetchable.
  w.send(wire::RequestWork{1, 0});
  ASSERT_TRUE(w.expect<wire::AssignTask>());
  EXPECT_EQ(f.coord->stats().assigned, 3u);
  EXPECT_EQ(f.coord->worker_names(), std::vector<std::string>{"w1"});
  f.coord->drain();
}

// A scan rank's job (runtime/cluster_scan.cpp) is pinned to its node: another
// node asking for work does not get it, its node does, with its inputs'
// ports and scan section in the spec, never stealable; once its node is
// gone it fails naming the node.
TEST(Coordinator, APinnedJobGoesOnlyToItsNodeAndFailsWhenTheNodeIsGone) {
  Fixture f;
  FakeWorker w1(f.coord->endpoint(), {.name = "w1"});
  FakeWorker w2(f.coord->endpoint(), {.name = "w2"});
  f.coord->wait_for_workers(2, patience);
  const auto nodes = f.coord->nodes_for(f.a);
  ASSERT_EQ(nodes.size(), 2u);
  Results res;
  auto job = f.task(f.a, "k0", local("k0", 0), res.sink());
  job.inputs.push_back(local("k1", 1));
  job.ports = {0, 0};
  job.scan = Json{{"phase", "reduce"}};
  job.node = w2.id();
  f.coord->submit(std::move(job));
  w1.send(wire::RequestWork{2, 0});
  EXPECT_TRUE(w1.none<wire::AssignTask>(300ms)) << "pinned to w2";
  w2.send(wire::RequestWork{1, 0});
  const auto t = w2.expect<wire::AssignTask>();
  ASSERT_TRUE(t);
  const auto spec = TaskSpec::from_json(t->spec);
  EXPECT_EQ(spec.ports, (std::vector<std::uint32_t>{0, 0}));
  EXPECT_EQ(spec.scan["phase"], "reduce");
  EXPECT_FALSE(spec.stealable);

  // Pinned to a node that leaves: failed, naming it.
  auto orphan = f.task(f.a, "k2", local("k2", 2), res.sink());
  const std::uint32_t gone = w1.id();
  orphan.node = gone;
  w1.crash();
  wait_workers(*f.coord, 1);
  f.coord->submit(std::move(orphan));
  w2.send(wire::RequestWork{1, 0});
  ASSERT_TRUE(res.wait(1));
  EXPECT_FALSE(res.got[0].ok);
  EXPECT_NE(res.got[0].error.find("must run on worker " + std::to_string(gone) + " (w1), which is gone"),
            std::string::npos)
      << res.got[0].error;
  f.coord->drain();
}

TEST(Coordinator, LocalityPreferred) {
  Fixture f;
  FakeWorker w1(f.coord->endpoint(), {.name = "w1"});
  FakeWorker w2(f.coord->endpoint(), {.name = "w2"});
  f.coord->wait_for_workers(2, patience);
  Results first;
  f.coord->submit(f.task(f.a, "x", local("x", 1), first.sink()));
  w2.send(wire::RequestWork{1, 0});
  auto t = w2.expect<wire::AssignTask>();
  ASSERT_TRUE(t);
  w2.complete(*t, {json_item("x", 1)});
  ASSERT_TRUE(first.wait(1));
  auto held_by_w2 = std::make_shared<runtime::Carried>();
  held_by_w2->item.meta = first.got[0].outputs[0].meta;
  held_by_w2->remote = first.got[0].outputs[0].item;
  Results second;
  // An older task without locality, then the one whose input w2 holds.
  f.coord->submit(f.task(f.b, "old", local("old", 0), second.sink()));
  f.coord->submit(f.task(f.b, "x", held_by_w2, second.sink()));
  w2.send(wire::RequestWork{1, 0});
  auto t2 = w2.expect<wire::AssignTask>();
  ASSERT_TRUE(t2);
  EXPECT_EQ(TaskSpec::from_json(t2->spec).key, "x");
  EXPECT_EQ(t2->inputs.at(0).holder, w2.id());
  f.coord->drain();
}

TEST(Coordinator, LabelsDecidePlacement) {
  Fixture f(R"(, "labels": ["gpu"])");
  FakeWorker cpu(f.coord->endpoint(), {.name = "cpu"});
  FakeWorker gpu(f.coord->endpoint(), {.name = "gpu", .labels = Json::array({"gpu"})});
  f.coord->wait_for_workers(2, patience);
  Results res;
  f.coord->submit(f.task(f.a, "k", local("k", 1), res.sink()));
  cpu.send(wire::RequestWork{1, 0});
  EXPECT_TRUE(cpu.none<wire::AssignTask>(300ms));
  gpu.send(wire::RequestWork{1, 0});
  EXPECT_TRUE(gpu.expect<wire::AssignTask>());
  f.coord->drain();
}

TEST(Coordinator, PreferredLabelFallsBackToAnywhere) {
  Fixture f(R"(, "labels": {"prefer": ["gpu"], "anywhere": true})");
  FakeWorker cpu(f.coord->endpoint(), {.name = "cpu"});
  f.coord->wait_for_workers(1, patience);
  Results res;
  f.coord->submit(f.task(f.a, "k", local("k", 1), res.sink()));
  cpu.send(wire::RequestWork{1, 0});
  EXPECT_TRUE(cpu.expect<wire::AssignTask>());
  f.coord->drain();
}

TEST(Coordinator, ABusyPreferredNodeLeavesTheTaskToAnIdleFallbackNode) {
  Fixture f(R"(, "labels": {"prefer": ["gpu"], "anywhere": true})");
  FakeWorker cpu(f.coord->endpoint(), {.name = "cpu"});
  FakeWorker gpu(f.coord->endpoint(), {.name = "gpu", .labels = Json::array({"gpu"})});
  f.coord->wait_for_workers(2, patience);
  Results res;
  // The gpu node is alive but asks for nothing (busy): the idle cpu node,
  // a fallback by "anywhere", takes the task instead of idling.
  f.coord->submit(f.task(f.a, "k", local("k", 1), res.sink()));
  cpu.send(wire::RequestWork{1, 0});
  EXPECT_TRUE(cpu.expect<wire::AssignTask>());
  f.coord->drain();
}

TEST(Coordinator, UnavailableStageNeverAssignedAndFailsClearly) {
  Fixture f;
  FakeWorker w(f.coord->endpoint(), {.name = "w1", .unavailable = {{"a", "plugin 'x' missing"}}});
  f.coord->wait_for_workers(1, patience);
  Results res;
  w.send(wire::RequestWork{4, 0});
  f.coord->submit(f.task(f.a, "k", local("k", 1), res.sink()));
  ASSERT_TRUE(res.wait(1));
  EXPECT_FALSE(res.got[0].ok);
  EXPECT_NE(res.got[0].error.find("stage 'a'"), std::string::npos) << res.got[0].error;
  EXPECT_NE(res.got[0].error.find("plugin 'x' missing"), std::string::npos) << res.got[0].error;
  EXPECT_EQ(res.got[0].key, "k");
  EXPECT_TRUE(w.none<wire::AssignTask>(200ms));
  EXPECT_TRUE(f.log.contains("cannot run stage 'a': plugin 'x' missing; it gets no such tasks"));
  // Stage b still goes there.
  f.coord->submit(f.task(f.b, "k", local("k", 1), res.sink()));
  EXPECT_TRUE(w.expect<wire::AssignTask>());
  f.coord->drain();
}

TEST(Coordinator, NonRetryableFailureReported) {
  Fixture f;
  FakeWorker w(f.coord->endpoint(), {.name = "w1"});
  f.coord->wait_for_workers(1, patience);
  Results res;
  f.coord->submit(f.task(f.a, "k", local("k", 1), res.sink()));
  w.send(wire::RequestWork{1, 0});
  auto t = w.expect<wire::AssignTask>();
  ASSERT_TRUE(t);
  w.send(wire::TaskFailed{t->task_id, false, "boom", {}});
  ASSERT_TRUE(res.wait(1));
  EXPECT_FALSE(res.got[0].ok);
  EXPECT_EQ(res.got[0].error, "on worker " + std::to_string(w.id()) + " (w1): boom");
  // Retryable: runs again, attempt + 1.
  f.coord->submit(f.task(f.a, "r", local("r", 1), res.sink()));
  w.send(wire::RequestWork{1, 0});
  auto r1 = w.expect<wire::AssignTask>();
  ASSERT_TRUE(r1);
  w.send(wire::TaskFailed{r1->task_id, true, "input unreachable", {}});
  w.send(wire::RequestWork{1, 0});
  auto r2 = w.expect<wire::AssignTask>();
  ASSERT_TRUE(r2);
  EXPECT_EQ(TaskSpec::from_json(r2->spec).attempt, 1u);
  EXPECT_NE(r2->task_id, r1->task_id);
  f.coord->drain();
}

TEST(Coordinator, LostWorkerTasksReassigned) {
  Fixture f;
  auto w1 = std::make_unique<FakeWorker>(f.coord->endpoint(), WorkerSetup{.name = "w1"});
  FakeWorker w2(f.coord->endpoint(), {.name = "w2"});
  f.coord->wait_for_workers(2, patience);
  Results res;
  f.coord->submit(f.task(f.a, "k", local("k", 1), res.sink()));
  w1->send(wire::RequestWork{1, 0});
  ASSERT_TRUE(w1->expect<wire::AssignTask>());
  w1->crash();
  w2.send(wire::RequestWork{1, 0});
  auto t = w2.expect<wire::AssignTask>();
  ASSERT_TRUE(t);
  EXPECT_EQ(TaskSpec::from_json(t->spec).attempt, 1u);
  EXPECT_EQ(f.coord->stats().reassigned, 1u);
  w2.complete(*t, {json_item("k", 1)});
  ASSERT_TRUE(res.wait(1));
  EXPECT_TRUE(res.got[0].ok);
  EXPECT_EQ(res.got[0].node, "w2");
  f.coord->drain();
}

TEST(Coordinator, LostHolderRecomputedFromLineage) {
  Fixture f;
  auto w1 = std::make_unique<FakeWorker>(f.coord->endpoint(), WorkerSetup{.name = "w1"});
  FakeWorker w2(f.coord->endpoint(), {.name = "w2"});
  f.coord->wait_for_workers(2, patience);
  Results res;
  const auto item = made_on(f, *w1, res, "k", 7);
  ASSERT_TRUE(item);
  EXPECT_EQ(item->fetch().json()["i"], 7);  // from w1
  w1->crash();
  wait_workers(*f.coord, 1);
  // fetch() blocks until w2 re-ran the lineage task.
  auto fetched = std::async(std::launch::async, [&] { return item->fetch(); });
  w2.send(wire::RequestWork{1, 0});
  auto re = w2.expect<wire::AssignTask>();
  ASSERT_TRUE(re);
  EXPECT_EQ(re->stage, "a");
  EXPECT_EQ(TaskSpec::from_json(re->spec).key, "k");
  w2.complete(*re, {json_item("k", 8)});  // distinguishable from the first run
  ASSERT_EQ(fetched.wait_for(patience), std::future_status::ready);
  EXPECT_EQ(fetched.get().json()["i"], 8);
  EXPECT_EQ(f.coord->stats().recomputed, 1u);
  EXPECT_NE(item->holder().find("w2"), std::string::npos);
  // A task needing the item now goes with w2 as holder.
  auto c = std::make_shared<runtime::Carried>();
  c->remote = item;
  f.coord->submit(f.task(f.b, "k", c, res.sink()));
  w2.send(wire::RequestWork{1, 0});
  auto next = w2.expect<wire::AssignTask>();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->inputs.at(0).holder, w2.id());
  f.coord->drain();
}

// Issue 18, item 2: a holder that heartbeats but whose items cannot be
// pulled (a link down between nodes) is not the consumer's fault. Within
// the loss bound the task runs again without counting an attempt; past it
// the holder is cut off (bye), the others are told (holder_lost), and its
// item is made again from its lineage.
TEST(Coordinator, AHolderThatDoesNotAnswerIsWaitedForThenCutOffAndItsItemsMadeAgain) {
  Fixture f("", {}, 15);  // loss bound 1.5 s
  FakeWorker w1(f.coord->endpoint(), {.name = "w1"});
  FakeWorker w2(f.coord->endpoint(), {.name = "w2"});
  f.coord->wait_for_workers(2, patience);
  Results res;
  auto c = std::make_shared<runtime::Carried>();
  c->remote = made_on(f, w1, res, "k", 7);
  ASSERT_TRUE(c->remote);
  f.coord->submit(f.task(f.b, "k", c, res.sink()));
  // More failures than max_attempts, all within the bound: none counts.
  const auto first = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    w2.send(wire::RequestWork{1, 0});
    auto b = w2.expect<wire::AssignTask>();
    ASSERT_TRUE(b) << "failure " << i;
    EXPECT_EQ(b->stage, "b");
    EXPECT_EQ(TaskSpec::from_json(b->spec).attempt, 0u) << "an unreachable holder was counted against the task";
    w2.send(wire::TaskFailed{b->task_id, true, "no answer from holder", {w1.id()}});
  }
  ASSERT_LT(std::chrono::steady_clock::now() - first, 1500ms) << "too slow a machine for this test's bound";
  EXPECT_EQ(res.got.size(), 1u) << "the task failed";
  EXPECT_TRUE(f.log.contains("get no answer")) << "the wait is not logged";
  // Past the bound the next failure cuts w1 off.
  std::this_thread::sleep_for(1600ms);
  w2.send(wire::RequestWork{1, 0});
  auto b = w2.expect<wire::AssignTask>();
  ASSERT_TRUE(b);
  w2.send(wire::TaskFailed{b->task_id, true, "no answer from holder", {w1.id()}});
  const auto bye = w1.expect<wire::Bye>();
  ASSERT_TRUE(bye);
  EXPECT_NE(bye->reason.find("cut off: its items could not be pulled for"), std::string::npos) << bye->reason;
  const auto lost = w2.expect<wire::HolderLost>();
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->worker_id, w1.id());
  EXPECT_NE(lost->data_endpoint.find("tcp://127.0.0.1:"), std::string::npos) << lost->data_endpoint;
  // w1's item is made again on w2, then b runs with w2 as holder.
  w2.send(wire::RequestWork{1, 0});
  auto re = w2.expect<wire::AssignTask>();
  ASSERT_TRUE(re);
  EXPECT_EQ(re->stage, "a");
  w2.complete(*re, {json_item("k", 7)});
  w2.send(wire::RequestWork{1, 0});
  auto again = w2.expect<wire::AssignTask>();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->stage, "b");
  EXPECT_EQ(again->inputs.at(0).holder, w2.id());
  w2.complete(*again, {json_item("k", 8)});
  ASSERT_TRUE(res.wait(2));
  EXPECT_TRUE(res.got[1].ok) << res.got[1].error;
  EXPECT_EQ(f.coord->stats().recomputed, 1u);
  f.coord->drain();
}

// Issue 18, item 4: when a holder is declared lost, every other node is told
// at once, so its pulls from it stop.
TEST(Coordinator, EveryNodeIsToldWhenAHolderIsLost) {
  Fixture f;
  auto w1 = std::make_unique<FakeWorker>(f.coord->endpoint(), WorkerSetup{.name = "w1"});
  FakeWorker w2(f.coord->endpoint(), {.name = "w2"});
  f.coord->wait_for_workers(2, patience);
  const auto gone_id = w1->id();
  w1->crash();
  const auto lost = w2.expect<wire::HolderLost>();
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->worker_id, gone_id);
  EXPECT_NE(lost->data_endpoint.find("tcp://127.0.0.1:"), std::string::npos) << lost->data_endpoint;
  f.coord->drain();
}

TEST(Coordinator, StealMovesUnstartedTasks) {
  trace::Recorder recorder(true);
  CoordinatorOptions o;
  o.recorder = &recorder;
  Fixture f("", o);
  FakeWorker victim(f.coord->endpoint(), {.name = "victim"});
  FakeWorker thief(f.coord->endpoint(), {.name = "thief", .slots = 4});
  f.coord->wait_for_workers(2, patience);
  Results res;
  submit_keys(f, res, 0, 5);
  const auto mine = take(victim, 5);
  ASSERT_EQ(mine.size(), 5u);
  thief.send(wire::RequestWork{4, 0});
  auto req = victim.expect<wire::StealRequest>();
  ASSERT_TRUE(req);
  EXPECT_EQ(req->for_worker, thief.id());
  // The victim runs one task at a time (its hello said 1 slot), so 4 wait:
  // half of them are asked for, not all the thief's four idle slots could take.
  EXPECT_EQ(req->max_tasks, 2u);
  // Gives up two, plus an id it never had (ignored safely).
  victim.send(wire::StealReply{{mine[1].task_id, mine[2].task_id, 999999}});
  auto s1 = thief.expect<wire::AssignTask>();
  auto s2 = thief.expect<wire::AssignTask>();
  ASSERT_TRUE(s1 && s2);
  EXPECT_EQ(f.coord->stats().stolen, 2u);
  // The trace counts what moved.
  const auto counters = recorder.snapshot(Json::object()).counters;
  ASSERT_FALSE(counters.empty());
  EXPECT_EQ(counters.back().name, "tasks stolen");
  EXPECT_EQ(counters.back().value, 2.0);
  // A late done for a stolen task is ignored; its outputs released.
  victim.complete(mine[1], {json_item("k1", 1)});
  thief.complete(*s1, {json_item(TaskSpec::from_json(s1->spec).key, 1)});
  ASSERT_TRUE(res.wait(1));
  EXPECT_TRUE(victim.expect<wire::ReleaseItems>() || !victim.released.empty());
  f.coord->drain();
}

TEST(Coordinator, ANodeWithEverySlotBusyDoesNotSteal) {
  Fixture f;
  FakeWorker victim(f.coord->endpoint(), {.name = "victim"});
  FakeWorker busy(f.coord->endpoint(), {.name = "busy"});
  f.coord->wait_for_workers(2, patience);
  Results res;
  submit_keys(f, res, 0, 6);
  ASSERT_EQ(take(victim, 5).size(), 5u);
  // Its one slot runs the sixth task; it asks for lookahead room too. Four
  // tasks wait on the victim, but holding one more would not run it sooner.
  busy.send(wire::RequestWork{2, 0});
  ASSERT_TRUE(busy.expect<wire::AssignTask>());
  EXPECT_TRUE(victim.none<wire::StealRequest>(500ms));
  EXPECT_EQ(f.coord->stats().steal_requests, 0u);
  f.coord->drain();
}

TEST(Coordinator, AStolenTaskIsNeverStolenBack) {
  Fixture f;
  FakeWorker victim(f.coord->endpoint(), {.name = "victim"});
  FakeWorker thief(f.coord->endpoint(), {.name = "thief"});
  f.coord->wait_for_workers(2, patience);
  Results res;
  submit_keys(f, res, 0, 5);
  const auto mine = take(victim, 5);
  ASSERT_EQ(mine.size(), 5u);
  for (const auto& t : mine)
    EXPECT_TRUE(TaskSpec::from_json(t.spec).stealable);
  // The idle thief (one slot) asks for its slot and one task of lookahead.
  thief.send(wire::RequestWork{2, 0});
  const auto req = victim.expect<wire::StealRequest>();
  ASSERT_TRUE(req);
  EXPECT_EQ(req->max_tasks, 1u) << "no more than its one idle slot starts";
  // Before the victim answers, a new task fills the thief's slot: the
  // stolen task will wait there.
  submit_keys(f, res, 5, 1);
  ASSERT_TRUE(thief.expect<wire::AssignTask>());
  victim.send(wire::StealReply{{mine[4].task_id}});
  const auto stolen = thief.expect<wire::AssignTask>();
  ASSERT_TRUE(stolen);
  EXPECT_EQ(TaskSpec::from_json(stolen->spec).key, "k4");
  EXPECT_FALSE(TaskSpec::from_json(stolen->spec).stealable) << "the thief must not give it up again";
  // The victim ends its own four and goes idle; the thief still has the
  // stolen task waiting, but it moved once already: it stays.
  for (int i = 0; i < 4; ++i)
    victim.complete(mine[i], {json_item("k" + std::to_string(i), i)});
  ASSERT_TRUE(res.wait(4));
  victim.send(wire::RequestWork{2, 0});
  EXPECT_TRUE(thief.none<wire::StealRequest>(500ms));
  EXPECT_EQ(f.coord->stats().steal_requests, 1u);
  EXPECT_EQ(f.coord->stats().stolen, 1u);
  f.coord->drain();
}

TEST(Coordinator, NoStealWhenOff) {
  CoordinatorOptions o;
  o.steal = false;
  Fixture f("", o);
  FakeWorker victim(f.coord->endpoint(), {.name = "victim"});
  FakeWorker thief(f.coord->endpoint(), {.name = "thief"});
  f.coord->wait_for_workers(2, patience);
  Results res;
  f.coord->submit(f.task(f.a, "k", local("k", 1), res.sink()));
  victim.send(wire::RequestWork{1, 0});
  ASSERT_TRUE(victim.expect<wire::AssignTask>());
  thief.send(wire::RequestWork{1, 0});
  EXPECT_TRUE(victim.none<wire::StealRequest>(400ms));
  EXPECT_EQ(f.coord->stats().steal_requests, 0u);
  f.coord->drain();
}

TEST(Coordinator, MalformedMessagesRejected) {
  Fixture f;
  FakeWorker w(f.coord->endpoint(), {.name = "w1"});
  f.coord->wait_for_workers(1, patience);
  w.send_raw("garbage that is no flowd frame");
  w.send_raw(std::string(64, '\xff'));
  w.send(wire::Welcome{1, 100, Json::object()});  // valid frame, wrong type
  w.send(wire::TaskDone{12345, 0, {}});            // a task it never had
  const auto end = std::chrono::steady_clock::now() + patience;
  while (f.coord->stats().rejected < 3 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(10ms);
  EXPECT_GE(f.coord->stats().rejected, 3u);
  // Still serving.
  Results res;
  f.coord->submit(f.task(f.a, "k", local("k", 1), res.sink()));
  w.send(wire::RequestWork{1, 0});
  EXPECT_TRUE(w.expect<wire::AssignTask>());
  f.coord->drain();
}

TEST(Coordinator, ReleaseWhenLastReferenceDies) {
  Fixture f;
  FakeWorker w(f.coord->endpoint(), {.name = "w1"});
  f.coord->wait_for_workers(1, patience);
  Results res;
  f.coord->submit(f.task(f.a, "k", local("k", 1), res.sink()));
  w.send(wire::RequestWork{1, 0});
  auto t = w.expect<wire::AssignTask>();
  ASSERT_TRUE(t);
  w.complete(*t, {json_item("k", 1)});
  ASSERT_TRUE(res.wait(1));
  const auto expected_id = output_id("k", t->task_id, 0);
  auto keep = res.got[0].outputs[0].item;
  {
    std::lock_guard lock(res.m);
    res.got.clear();
  }
  EXPECT_TRUE(w.none<wire::ReleaseItems>(300ms));
  keep.reset();
  auto rel = w.expect<wire::ReleaseItems>();
  ASSERT_TRUE(rel);
  EXPECT_EQ(rel->ids, std::vector<wire::ItemId>{expected_id});
  f.coord->drain();
}

TEST(Coordinator, CurveRefusesUnauthorisedWorker) {
  const auto keys = security::make_local_keys(1);
  CoordinatorOptions o;
  o.curve = CoordinatorCurve{keys.server, keys.authorised()};
  Fixture f("", o);
  EXPECT_EQ(f.coord->config().server_public_key, keys.server.public_key);
  EXPECT_EQ(f.coord->config().peer_public_keys.size(), 2u);
  // The authorised key joins and registers.
  FakeWorker good(f.coord->endpoint(), {.name = "good", .key = keys.workers[0], .server_key = keys.server.public_key});
  f.coord->wait_for_workers(1, patience);
  // Another key cannot even join.
  WorkerSetup bad{.name = "bad", .key = security::generate_keypair(), .server_key = keys.server.public_key};
  const auto join_bad = [&] {
    ms::ClientOptions co;
    co.endpoint = f.coord->endpoint();
    co.name = "bad";
    co.data_endpoint = "tcp://127.0.0.1:1";
    co.curve = security::ClientCredentials{keys.server.public_key, *bad.key};
    co.welcome_timeout = 500ms;
    ms::MembershipClient c(co);
  };
  EXPECT_THROW(join_bad(), ms::MembershipError);
  EXPECT_EQ(f.coord->worker_names(), std::vector<std::string>{"good"});
  f.coord->drain();
}

TEST(Coordinator, WaitForWorkersNamesWhoJoined) {
  Fixture f;
  FakeWorker w(f.coord->endpoint(), {.name = "only-one"});
  try {
    f.coord->wait_for_workers(2, 300ms);
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("of 2 workers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("only-one"), std::string::npos) << e.what();
  }
}

TEST(Coordinator, DrainStopsCallbacks) {
  Fixture f;
  FakeWorker w(f.coord->endpoint(), {.name = "w1"});
  f.coord->wait_for_workers(1, patience);
  std::atomic<int> calls{0};
  f.coord->submit(f.task(f.a, "k", local("k", 1), [&](runtime::RemoteResult) { ++calls; }));
  w.send(wire::RequestWork{1, 0});
  auto t = w.expect<wire::AssignTask>();
  ASSERT_TRUE(t);
  f.coord->drain();
  w.complete(*t, {json_item("k", 1)});
  EXPECT_TRUE(w.expect<wire::ReleaseItems>()) << "outputs of a forgotten task are released";
  EXPECT_EQ(calls.load(), 0);
  f.coord->finish();
  EXPECT_TRUE(w.expect<wire::Bye>());
}

}  // namespace
}  // namespace flowd::net::node

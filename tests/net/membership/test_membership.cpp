// MembershipServer and MembershipClient over real sockets; a killed worker is
// a forked child process, so its death is as abrupt as a crash.
//
// Every wait has a timeout and every raw socket ZMQ_LINGER 0 and a receive
// timeout, so a lost message fails a test, never hangs it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "net/captured_log.hpp"
#include "net/membership/membership.hpp"

namespace ms = flowd::net::membership;
namespace wire = flowd::wire;
namespace sec = flowd::net::security;
using flowd::LogLevel;
using namespace std::chrono_literals;

namespace {

using flowd::nettest::CapturedLog;

constexpr auto period = 200ms;
constexpr std::uint32_t missed = 3;
// Loss is declared missed × period after the last message; the last
// heartbeat is at most one period old at death, and the loop checks at
// least every 50 ms. The slack covers a loaded test machine.
constexpr auto loss_bound = period * missed + 50ms + 500ms;

ms::ServerOptions server_options(CapturedLog& log) {
  ms::ServerOptions o;
  o.heartbeat_period = period;
  o.missed_heartbeats = missed;
  o.config = {{"run", "test"}};
  o.log = log.sink();
  return o;
}

ms::ClientOptions client_options(const std::string& endpoint, const std::string& name, CapturedLog& log) {
  ms::ClientOptions o;
  o.endpoint = endpoint;
  o.name = name;
  o.data_endpoint = "tcp://127.0.0.1:6000";
  o.cpu_slots = 4;
  o.gpu_slots = 1;
  o.labels = {{"site", "a"}};
  o.welcome_timeout = 5s;
  o.missed_heartbeats = missed;
  o.log = log.sink();
  return o;
}

std::optional<ms::MemberEvent> next_event(ms::MembershipServer& s, std::chrono::milliseconds timeout = 5s) {
  return s.poll_event(timeout);
}

std::string ipc_endpoint(const std::string& tag) {
  return "ipc:///tmp/flowd-membership-" + std::to_string(::getpid()) + "-" + tag + ".sock";
}

// A coordinator that welcomes one worker (as worker 9, with `config`) and
// then goes silent without a bye, as a crashed or partitioned one does.
struct SilentCoordinator {
  zmq::context_t ctx;
  zmq::socket_t router{ctx, zmq::socket_type::router};
  std::string endpoint;
  std::jthread welcomed;  // joined even when the client's constructor throws

  explicit SilentCoordinator(flowd::Json config) {
    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::rcvtimeo, 5000);
    router.bind("tcp://127.0.0.1:*");
    endpoint = router.get(zmq::sockopt::last_endpoint);
    welcomed = std::jthread([this, config = std::move(config)] {
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(router, std::back_inserter(frames))) return;
      auto msg = wire::encode(1, wire::Welcome{9, static_cast<std::uint32_t>(period.count()), config});
      if (!msg) return;
      zmq::multipart_t out;
      out.addstr(frames[0].to_string());
      for (const auto& f : *msg) out.addmem(f.bytes.data(), f.bytes.size());
      out.send(router);
    });
  }
};

}  // namespace

TEST(Membership, JoinWelcomeAndByeOnDestruction) {
  CapturedLog log;
  ms::MembershipServer server(server_options(log));
  {
    ms::MembershipClient client(client_options(server.endpoint(), "host:1", log));
    EXPECT_GE(client.worker_id(), 1u);
    EXPECT_EQ(client.heartbeat_period(), period);
    EXPECT_EQ(client.config().at("run"), "test");
    // The coordinator's loss bound travels in the welcome.
    EXPECT_EQ(client.config().at("missed_heartbeats"), missed);
    EXPECT_EQ(client.missed_heartbeats(), missed);
    const auto e = next_event(server);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->kind, ms::MemberEventKind::joined);
    EXPECT_EQ(e->worker.id, client.worker_id());
    EXPECT_EQ(e->worker.name, "host:1");
    EXPECT_EQ(e->worker.data_endpoint, "tcp://127.0.0.1:6000");
    EXPECT_EQ(e->worker.cpu_slots, 4u);
    EXPECT_EQ(e->worker.gpu_slots, 1u);
    EXPECT_EQ(e->worker.labels, (flowd::Json{{"site", "a"}}));
    // Heartbeats keep it a member well past the loss bound, and carry load.
    client.set_load(2, 5);
    std::this_thread::sleep_for(period * (missed + 2));
    EXPECT_FALSE(server.poll_event(0ms)) << log.all();
    const auto ws = server.workers();
    ASSERT_EQ(ws.size(), 1u);
    EXPECT_EQ(ws[0].running, 2u);
    EXPECT_EQ(ws[0].queued, 5u);
    EXPECT_TRUE(client.connected());
  }
  const auto e = next_event(server);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ms::MemberEventKind::left);
  EXPECT_NE(e->reason.find("bye"), std::string::npos);
  EXPECT_TRUE(server.workers().empty());
}

TEST(Membership, SeveralWorkersGetDistinctIds) {
  CapturedLog log;
  ms::MembershipServer server(server_options(log));
  std::vector<std::unique_ptr<ms::MembershipClient>> clients;
  for (int i = 0; i < 4; ++i)
    clients.push_back(
        std::make_unique<ms::MembershipClient>(client_options(server.endpoint(), "host:" + std::to_string(i), log)));
  std::set<std::uint32_t> ids;
  for (int i = 0; i < 4; ++i) {
    const auto e = next_event(server);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->kind, ms::MemberEventKind::joined);
    ids.insert(e->worker.id);
  }
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(server.workers().size(), 4u);
  clients.erase(clients.begin() + 1);
  const auto e = next_event(server);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ms::MemberEventKind::left);
  EXPECT_EQ(e->worker.name, "host:1");
  EXPECT_EQ(server.workers().size(), 3u);
}

TEST(Membership, SameNameFromANewConnectionReplacesTheOldSession) {
  CapturedLog log;
  ms::MembershipServer server(server_options(log));
  ms::MembershipClient first(client_options(server.endpoint(), "host:7", log));
  ASSERT_TRUE(next_event(server));
  ms::MembershipClient second(client_options(server.endpoint(), "host:7", log));
  const auto left = next_event(server);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->kind, ms::MemberEventKind::left);
  EXPECT_EQ(left->worker.id, first.worker_id());
  const auto joined = next_event(server);
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->kind, ms::MemberEventKind::joined);
  EXPECT_EQ(joined->worker.id, second.worker_id());
  EXPECT_NE(first.worker_id(), second.worker_id());
  // The old session's heartbeats are refused with a bye: it learns it is out.
  const auto ce = first.poll_event(5s);
  ASSERT_TRUE(ce);
  EXPECT_EQ(ce->kind, ms::CoordinatorEventKind::left);
}

TEST(Membership, KilledWorkerProcessIsDeclaredLostWithinTheBound) {
  CapturedLog log;
  const auto endpoint = ipc_endpoint("killed");
  // Fork before this process starts any threads of its own: the child then
  // inherits a clean process. It joins once the server below is bound (a
  // DEALER keeps trying to connect) and waits to be killed.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(30);  // never outlive a failed test
    try {
      CapturedLog child_log;
      ms::MembershipClient client(client_options(endpoint, "doomed", child_log));
      while (true) ::pause();
    } catch (...) {
      ::_exit(3);
    }
  }
  auto options = server_options(log);
  options.endpoint = endpoint;
  ms::MembershipServer server(options);
  const auto joined = next_event(server, 10s);
  if (!joined) ::kill(child, SIGKILL);
  ASSERT_TRUE(joined) << log.all();
  EXPECT_EQ(joined->worker.name, "doomed");
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  const auto killed_at = std::chrono::steady_clock::now();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  const auto lost = next_event(server, 10s);
  const auto took = std::chrono::steady_clock::now() - killed_at;
  ASSERT_TRUE(lost) << log.all();
  EXPECT_EQ(lost->kind, ms::MemberEventKind::lost);
  EXPECT_EQ(lost->worker.id, joined->worker.id);
  EXPECT_GE(took, period * (missed - 1) - 100ms);
  EXPECT_LE(took, loss_bound);
  EXPECT_TRUE(server.workers().empty());
}

TEST(Membership, CoordinatorShutdownIsAnEvent) {
  CapturedLog log;
  auto server = std::make_unique<ms::MembershipServer>(server_options(log));
  ms::MembershipClient client(client_options(server->endpoint(), "host:2", log));
  server.reset();
  const auto e = client.poll_event(5s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ms::CoordinatorEventKind::left);
  EXPECT_FALSE(client.connected());
}

TEST(Membership, VanishedCoordinatorIsDeclaredLost) {
  // A coordinator that welcomes and then goes silent without a bye, as a
  // crashed or partitioned one does.
  CapturedLog log;
  SilentCoordinator fake(flowd::Json::object());
  ms::MembershipClient client(client_options(fake.endpoint, "host:3", log));
  fake.welcomed.join();
  EXPECT_EQ(client.worker_id(), 9u);
  const auto start = std::chrono::steady_clock::now();
  const auto e = client.poll_event(10s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ms::CoordinatorEventKind::lost);
  EXPECT_LE(std::chrono::steady_clock::now() - start, loss_bound);
  EXPECT_FALSE(client.connected());
}

TEST(Membership, AWorkerGivesTheCoordinatorUpAfterTheCoordinatorsBoundNotItsOwn) {
  // A coordinator told to ride out long outages (--missed-heartbeats 30)
  // must not see its workers leave after their own default bound.
  CapturedLog log;
  auto so = server_options(log);
  so.missed_heartbeats = 12;
  ms::MembershipServer server(so);
  auto co = client_options(server.endpoint(), "host:5", log);
  co.missed_heartbeats = 2;
  ms::MembershipClient client(co);
  EXPECT_EQ(client.missed_heartbeats(), 12u);

  // A coordinator whose welcome names 8 and then goes silent is lost after
  // 8 periods, not the worker's own 2 (with no such field the worker's own
  // bound holds: VanishedCoordinatorIsDeclaredLost).
  SilentCoordinator fake(flowd::Json{{"missed_heartbeats", 8}});
  auto co2 = client_options(fake.endpoint, "host:6", log);
  co2.missed_heartbeats = 2;
  ms::MembershipClient silent(co2);
  fake.welcomed.join();
  EXPECT_EQ(silent.missed_heartbeats(), 8u);
  const auto start = std::chrono::steady_clock::now();
  const auto e = silent.poll_event(10s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ms::CoordinatorEventKind::lost);
  // 8 periods after the welcome at the earliest (the welcome came just
  // before `start`); 2 would be the worker's own bound.
  EXPECT_GE(std::chrono::steady_clock::now() - start, period * 8 - 100ms);
  EXPECT_NE(e->reason.find("8 heartbeat periods"), std::string::npos) << e->reason;
}

TEST(Membership, NoCoordinatorGivesAClearError) {
  CapturedLog log;
  auto o = client_options("tcp://127.0.0.1:1", "host:4", log);
  o.welcome_timeout = 300ms;
  try {
    ms::MembershipClient client(o);
    FAIL() << "joined nothing";
  } catch (const ms::MembershipError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("tcp://127.0.0.1:1"), std::string::npos) << what;
    EXPECT_NE(what.find("address"), std::string::npos) << what;
  }
}

TEST(Membership, CurveAuthorisedJoinsAndUnauthorisedNeverGetsAWelcome) {
  if (!sec::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
  CapturedLog log;
  const auto server_keys = sec::generate_keypair();
  const auto good = sec::generate_keypair();
  const auto bad = sec::generate_keypair();
  sec::AuthorisedKeys authorised;
  authorised.add(good.public_key, "good-worker");
  auto so = server_options(log);
  so.curve = ms::CurveServerKeys{server_keys, authorised};
  ms::MembershipServer server(so);

  auto co = client_options(server.endpoint(), "host:5", log);
  co.curve = sec::ClientCredentials{server_keys.public_key, good};
  ms::MembershipClient client(co);
  const auto e = next_event(server);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->worker.user, "good-worker");

  auto bo = client_options(server.endpoint(), "intruder", log);
  bo.curve = sec::ClientCredentials{server_keys.public_key, bad};
  bo.welcome_timeout = 500ms;
  try {
    ms::MembershipClient intruder(bo);
    FAIL() << "an unauthorised key was welcomed";
  } catch (const ms::MembershipError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find(server.endpoint()), std::string::npos) << what;
    EXPECT_NE(what.find("authorised keys"), std::string::npos) << what;
  }
  EXPECT_FALSE(server.poll_event(100ms));
  EXPECT_EQ(server.workers().size(), 1u);
}

TEST(Membership, MalformedFramesAreLoggedAndServingGoesOn) {
  CapturedLog log;
  ms::MembershipServer server(server_options(log));
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.set(zmq::sockopt::rcvtimeo, 300);
  raw.connect(server.endpoint());
  raw.send(zmq::str_buffer("not a flowd frame"), zmq::send_flags::none);
  // A real header with its body cut short.
  auto hello = wire::encode(1, wire::Hello{"x", "", 1, 0, {}});
  ASSERT_TRUE(hello);
  const auto& h = (*hello)[0].bytes;
  raw.send(zmq::buffer(h.data(), h.size() - 2), zmq::send_flags::none);
  // Well formed but not for this endpoint.
  auto ack = wire::encode(2, wire::Ack{});
  ASSERT_TRUE(ack);
  raw.send(zmq::buffer((*ack)[0].bytes.data(), (*ack)[0].bytes.size()), zmq::send_flags::none);
  // A heartbeat before any hello earns a bye, not membership.
  auto hb = wire::encode(3, wire::Heartbeat{});
  ASSERT_TRUE(hb);
  raw.send(zmq::buffer((*hb)[0].bytes.data(), (*hb)[0].bytes.size()), zmq::send_flags::none);
  zmq::message_t reply;
  ASSERT_TRUE(raw.recv(reply));
  const std::vector<wire::FrameView> v{{static_cast<const std::byte*>(reply.data()), reply.size()}};
  const auto m = wire::decode(v);
  ASSERT_TRUE(m);
  EXPECT_TRUE(std::holds_alternative<wire::Bye>(m->body));

  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (server.rejected() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server.rejected(), 4u) << log.all();
  EXPECT_GE(log.count("dropped a message"), 2u) << log.all();
  EXPECT_EQ(log.count("rejected ack"), 1u) << log.all();

  ms::MembershipClient client(client_options(server.endpoint(), "host:6", log));
  const auto e = next_event(server);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ms::MemberEventKind::joined);
  EXPECT_TRUE(server.workers().size() == 1u);
}

TEST(Membership, RepeatedHelloOnOneConnectionKeepsItsId) {
  // A worker that missed its welcome says hello again on the same
  // connection: it gets the same id and the coordinator reports one join.
  CapturedLog log;
  ms::MembershipServer server(server_options(log));
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.set(zmq::sockopt::rcvtimeo, 5000);
  raw.connect(server.endpoint());
  std::vector<std::uint32_t> ids;
  for (std::uint64_t seq = 1; seq <= 2; ++seq) {
    auto hello = wire::encode(seq, wire::Hello{"host:8", "", 1, 0, {}});
    ASSERT_TRUE(hello);
    raw.send(zmq::buffer((*hello)[0].bytes.data(), (*hello)[0].bytes.size()), zmq::send_flags::none);
    // Skip heartbeats until the welcome.
    for (int tries = 0; tries < 10; ++tries) {
      zmq::message_t reply;
      ASSERT_TRUE(raw.recv(reply));
      const std::vector<wire::FrameView> v{{static_cast<const std::byte*>(reply.data()), reply.size()}};
      const auto m = wire::decode(v);
      ASSERT_TRUE(m);
      if (const auto* w = std::get_if<wire::Welcome>(&m->body)) {
        ids.push_back(w->worker_id);
        break;
      }
    }
  }
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], ids[1]);
  const auto e = next_event(server);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ms::MemberEventKind::joined);
  EXPECT_FALSE(server.poll_event(100ms));
  EXPECT_EQ(server.workers().size(), 1u);
}

TEST(Membership, FloodOfGarbageIsRateLimitedInTheLog) {
  CapturedLog log;
  ms::MembershipServer server(server_options(log));
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(server.endpoint());
  for (int i = 0; i < 200; ++i) raw.send(zmq::str_buffer("garbage"), zmq::send_flags::none);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (server.rejected() < 200 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server.rejected(), 200u);
  EXPECT_LE(log.count("dropped a message"), 30u) << log.all();
}

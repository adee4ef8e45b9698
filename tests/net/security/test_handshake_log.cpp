// Refused connections are logged with the peer's address and the reason,
// rate-limited (docs/security.md, "Peers are refused and logged"): a CURVE
// key not authorised, a plain ZeroMQ peer, a wrong server key, HTTP and
// random bytes on a raw TCP socket, a flood; and the servers flowd runs (the
// membership server, the item server) do it too. Every wait is bounded.
#include <chrono>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <gtest/gtest.h>

#include "net/captured_log.hpp"
#include "net/membership/membership.hpp"
#include "net/security/curve.hpp"
#include "net/transport/server.hpp"
#include "store/item_store.hpp"

namespace sec = flowd::net::security;
using flowd::nettest::CapturedLog;

namespace {

using namespace std::chrono_literals;

template <class P>
bool wait_until(P&& p, std::chrono::milliseconds timeout = 10s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!p()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

int port_of(const std::string& endpoint) { return std::stoi(endpoint.substr(endpoint.rfind(':') + 1)); }

// A CURVE ROUTER on loopback with its ZAP handler and handshake monitor, as
// the coordinator sets them up.
struct Server {
  CapturedLog log;
  zmq::context_t ctx{1};
  sec::KeyPair keys = sec::generate_keypair();
  sec::KeyPair worker = sec::generate_keypair();
  sec::ZapHandler zap;
  zmq::socket_t socket;
  std::unique_ptr<sec::HandshakeMonitor> monitor;
  std::string endpoint;

  explicit Server(std::chrono::milliseconds interval = 60s)
      : zap(ctx, authorised(worker), log.sink(), sec::ZapOptions{false, interval}),
        socket(ctx, zmq::socket_type::router) {
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::rcvtimeo, 5000);
    sec::configure_curve_server(socket, zap, keys);
    monitor = std::make_unique<sec::HandshakeMonitor>(ctx, socket, log.sink(), interval);
    endpoint = sec::secure_bind(socket, "tcp://127.0.0.1:*");
  }
  ~Server() { monitor.reset(); }

  static sec::AuthorisedKeys authorised(const sec::KeyPair& k) {
    sec::AuthorisedKeys a;
    a.add(k.public_key, "worker");
    return a;
  }
};

// A raw TCP client: connects, optionally waits until the server has seen the
// connection, sends `bytes`, and waits (bounded) for the server to close it.
// Returns the client's own port: the address the server should name.
int raw_client(int port, const std::string& bytes, const std::function<void()>& after_connect = {}) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(s, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  sockaddr_in me{};
  socklen_t len = sizeof me;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&me), &len);
  if (after_connect) after_connect();
  [[maybe_unused]] const auto sent = ::send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  timeval tv{5, 0};
  ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[256];
  while (::recv(s, buf, sizeof buf, 0) > 0) {
  }
  ::close(s);
  return ntohs(me.sin_port);
}

const std::string http = "GET / HTTP/1.1\r\nHost: coordinator\r\nUser-Agent: curl/8.0\r\n\r\n";

std::string random_bytes(std::size_t n) {
  std::mt19937 rng(12);
  std::string s(n, '\0');
  for (auto& c : s)
    c = static_cast<char>(rng());
  s[0] = 'R';  // never the 0xff of a ZMTP greeting
  return s;
}

// A client whose connection the monitor has already seen: its address is known.
int patient_client(Server& s, const std::string& bytes) {
  const auto before = s.monitor->accepted();
  return raw_client(port_of(s.endpoint), bytes,
                    [&] { EXPECT_TRUE(wait_until([&] { return s.monitor->accepted() > before; })); });
}

}  // namespace

TEST(HandshakeLog, AnHttpRequestIsLoggedOnceWithThePeerAddress) {
  Server s;
  const int port = patient_client(s, http);
  const std::string from = "refused a connection from 127.0.0.1:" + std::to_string(port) + " to " + s.endpoint;
  ASSERT_TRUE(s.log.wait_for(from)) << s.log.all();
  EXPECT_EQ(s.log.count(from + ": not a ZeroMQ peer"), 1u) << s.log.all();
  EXPECT_EQ(s.log.count("refused"), 1u) << s.log.all();
}

TEST(HandshakeLog, RandomBytesAreLoggedOnceWithThePeerAddress) {
  Server s;
  const int port = patient_client(s, random_bytes(300));
  const std::string from = "refused a connection from 127.0.0.1:" + std::to_string(port);
  ASSERT_TRUE(s.log.wait_for(from)) << s.log.all();
  EXPECT_EQ(s.log.count("refused"), 1u) << s.log.all();
}

TEST(HandshakeLog, APeerThatSendsAtOnceIsStillLoggedOnce) {
  // libzmq may drop it before its address can be read: then the line says so.
  Server s;
  raw_client(port_of(s.endpoint), http);
  ASSERT_TRUE(s.log.wait_for("refused a connection from ")) << s.log.all();
  EXPECT_TRUE(wait_until([&] { return s.monitor->failures() >= 1; }));
  EXPECT_EQ(s.log.count("refused"), 1u) << s.log.all();
  EXPECT_EQ(s.log.count("not a ZeroMQ peer"), 1u) << s.log.all();
}

// ZeroMQ peers fail within one round trip, often before the monitor can read
// the address (docs/security.md): the line names it, or says it is unknown.
const std::regex refused_from(
    "refused a connection from (127\\.0\\.0\\.1:[0-9]+|an unknown address \\(closed before "
    "it could be read\\)) to tcp://127\\.0\\.0\\.1:[0-9]+: ");

TEST(HandshakeLog, APlainZeroMqPeerIsLoggedOnce) {
  Server s;
  std::vector<zmq::socket_t> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back(s.ctx, zmq::socket_type::dealer);
    clients.back().set(zmq::sockopt::linger, 0);
    clients.back().connect(s.endpoint);  // no keys: NULL mechanism
    ASSERT_TRUE(wait_until([&] { return s.monitor->failures() >= static_cast<std::uint64_t>(i + 1); })) << s.log.all();
  }
  EXPECT_TRUE(std::regex_search(s.log.all(), refused_from)) << s.log.all();
  // Three refusals from one host: logged once (or once more when some
  // addresses could be read and others not), the rest summarised later.
  const auto lines = s.log.count("does not use CURVE");
  EXPECT_GE(lines, 1u) << s.log.all();
  EXPECT_LE(lines, 2u) << s.log.all();
  EXPECT_EQ(s.log.count("refused"), lines) << s.log.all();
}

TEST(HandshakeLog, AWrongServerKeyIsLoggedOnce) {
  Server s;
  zmq::socket_t client(s.ctx, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  sec::configure_curve_client(client, {sec::generate_keypair().public_key, s.worker});
  client.connect(s.endpoint);
  ASSERT_TRUE(s.log.wait_for("failed cryptographically")) << s.log.all();
  EXPECT_TRUE(std::regex_search(s.log.all(), refused_from)) << s.log.all();
}

TEST(HandshakeLog, AKeyNotAuthorisedIsLoggedByZapOnlyWithItsAddress) {
  Server s;
  const auto intruder = sec::generate_keypair();
  {
    zmq::socket_t client(s.ctx, zmq::socket_type::dealer);
    client.set(zmq::sockopt::linger, 0);
    sec::configure_curve_client(client, {s.keys.public_key, intruder});
    client.connect(s.endpoint);
    ASSERT_TRUE(s.log.wait_for("refused CURVE peer at 127.0.0.1: public key " + intruder.public_key)) << s.log.all();
  }
  // The monitor sees the refusal (AUTH) and the close that follows, and
  // leaves both to ZAP: a patient HTTP client after it is the next line.
  patient_client(s, http);
  ASSERT_TRUE(s.log.wait_for("not a ZeroMQ peer")) << s.log.all();
  EXPECT_EQ(s.log.count("refused"), 2u) << s.log.all();
}

TEST(HandshakeLog, AnAuthorisedWorkerComingAndGoingIsNotARefusal) {
  Server s;
  for (int i = 0; i < 3; ++i) {
    zmq::socket_t client(s.ctx, zmq::socket_type::dealer);
    client.set(zmq::sockopt::linger, 0);
    sec::configure_curve_client(client, {s.keys.public_key, s.worker});
    client.connect(s.endpoint);
    client.send(zmq::str_buffer("hello"), zmq::send_flags::none);
    std::vector<zmq::message_t> got;
    ASSERT_TRUE(zmq::recv_multipart(s.socket, std::back_inserter(got))) << s.log.all();
  }
  EXPECT_TRUE(wait_until([&] { return s.monitor->accepted() >= 3; }));
  // The closes reach the monitor too; none of them is a refusal.
  raw_client(port_of(s.endpoint), http);  // a marker: logged after the three closes
  ASSERT_TRUE(s.log.wait_for("not a ZeroMQ peer")) << s.log.all();
  EXPECT_EQ(s.log.count("refused"), 1u) << s.log.all();
}

TEST(HandshakeLog, AFloodIsSummarisedPerPeer) {
  Server s(1s);
  constexpr int flood = 20;
  for (int i = 0; i < flood; ++i)
    raw_client(port_of(s.endpoint), http);
  ASSERT_TRUE(wait_until([&] { return s.monitor->failures() >= flood; })) << s.log.all();
  // Every refusal is in a full line or in a summary once its interval ends.
  const std::regex summary("\\.\\.\\. and ([0-9]+) more refusals? of connections from .+? to ");
  const auto accounted = [&] {
    const std::string all = s.log.all();
    std::size_t n = s.log.count("refused a connection from ");
    for (std::sregex_iterator it(all.begin(), all.end(), summary), end; it != end; ++it)
      n += std::stoul((*it)[1]);
    return n;
  };
  ASSERT_TRUE(wait_until([&] { return accounted() == flood; }, 20s)) << s.log.all();
  EXPECT_LE(s.log.count("refused a connection from "), static_cast<std::size_t>(flood / 2)) << s.log.all();
  EXPECT_GE(s.log.count("... and "), 1u) << s.log.all();
}

TEST(HandshakeLog, TheMembershipAndItemServersLogRefusals) {
  const auto keys = sec::generate_keypair();
  sec::AuthorisedKeys auth;
  auth.add(sec::generate_keypair().public_key, "w");
  {
    CapturedLog log;
    flowd::net::membership::ServerOptions o;
    o.curve = flowd::net::membership::CurveServerKeys{keys, auth};
    o.log = log.sink();
    flowd::net::membership::MembershipServer server(o);
    raw_client(port_of(server.endpoint()), http);
    EXPECT_TRUE(log.wait_for("refused a connection from ")) << log.all();
  }
  {
    CapturedLog log;
    flowd::store::MemoryItemStore store;
    flowd::net::transport::ServerOptions o;
    o.curve = flowd::net::transport::CurveServerKeys{keys, auth};
    o.log = log.sink();
    flowd::net::transport::ItemServer server(store, o);
    raw_client(port_of(server.endpoint()), http);
    EXPECT_TRUE(log.wait_for("refused a connection from ")) << log.all();
  }
}

TEST(HandshakeLog, AnAuthorisedKeysFileWithNoKeysIsRefused) {
  const auto dir = std::filesystem::path(FLOWD_TEST_TMP) / "HandshakeLog" / "empty_keys";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "authorised_keys") << "# workers of the imaging cluster\n\n";
  try {
    sec::AuthorisedKeys::load(dir / "authorised_keys");
    FAIL() << "an empty authorised keys file was accepted";
  } catch (const flowd::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((dir / "authorised_keys").string() + " lists no keys"), std::string::npos) << what;
  }
}

#pragma once
// Authentication of ZeroMQ peers: the ZAP handler (ZeroMQ RFC 27) that
// decides which CURVE keys a coordinator accepts, and the helpers that put
// sockets in CURVE server, CURVE client or local (NULL) mode.
//
// Order matters, because libzmq accepts every CURVE client when no ZAP
// handler is bound in the context: create the ZapHandler right after the
// zmq::context_t (so it is destroyed before it), then configure the server
// socket with it, then bind. configure_curve_server() takes the handler to
// make that order hard to get wrong.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <zmq.hpp>

#include "flowd/operator.hpp"
#include "net/security/keys.hpp"

namespace flowd::net::security {

// Where refusals and handshake failures are reported. The library does not
// link the engine's Logger; log_to() adapts one (or anything with
// log(LogLevel, std::string_view)).
using SecurityLog = std::function<void(LogLevel, std::string_view)>;

template <class LoggerLike>
SecurityLog log_to(LoggerLike& logger) {
  return [&logger](LogLevel level, std::string_view message) { logger.log(level, message); };
}

struct ZapOptions {
  // Accept NULL-mechanism peers on sockets set up by configure_local_server()
  // when they come over ipc:// (never over TCP) from a process of this user. For local runs that do not
  // want ephemeral keys; flowd's own --workers mode uses keys anyway.
  bool allow_local_null = false;
  // A refused peer reconnects every ZMQ_RECONNECT_IVL (100 ms by default):
  // log each (address, key) once per interval, and how many more came in it
  // in one line when the interval ends.
  std::chrono::milliseconds refusal_log_interval{std::chrono::seconds(60)};
};

class ZapHandler {
public:
  static constexpr const char* curve_domain = "flowd";
  static constexpr const char* local_domain = "flowd-local";

  // Binds inproc://zeromq.zap.01 in `ctx` before returning (so sockets
  // configured afterwards are covered) and answers requests on a thread of
  // its own. Throws flowd::Error when the context already has a ZAP handler
  // or CURVE is unavailable.
  ZapHandler(zmq::context_t& ctx, AuthorisedKeys keys, SecurityLog log, ZapOptions options = {});
  // Stops the thread (within ~100 ms). Must run before the context is
  // terminated: declare the handler after the context it serves.
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Replaces the authorised keys (e.g. after the file changed); connections
  // already established are not affected.
  void set_authorised(AuthorisedKeys keys);

  std::uint64_t allowed() const noexcept { return allowed_.load(); }
  std::uint64_t refused() const noexcept { return refused_.load(); }
  bool allows_local_null() const noexcept { return options_.allow_local_null; }

private:
  struct State;
  void run(zmq::socket_t zap);

  ZapOptions options_;
  std::shared_ptr<State> state_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> allowed_{0}, refused_{0};
  std::thread thread_;
};

// A CURVE server: clients must know `server.public_key`, and only keys the
// handler authorises get through. The ZAP reply's user id is the key's name
// from the authorised keys (or the key itself when unnamed): a ROUTER reads
// it per message with zmq_msg_gets(msg, "User-Id").
void configure_curve_server(zmq::socket_ref socket, const ZapHandler& zap, const KeyPair& server);

// A CURVE client of the server whose public key is `creds.server_public_key`.
void configure_curve_client(zmq::socket_ref socket, const ClientCredentials& creds);

// A NULL-mechanism server that still asks the ZAP handler, which accepts only
// ipc peers, and only when the handler was made with allow_local_null.
// Throws when it was not.
void configure_local_server(zmq::socket_ref socket, const ZapHandler& zap);

// Binds after checking the endpoint against the socket's configuration
// (policy.hpp): without CURVE only loopback, ipc and inproc; a local NULL
// server only ipc and inproc. "localhost" becomes 127.0.0.1, and IPv6
// addresses switch ZMQ_IPV6 on. Returns ZMQ_LAST_ENDPOINT, which carries the
// actual port when binding port '*'.
std::string secure_bind(zmq::socket_ref socket, std::string_view endpoint);
// Connects after the same check: without CURVE only to local endpoints.
void secure_connect(zmq::socket_ref socket, std::string_view endpoint);

// Logs the refused connections the ZAP handler never hears of, with the
// peer's address when it can be read: a peer without CURVE (plain ZeroMQ),
// one with a wrong server key (the handshake fails cryptographically), and
// anything that is not ZeroMQ at all (HTTP, random bytes, a port scan).
// Refusals by ZAP (a CURVE key not authorised) are logged by the ZapHandler,
// with address and key, and not repeated here. Per peer host and reason, the
// first refusal in each `log_interval` is logged in full and the others in
// one summary line when the interval ends.
//
// Create it before the socket binds (so no connection is missed) and before
// the socket's owning thread starts using it; destroy it after that thread
// has stopped using the socket and before the socket closes (declare it
// after the socket): creating and destroying it configure the socket.
class HandshakeMonitor {
public:
  HandshakeMonitor(zmq::context_t& ctx, zmq::socket_ref socket, SecurityLog log,
                   std::chrono::milliseconds log_interval = std::chrono::seconds(60));
  ~HandshakeMonitor();
  HandshakeMonitor(const HandshakeMonitor&) = delete;
  HandshakeMonitor& operator=(const HandshakeMonitor&) = delete;

  // Refused connections seen (logged or summarised).
  std::uint64_t failures() const noexcept { return failures_.load(); }
  // Connections accepted so far, refused or not.
  std::uint64_t accepted() const noexcept { return accepted_.load(); }

private:
  void run(zmq::socket_t events, SecurityLog log, std::chrono::milliseconds log_interval);

  zmq::socket_ref socket_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> failures_{0}, accepted_{0};
  std::thread thread_;
};

}  // namespace flowd::net::security

#include "net/security/zap.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <unistd.h>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zmq_addon.hpp>

#include "flowd/error.hpp"
#include "net/security/policy.hpp"

namespace flowd::net::security {

namespace {

// How often the handler threads look at their stop flag; bounds the time a
// destructor waits.
constexpr int poll_ms = 100;

constexpr const char* zap_endpoint = "inproc://zeromq.zap.01";

// The first refusal per subject (a peer, and what it did) in each interval is
// logged in full; the others are counted and summarised in one line when the
// interval ends: a refused peer retries every 100 ms, a scanner or a flood
// far more often, and neither may flood the log.
class RateLimit {
public:
  explicit RateLimit(std::chrono::milliseconds interval) : interval_(interval) {}

  // True: log this refusal in full. False: counted for the summary.
  bool admit(const std::string& subject, std::string_view what) {
    const auto now = std::chrono::steady_clock::now();
    if (seen_.size() > max_subjects) seen_.clear();  // a scan of many peers: forget them rather than grow
    auto [it, fresh] = seen_.try_emplace(subject, Entry{now, 0, std::string(what)});
    if (fresh) return true;
    if (now - it->second.since >= interval_) {
      it->second = Entry{now, 0, std::string(what)};
      return true;
    }
    ++it->second.held;
    return false;
  }

  // "... and 37 more refusals of <what> in the last 60 s" for each subject
  // whose interval has ended with refusals held back; forgets ended ones.
  std::vector<std::string> due() {
    std::vector<std::string> lines;
    const auto now = std::chrono::steady_clock::now();
    for (auto it = seen_.begin(); it != seen_.end();) {
      const auto age = now - it->second.since;
      if (age < interval_) {
        ++it;
        continue;
      }
      if (it->second.held > 0)
        lines.push_back("... and " + std::to_string(it->second.held) + " more refusal" +
                        (it->second.held == 1 ? "" : "s") + " of " + it->second.what + " in the last " +
                        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(age).count()) + " s");
      it = seen_.erase(it);
    }
    return lines;
  }

private:
  static constexpr std::size_t max_subjects = 4096;
  struct Entry {
    std::chrono::steady_clock::time_point since;
    std::uint64_t held;
    std::string what;  // for the summary
  };
  std::chrono::milliseconds interval_;
  std::map<std::string, Entry> seen_;
};

void log_due(RateLimit& limit, const SecurityLog& log) {
  for (const auto& line : limit.due())
    log(LogLevel::warning, line);
}

// libzmq's ZAP address for an ipc peer is "localhost:UID:GID:PID" (from
// SO_PEERCRED); TCP peers give a numeric IP address, never this shape. Local
// mode also wants the peer to run as this user: other users on the machine
// may reach the socket if its directory lets them.
bool is_same_user_ipc_peer(std::string_view a) {
  constexpr std::string_view prefix = "localhost:";
  if (a.substr(0, prefix.size()) != prefix) return false;
  a.remove_prefix(prefix.size());
  std::vector<std::string_view> fields;
  while (true) {
    const auto end = a.find(':');
    fields.push_back(a.substr(0, end));
    if (end == std::string_view::npos) break;
    a.remove_prefix(end + 1);
  }
  if (fields.size() != 3) return false;
  for (auto f : fields) {
    if (f.empty() || f.size() > 10) return false;
    for (char c : f)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return std::stoul(std::string(fields[0])) == ::geteuid();
}

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return out;
}

}  // namespace

struct ZapHandler::State {
  std::mutex m;
  AuthorisedKeys keys;
  SecurityLog log;
  RateLimit limit;
  State(AuthorisedKeys k, SecurityLog l, std::chrono::milliseconds interval)
      : keys(std::move(k)), log(std::move(l)), limit(interval) {}
};

ZapHandler::ZapHandler(zmq::context_t& ctx, AuthorisedKeys keys, SecurityLog log, ZapOptions options)
    : options_(options),
      state_(std::make_shared<State>(std::move(keys), std::move(log), options.refusal_log_interval)) {
  require_curve();
  if (!state_->log) state_->log = [](LogLevel, std::string_view) {};
  zmq::socket_t zap(ctx, zmq::socket_type::rep);
  zap.set(zmq::sockopt::linger, 0);
  zap.set(zmq::sockopt::rcvtimeo, poll_ms);
  try {
    zap.bind(zap_endpoint);
  } catch (const zmq::error_t& e) {
    if (e.num() == EADDRINUSE)
      throw Error("this ZeroMQ context already has a ZAP handler (inproc://zeromq.zap.01 is bound)");
    throw Error(std::string("cannot start the ZAP handler: ") + e.what());
  }
  // The socket moves to the thread that alone uses it from now on; thread
  // creation orders the two threads' accesses, as libzmq requires.
  thread_ = std::thread([this, s = std::move(zap)]() mutable { run(std::move(s)); });
}

ZapHandler::~ZapHandler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::set_authorised(AuthorisedKeys keys) {
  std::lock_guard lock(state_->m);
  state_->keys = std::move(keys);
}

void ZapHandler::run(zmq::socket_t zap) {
  // Closing a socket releases its inproc name only later, in libzmq's reaper;
  // unbinding releases it now, so a new handler can follow this one at once.
  struct Unbind {
    zmq::socket_t& s;
    ~Unbind() {
      try {
        s.unbind(zap_endpoint);
      } catch (const zmq::error_t&) {
        // ETERM: the context is going, and the name with it.
      }
    }
  } unbind{zap};
  auto& st = *state_;
  while (!stop_) {
    {
      std::lock_guard lock(st.m);
      log_due(st.limit, st.log);
    }
    std::vector<zmq::message_t> req;
    try {
      if (!zmq::recv_multipart(zap, std::back_inserter(req))) continue;  // timeout: look at stop_
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      // ETERM: the context is going away; nothing left to authenticate.
      if (e.num() != ETERM) st.log(LogLevel::error, std::string("ZAP handler stopped: ") + e.what());
      return;
    }
    // RFC 27: version, request id, domain, address, routing id, mechanism,
    // credentials...
    const auto frame = [&](std::size_t i) { return i < req.size() ? req[i].to_string() : std::string(); };
    const std::string request_id = frame(1), domain = frame(2), address = frame(3), mechanism = frame(5);
    std::string status = "400", text, user_id;
    if (req.size() < 6 || frame(0) != "1.0") {
      status = "500";
      text = "malformed ZAP request";
      st.log(LogLevel::error, "ZAP: malformed request from libzmq (" + std::to_string(req.size()) + " frames)");
    } else if (mechanism == "CURVE" && req.size() == 7 && req[6].size() == 32) {
      const std::string key = z85_from_binary(req[6].to_string_view());
      std::optional<std::string> name;
      {
        std::lock_guard lock(st.m);
        name = st.keys.find(key);
      }
      if (name) {
        status = "200";
        text = "OK";
        user_id = name->empty() ? key : *name;
        ++allowed_;
        st.log(LogLevel::debug, "accepted CURVE peer " + (name->empty() ? std::string() : "'" + *name + "' ") + "at " +
                                    printable(address) + " (key " + key + ")");
      } else {
        text = "key not authorised";
        ++refused_;
        std::lock_guard lock(st.m);
        if (st.limit.admit("curve|" + address + "|" + key,
                           "CURVE key " + key + " from " + printable(address) + " (not authorised)"))
          st.log(LogLevel::warning, "refused CURVE peer at " + printable(address) + ": public key " + key +
                                        " is not in the authorised keys");
      }
    } else if (mechanism == "NULL" && options_.allow_local_null && domain == local_domain &&
               is_same_user_ipc_peer(address)) {
      status = "200";
      text = "OK";
      user_id = "local";
      ++allowed_;
    } else {
      text = mechanism == "NULL" ? "unauthenticated peers are not accepted" : "mechanism not accepted";
      ++refused_;
      std::lock_guard lock(st.m);
      if (st.limit.admit(mechanism + "|" + address, printable(mechanism) + " peers from " + printable(address)))
        st.log(LogLevel::warning, "refused " + printable(mechanism) + " peer at " + printable(address) +
                                      " (ZAP domain '" + printable(domain) + "'): " +
                                      (mechanism == "NULL" ? "peers without CURVE keys are accepted only over ipc, "
                                                             "from this user, in local mode"
                                                           : "flowd accepts only CURVE"));
    }
    std::vector<zmq::message_t> reply;
    reply.emplace_back(std::string_view("1.0"));
    reply.emplace_back(request_id);
    reply.emplace_back(status);
    reply.emplace_back(text);
    reply.emplace_back(user_id);
    reply.emplace_back();
    try {
      zmq::send_multipart(zap, reply);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      st.log(LogLevel::error, std::string("ZAP handler cannot reply: ") + e.what());
    }
  }
}

void configure_curve_server(zmq::socket_ref socket, const ZapHandler&, const KeyPair& server) {
  require_curve();
  if (!is_z85_key(server.secret_key)) throw Error("malformed CURVE server secret key");
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, server.secret_key);
  socket.set(zmq::sockopt::zap_domain, ZapHandler::curve_domain);
}

void configure_curve_client(zmq::socket_ref socket, const ClientCredentials& creds) {
  require_curve();
  if (!is_z85_key(creds.server_public_key)) throw Error("malformed CURVE server public key");
  if (!is_z85_key(creds.own.public_key) || !is_z85_key(creds.own.secret_key))
    throw Error("malformed CURVE client key pair");
  socket.set(zmq::sockopt::curve_serverkey, creds.server_public_key);
  socket.set(zmq::sockopt::curve_publickey, creds.own.public_key);
  socket.set(zmq::sockopt::curve_secretkey, creds.own.secret_key);
}

void configure_local_server(zmq::socket_ref socket, const ZapHandler& zap) {
  if (!zap.allows_local_null()) throw Error("local sockets without keys need a ZAP handler made with allow_local_null");
  socket.set(zmq::sockopt::zap_domain, ZapHandler::local_domain);
}

namespace {
bool has_curve(zmq::socket_ref socket) { return socket.get(zmq::sockopt::mechanism) == ZMQ_CURVE; }
}  // namespace

std::string secure_bind(zmq::socket_ref socket, std::string_view endpoint) {
  const std::string ep = normalise_bind_endpoint(endpoint);
  const bool curve = has_curve(socket);
  check_bind_endpoint(ep, curve);
  const auto parsed = parse_endpoint(ep);
  if (curve && !socket.get(zmq::sockopt::curve_server))
    throw Error("refusing to bind " + ep + ": the socket is a CURVE client, not a server");
  if (!curve && socket.get(zmq::sockopt::zap_domain) == ZapHandler::local_domain && parsed.transport == Transport::tcp)
    throw Error("refusing to bind " + ep + ": a local socket without keys takes only ipc:// or inproc:// endpoints");
  if (parsed.transport == Transport::tcp && parsed.address.find(':') != std::string::npos)
    socket.set(zmq::sockopt::ipv6, true);
  try {
    socket.bind(ep);
  } catch (const zmq::error_t& e) {
    throw Error("cannot bind " + ep + ": " + e.what());
  }
  return socket.get(zmq::sockopt::last_endpoint);
}

void secure_connect(zmq::socket_ref socket, std::string_view endpoint) {
  const std::string ep(endpoint);
  check_connect_endpoint(ep, has_curve(socket));
  const auto parsed = parse_endpoint(ep);
  if (parsed.transport == Transport::tcp && parsed.address.find(':') != std::string::npos)
    socket.set(zmq::sockopt::ipv6, true);
  try {
    socket.connect(ep);
  } catch (const zmq::error_t& e) {
    throw Error("cannot connect to " + ep + ": " + e.what());
  }
}

namespace {

std::string handshake_reason(std::uint16_t event, std::uint32_t value) {
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    return "handshake failed (timeout, or the peer closed the connection during it)";
  switch (value) {
    case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
      return "the peer does not use CURVE (plain ZeroMQ or another security mechanism): unauthenticated peer refused";
    case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
      return "CURVE handshake failed cryptographically (the peer has a wrong coordinator or server key?)";
    case ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE: return "CURVE key exchange failed";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%08x", value);
      return std::string("protocol error ") + buf + " (malformed ZeroMQ handshake)";
    }
  }
}

// libzmq closes a connection whose first bytes are not a ZMTP 3 greeting
// (with ZAP on, it refuses ZMTP 1.0) without any handshake event.
constexpr const char* not_zmtp_reason =
    "not a ZeroMQ peer: it sent something other than a ZMTP 3 greeting (HTTP, random bytes, an old ZeroMQ)";

// "10.0.0.5:41234" / "[fe80::1]:41234", or empty when the socket is gone.
std::string peer_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    if (!::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host)) return {};
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (!::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host)) return {};
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return {};  // ipc peers: no address of interest
}

// "10.0.0.5" of "10.0.0.5:41234": refusals are counted per host, whatever port each attempt comes from.
std::string host_of(const std::string& peer) {
  const auto colon = peer.rfind(':');
  return colon == std::string::npos ? peer : peer.substr(0, colon);
}

std::atomic<std::uint64_t> monitor_serial{0};

struct MonitorEvent {
  std::uint16_t event = 0;
  std::uint32_t value = 0;  // the fd for ACCEPTED and DISCONNECTED, else an error code
  std::string endpoint;     // the local endpoint (libzmq's version 1 events name no peer)
};

// One event, or nullopt on timeout / anything that is not an event.
std::optional<MonitorEvent> receive_event(zmq::socket_t& events, zmq::recv_flags flags) {
  std::vector<zmq::message_t> ev;
  if (!zmq::recv_multipart(events, std::back_inserter(ev), flags)) return std::nullopt;
  // libzmq's version 1 event: [u16 event, u32 value] then the endpoint.
  if (ev.size() != 2 || ev[0].size() != 6) return MonitorEvent{};
  MonitorEvent e;
  std::memcpy(&e.event, ev[0].data(), sizeof e.event);
  std::memcpy(&e.value, static_cast<const char*>(ev[0].data()) + 2, sizeof e.value);
  e.endpoint = printable(ev[1].to_string_view());
  return e;
}

}  // namespace

HandshakeMonitor::HandshakeMonitor(zmq::context_t& ctx, zmq::socket_ref socket, SecurityLog log,
                                   std::chrono::milliseconds log_interval)
    : socket_(socket) {
  if (!log) log = [](LogLevel, std::string_view) {};
  const std::string address =
      "inproc://flowd-handshake-monitor-" + std::to_string(::getpid()) + "-" + std::to_string(monitor_serial++);
  constexpr int events = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                         ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                         ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
  if (zmq_socket_monitor(socket.handle(), address.c_str(), events) != 0)
    throw Error(std::string("cannot monitor the socket's handshakes: ") + zmq_strerror(zmq_errno()));
  zmq::socket_t pair(ctx, zmq::socket_type::pair);
  pair.set(zmq::sockopt::linger, 0);
  pair.set(zmq::sockopt::rcvtimeo, poll_ms);
  try {
    pair.connect(address);
  } catch (const zmq::error_t& e) {
    zmq_socket_monitor(socket.handle(), nullptr, 0);
    throw Error(std::string("cannot monitor the socket's handshakes: ") + e.what());
  }
  thread_ = std::thread([this, s = std::move(pair), log = std::move(log), log_interval]() mutable {
    run(std::move(s), std::move(log), log_interval);
  });
}

HandshakeMonitor::~HandshakeMonitor() {
  // Detach first: libzmq's I/O threads send events to the monitor socket, and
  // must never find it without a reader.
  zmq_socket_monitor(socket_.handle(), nullptr, 0);
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

// Version 1 events carry no peer address and a handshake's outcome carries
// no fd, so the monitor pieces each connection together. The socket's
// context has one I/O thread (flowd makes every context so), which emits a
// connection's events in order: ACCEPTED(fd), then its handshake's outcome
// (none for a peer that is not ZMTP 3), then, for a failure before ZAP, at
// once DISCONNECTED(fd). So such a failure belongs to the next DISCONNECTED,
// and a connection that closes with no outcome (success, or refusal by ZAP)
// emitted since it was accepted never got as far as one. The address is read from the fd when
// ACCEPTED arrives: best effort, since libzmq may have closed the fd already
// (a peer sending garbage is dropped within microseconds); then the line says
// the address is unknown rather than guess from a reused fd.
void HandshakeMonitor::run(zmq::socket_t events, SecurityLog log, std::chrono::milliseconds log_interval) {
  RateLimit limit(log_interval);
  struct Connection {
    std::string peer;             // empty: unknown
    std::uint64_t outcomes = 0;  // handshakes ended on the socket before it was accepted
  };
  std::map<std::uint32_t, Connection> open;  // by fd
  std::uint64_t outcomes = 0;  // handshakes succeeded or refused by ZAP
  std::optional<MonitorEvent> failure;  // waiting for its DISCONNECTED
  std::deque<MonitorEvent> queue;       // received, not yet handled
  const auto drain = [&] {
    while (auto e = receive_event(events, zmq::recv_flags::dontwait))
      queue.push_back(std::move(*e));
  };
  const auto queued = [&](std::uint16_t event, std::uint32_t fd) {
    return std::any_of(queue.begin(), queue.end(), [&](const auto& e) { return e.event == event && e.value == fd; });
  };
  while (!stop_) {
    log_due(limit, log);
    MonitorEvent e;
    try {
      if (queue.empty()) {
        auto got = receive_event(events, zmq::recv_flags::none);
        if (!got) continue;  // timeout: look at stop_
        queue.push_back(std::move(*got));
      }
      e = std::move(queue.front());
      queue.pop_front();
      switch (e.event) {
        case ZMQ_EVENT_MONITOR_STOPPED: return;
        case ZMQ_EVENT_ACCEPTED: {
          // Already disconnected (its fd may be another connection's by now):
          // no address. Reused meanwhile: neither.
          drain();
          std::string peer =
              queued(ZMQ_EVENT_DISCONNECTED, e.value) ? std::string() : peer_of(static_cast<int>(e.value));
          drain();
          if (queued(ZMQ_EVENT_ACCEPTED, e.value)) peer.clear();
          open[e.value] = {std::move(peer), outcomes};
          ++accepted_;
          break;
        }
        // A refusal by ZAP is logged by the ZapHandler, with the key; the
        // connection may stay open a while (libzmq sends an ERROR first), so
        // it is an outcome like a success, not a failure for the next close.
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: ++outcomes; break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: failure = e; break;
        case ZMQ_EVENT_DISCONNECTED: {
          const auto it = open.find(e.value);
          const bool known = it != open.end();
          const Connection c = known ? it->second : Connection{};
          if (known) open.erase(it);
          std::optional<std::string> reason;
          if (failure) reason = handshake_reason(failure->event, failure->value);
          else if (known && c.outcomes == outcomes) reason = not_zmtp_reason;
          failure.reset();
          if (!reason) break;
          ++failures_;
          const std::string host = c.peer.empty() ? "an unknown address" : host_of(c.peer);
          if (limit.admit(host + "|" + *reason, "connections from " + host + " to " + e.endpoint))
            log(LogLevel::warning,
                "refused a connection from " +
                    (c.peer.empty() ? std::string("an unknown address (closed before it could be read)") : c.peer) +
                    " to " + e.endpoint + ": " + *reason);
          break;
        }
        default: break;
      }
    } catch (const zmq::error_t& err) {
      if (err.num() == EINTR) continue;
      return;
    }
  }
}

}  // namespace flowd::net::security

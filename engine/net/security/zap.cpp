#include "net/security/zap.hpp"

#include <zmq_addon.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "flowd/error.hpp"
#include "net/security/policy.hpp"

namespace flowd::net::security {

namespace {

// How often the handler threads look at their stop flag; bounds the time a
// destructor waits.
constexpr int poll_ms = 100;

constexpr const char* zap_endpoint = "inproc://zeromq.zap.01";

// Once per interval per subject, with how many were held back meanwhile: a
// refused peer retries every 100 ms and must not flood the log.
class RateLimit {
public:
  explicit RateLimit(std::chrono::milliseconds interval) : interval_(interval) {}

  // nullopt: stay quiet; else the number of suppressed repeats to mention.
  std::optional<std::uint64_t> admit(const std::string& subject) {
    const auto now = std::chrono::steady_clock::now();
    if (seen_.size() > 4096) prune(now);
    auto [it, fresh] = seen_.try_emplace(subject, Entry{now, 0});
    if (fresh) return 0;
    if (now - it->second.last < interval_) {
      ++it->second.suppressed;
      return std::nullopt;
    }
    const auto n = it->second.suppressed;
    it->second = Entry{now, 0};
    return n;
  }

private:
  struct Entry {
    std::chrono::steady_clock::time_point last;
    std::uint64_t suppressed;
  };
  void prune(std::chrono::steady_clock::time_point now) {
    for (auto it = seen_.begin(); it != seen_.end();)
      it = now - it->second.last >= interval_ ? seen_.erase(it) : std::next(it);
    // Many distinct peers inside one interval (a scan): forget them all
    // rather than grow without bound; the worst case is a repeated line.
    if (seen_.size() > 4096) seen_.clear();
  }

  std::chrono::milliseconds interval_;
  std::map<std::string, Entry> seen_;
};

std::string suppressed_note(std::uint64_t n) {
  return n == 0 ? std::string() : " (" + std::to_string(n) + " similar refusals not logged)";
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
    : options_(options), state_(std::make_shared<State>(std::move(keys), std::move(log), options.refusal_log_interval)) {
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
        st.log(LogLevel::debug, "accepted CURVE peer " + (name->empty() ? std::string() : "'" + *name + "' ") +
                                    "at " + printable(address) + " (key " + key + ")");
      } else {
        text = "key not authorised";
        ++refused_;
        std::lock_guard lock(st.m);
        if (auto n = st.limit.admit("curve|" + address + "|" + key))
          st.log(LogLevel::warning, "refused CURVE peer at " + printable(address) + ": public key " + key +
                                        " is not in the authorised keys" + suppressed_note(*n));
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
      if (auto n = st.limit.admit(mechanism + "|" + address))
        st.log(LogLevel::warning, "refused " + printable(mechanism) + " peer at " + printable(address) +
                                      " (ZAP domain '" + printable(domain) + "'): " +
                                      (mechanism == "NULL" ? "peers without CURVE keys are accepted only over ipc, "
                                                             "from this user, in local mode"
                                                           : "flowd accepts only CURVE") +
                                      suppressed_note(*n));
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
  if (!zap.allows_local_null())
    throw Error("local sockets without keys need a ZAP handler made with allow_local_null");
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
  if (!curve && socket.get(zmq::sockopt::zap_domain) == ZapHandler::local_domain &&
      parsed.transport == Transport::tcp)
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
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) return "handshake failed (timeout or connection closed)";
  switch (value) {
    case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
      return "the peer does not use CURVE (security mechanism mismatch): unauthenticated peer refused";
    case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
      return "CURVE handshake failed cryptographically (the peer has a wrong server key?)";
    case ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE:
      return "CURVE key exchange failed";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%08x", value);
      return std::string("protocol error ") + buf + " (malformed handshake)";
    }
  }
}

std::atomic<std::uint64_t> monitor_serial{0};

}  // namespace

HandshakeMonitor::HandshakeMonitor(zmq::context_t& ctx, zmq::socket_ref socket, SecurityLog log,
                                   std::chrono::milliseconds log_interval)
    : socket_(socket) {
  if (!log) log = [](LogLevel, std::string_view) {};
  const std::string address = "inproc://flowd-handshake-monitor-" + std::to_string(::getpid()) + "-" +
                              std::to_string(monitor_serial++);
  // Not AUTH failures: the ZAP handler has logged those, with the key.
  constexpr int events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL;
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

void HandshakeMonitor::run(zmq::socket_t events, SecurityLog log, std::chrono::milliseconds log_interval) {
  RateLimit limit(log_interval);
  while (!stop_) {
    std::vector<zmq::message_t> ev;
    try {
      if (!zmq::recv_multipart(events, std::back_inserter(ev))) continue;
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      return;
    }
    // libzmq's version 1 event: [u16 event, u32 value] then the endpoint.
    if (ev.size() != 2 || ev[0].size() != 6) continue;
    std::uint16_t event;
    std::uint32_t value;
    std::memcpy(&event, ev[0].data(), sizeof event);
    std::memcpy(&value, static_cast<const char*>(ev[0].data()) + 2, sizeof value);
    if (event == ZMQ_EVENT_MONITOR_STOPPED) return;
    ++failures_;
    const std::string endpoint = printable(ev[1].to_string_view());
    if (auto n = limit.admit(std::to_string(event) + "|" + std::to_string(value) + "|" + endpoint))
      log(LogLevel::warning,
          "refused a connection on " + endpoint + ": " + handshake_reason(event, value) + suppressed_note(*n));
  }
}

}  // namespace flowd::net::security

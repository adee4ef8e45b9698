#include <algorithm>
#include <map>
#include <utility>

#include "net/membership/detail.hpp"
#include "net/zio/zio.hpp"
#include "net/membership/membership.hpp"

namespace flowd::net::membership {

namespace {
using Clock = std::chrono::steady_clock;
// Longest sleep in poll: bounds how long stop takes and how late a loss is
// noticed beyond its deadline.
constexpr auto server_max_poll = std::chrono::milliseconds(50);
// Messages taken per turn before timers get their turn, so a flood cannot
// starve heartbeats and loss detection.
constexpr int max_receive_batch = 256;

struct Member {
  WorkerInfo info;
  Clock::time_point last_seen{};
};
}  // namespace

struct MembershipServer::Impl {
  ServerOptions options;
  EventQueue<MemberEvent>& events;
  std::atomic<std::uint64_t>& rejected;
  zmq::context_t ctx{1};
  // After the context (destroyed before it), before the socket (which it
  // must cover from the start): see security/zap.hpp.
  std::unique_ptr<security::ZapHandler> zap;
  zmq::socket_t socket;
  // Logs refused connections (with CURVE); reset by the thread before it
  // closes the socket.
  std::unique_ptr<security::HandshakeMonitor> monitor;
  std::map<std::string, Member> members;  // by routing id
  // Members declared lost, by routing id: their late heartbeats (sent
  // before they gave up, delivered when a link came back) are named.
  std::map<std::string, WorkerInfo> lost;
  mutable std::mutex members_m;           // members is read by workers()
  std::uint32_t next_id = 1;
  std::uint64_t seq = 0;
  zio::RateLimitedLog reject_log;

  Impl(ServerOptions o, EventQueue<MemberEvent>& ev, std::atomic<std::uint64_t>& rej)
      : options(std::move(o)), events(ev), rejected(rej) {
    if (!options.log) options.log = [](LogLevel, std::string_view) {};
    if (options.heartbeat_period.count() <= 0) throw Error("MembershipServer: heartbeat_period must be positive");
    if (options.missed_heartbeats == 0) throw Error("MembershipServer: missed_heartbeats must be at least 1");
    // Workers declare the coordinator lost after as many silent periods as
    // it allows them (the period travels in the welcome itself).
    if (options.config.is_object()) options.config["missed_heartbeats"] = options.missed_heartbeats;
    if (options.curve) zap = std::make_unique<security::ZapHandler>(ctx, options.curve->authorised, options.log);
    socket = zmq::socket_t(ctx, zmq::socket_type::router);
    socket.set(zmq::sockopt::linger, 0);
    // Reports a vanished peer (EHOSTUNREACH) instead of dropping silently;
    // send() treats both the same, but a full pipe then never blocks.
    socket.set(zmq::sockopt::router_mandatory, true);
    socket.set(zmq::sockopt::sndhwm, 64);
    // Control messages are small: a peer announcing a bigger frame is cut
    // off by libzmq before anything is allocated for it.
    socket.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(options.limits.max_header_bytes));
    if (options.curve) {
      security::configure_curve_server(socket, *zap, options.curve->server);
      monitor = std::make_unique<security::HandshakeMonitor>(ctx, socket, options.log);
    }
  }

  std::chrono::milliseconds loss_after() const { return options.heartbeat_period * options.missed_heartbeats; }

  std::string peer_name(std::vector<zmq::message_t>& frames) const { return zio::peer_name(frames, options.curve.has_value()); }


  void reject(const std::string& line) {
    ++rejected;
    reject_log(options.log, "membership server: " + line);
  }

  bool send(const std::string& peer, const wire::Body& body) {
    return detail::send(socket, peer, ++seq, body, options.limits, options.log);
  }

  void remove(std::map<std::string, Member>::iterator it, MemberEventKind kind, std::string reason) {
    MemberEvent e{kind, it->second.info, std::move(reason)};
    options.log(kind == MemberEventKind::lost ? LogLevel::warning : LogLevel::info,
                "membership: worker " + std::to_string(e.worker.id) + " (" + e.worker.name + ") " +
                    std::string(to_string(kind)) + ": " + e.reason);
    if (kind == MemberEventKind::lost) lost[it->first] = it->second.info;
    {
      std::lock_guard lock(members_m);
      members.erase(it);
    }
    events.push(std::move(e));
  }

  void on_hello(const std::string& peer, const wire::Hello& h, std::vector<zmq::message_t>& frames) {
    if (h.name.empty()) {
      reject("rejected hello from " + peer_name(frames) + ": empty worker name");
      send(peer, wire::Bye{"hello without a worker name"});
      return;
    }
    if (const auto it = members.find(peer); it != members.end()) {
      // The same connection again: the worker missed our welcome and
      // retried. Same id, no new join.
      it->second.last_seen = Clock::now();
      send(peer, wire::Welcome{it->second.info.id, static_cast<std::uint32_t>(options.heartbeat_period.count()),
                               options.config});
      return;
    }
    // A worker restarted (new connection, same name) before its old
    // session timed out: the old session is over.
    for (auto it = members.begin(); it != members.end(); ++it) {
      if (it->second.info.name == h.name) {
        remove(it, MemberEventKind::left, "replaced by a new hello from " + peer_name(frames));
        break;
      }
    }
    Member m;
    m.info.id = next_id++;
    m.info.name = h.name;
    m.info.data_endpoint = h.data_endpoint;
    m.info.cpu_slots = h.cpu_slots;
    m.info.gpu_slots = h.gpu_slots;
    m.info.info = h.info;
    if (h.info.is_object())
      if (const auto l = h.info.find("labels"); l != h.info.end()) m.info.labels = *l;
    if (frames.size() > 1) {
      try {
        m.info.peer_address = frames[1].gets("Peer-Address");
      } catch (const zmq::error_t&) {
      }
      if (options.curve) try {
          m.info.user = frames[1].gets("User-Id");
        } catch (const zmq::error_t&) {
        }
    }
    m.last_seen = Clock::now();
    const WorkerInfo info = m.info;
    {
      std::lock_guard lock(members_m);
      members.emplace(peer, std::move(m));
    }
    send(peer, wire::Welcome{info.id, static_cast<std::uint32_t>(options.heartbeat_period.count()), options.config});
    options.log(LogLevel::info, "membership: worker " + std::to_string(info.id) + " (" + info.name + ") joined from " +
                                    peer_name(frames));
    events.push(MemberEvent{MemberEventKind::joined, info, "hello"});
  }

  void on_message(std::vector<zmq::message_t>& frames) {
    if (frames.empty()) return;
    const std::string peer = frames[0].to_string();
    if (frames.size() < 2) {
      reject("dropped an empty message from " + peer_name(frames));
      return;
    }
    const auto v = zio::views(frames, 1);
    const auto m = wire::decode(v, options.limits);
    if (!m) {
      reject("dropped a message from " + peer_name(frames) + ": " + m.error().describe());
      return;
    }
    if (const auto* h = std::get_if<wire::Hello>(&m->body)) {
      on_hello(peer, *h, frames);
      return;
    }
    const auto it = members.find(peer);
    if (const auto* b = std::get_if<wire::Bye>(&m->body)) {
      if (it != members.end()) remove(it, MemberEventKind::left, b->reason.empty() ? "bye" : "bye: " + b->reason);
      return;
    }
    if (const auto* hb = std::get_if<wire::Heartbeat>(&m->body)) {
      if (it == members.end()) {
        // Declared lost (or never joined): tell it, so it does not go on
        // believing it is a member.
        if (const auto was = lost.find(peer); was != lost.end())
          options.log(LogLevel::debug, "membership: a late heartbeat from worker " + std::to_string(was->second.id) +
                                           " (" + was->second.name + "), declared lost; told it bye");
        else
          reject("heartbeat from " + peer_name(frames) + ", which is not a member");
        send(peer, wire::Bye{"not a member (declared lost, or never said hello)"});
        return;
      }
      it->second.last_seen = Clock::now();
      std::lock_guard lock(members_m);
      it->second.info.running = hb->running;
      it->second.info.queued = hb->queued;
      return;
    }
    reject("rejected " + std::string(wire::to_string(m->header.type)) + " from " + peer_name(frames) +
           ": a membership endpoint takes only hello, heartbeat and bye");
  }

  void check_losses() {
    const auto now = Clock::now();
    for (auto it = members.begin(); it != members.end();) {
      auto next = std::next(it);
      if (now - it->second.last_seen > loss_after())
        remove(it, MemberEventKind::lost,
               "no message for " + std::to_string(options.missed_heartbeats) + " heartbeat periods of " +
                   std::to_string(options.heartbeat_period.count()) + " ms");
      it = next;
    }
  }

  void run(const std::atomic<bool>& stop) {
    auto next_beat = Clock::now();
    while (!stop) {
      try {
        const auto now = Clock::now();
        if (now >= next_beat) {
          for (const auto& [peer, m] : members) send(peer, wire::Heartbeat{});
          next_beat = now + options.heartbeat_period;
        }
        const auto wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - Clock::now()),
                                     std::chrono::milliseconds(0), server_max_poll);
        zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, wait);
        for (int n = 0; n < max_receive_batch; ++n) {
          auto frames = zio::receive(socket);
          if (frames.empty()) break;
          on_message(frames);
        }
        check_losses();
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        if (e.num() == ETERM) return;
        // Nothing a peer sends reaches here (decode never throws); an error
        // from libzmq itself is logged and the loop goes on.
        options.log(LogLevel::error, std::string("membership server: ") + e.what());
      } catch (const std::exception& e) {
        options.log(LogLevel::error, std::string("membership server: ") + e.what());
      }
    }
    for (const auto& [peer, m] : members) send(peer, wire::Bye{"coordinator shutting down"});
    // Long enough for the byes to leave on a live link, short enough that a
    // dead peer does not hold up shutdown.
    monitor.reset();
    socket.set(zmq::sockopt::linger, 250);
    socket.close();
  }
};

MembershipServer::MembershipServer(ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options), events_, rejected_)) {
  endpoint_ = security::secure_bind(impl_->socket, impl_->options.endpoint);
  // The socket is used only by the thread from now on; thread creation
  // orders the accesses, as libzmq requires.
  thread_ = std::thread([this] { impl_->run(stop_); });
}

MembershipServer::~MembershipServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<WorkerInfo> MembershipServer::workers() const {
  std::vector<WorkerInfo> out;
  {
    std::lock_guard lock(impl_->members_m);
    for (const auto& [peer, m] : impl_->members) out.push_back(m.info);
  }
  std::sort(out.begin(), out.end(), [](const WorkerInfo& a, const WorkerInfo& b) { return a.id < b.id; });
  return out;
}

}  // namespace flowd::net::membership

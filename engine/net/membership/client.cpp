#include <algorithm>
#include <utility>

#include "net/membership/detail.hpp"
#include "net/zio/zio.hpp"
#include "net/membership/membership.hpp"

namespace flowd::net::membership {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto client_max_poll = std::chrono::milliseconds(50);
}  // namespace

struct MembershipClient::Impl {
  ClientOptions options;
  zmq::context_t ctx{1};
  zmq::socket_t socket;
  std::uint64_t seq = 0;
  zio::RateLimitedLog reject_log;

  explicit Impl(ClientOptions o) : options(std::move(o)) {
    if (!options.log) options.log = [](LogLevel, std::string_view) {};
    if (options.name.empty()) throw MembershipError("MembershipClient: a worker name is required");
    if (options.missed_heartbeats == 0) throw MembershipError("MembershipClient: missed_heartbeats must be at least 1");
    if (!options.info.is_object()) throw MembershipError("MembershipClient: info must be a JSON object");
    socket = zmq::socket_t(ctx, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::sndhwm, 64);
    socket.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(options.limits.max_header_bytes));
    if (options.curve) security::configure_curve_client(socket, *options.curve);
  }

  bool send(const wire::Body& body) { return detail::send(socket, {}, ++seq, body, options.limits, options.log); }

  void reject(const std::string& line) { reject_log(options.log, "membership client: " + line); }

  std::string no_welcome(std::chrono::milliseconds waited) const {
    std::string s = "no welcome from the coordinator at " + options.endpoint + " within " +
                    std::to_string(waited.count()) + " ms: is the address right and the coordinator running?";
    if (options.curve)
      s += " With CURVE: is this worker's public key in the coordinator's authorised keys, and is the "
           "coordinator's public key configured here its current one? (A refused key looks exactly like "
           "silence to the worker; the coordinator logs the refusal.)";
    return s;
  }

  wire::Welcome join() {
    security::secure_connect(socket, options.endpoint);
    wire::Hello h;
    h.name = options.name;
    h.data_endpoint = options.data_endpoint;
    h.cpu_slots = options.cpu_slots;
    h.gpu_slots = options.gpu_slots;
    h.info = options.info;
    h.info["labels"] = options.labels;
    // The DEALER queues the hello until the connection (and the CURVE
    // handshake) is up, so one send is enough.
    if (!send(h)) throw MembershipError("cannot send hello to the coordinator at " + options.endpoint);
    const auto start = Clock::now();
    const auto deadline = start + options.welcome_timeout;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) throw MembershipError(no_welcome(options.welcome_timeout));
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::min(left, client_max_poll));
      for (auto frames = zio::receive(socket); !frames.empty(); frames = zio::receive(socket)) {
        const auto v = zio::views(frames, 0);
        const auto m = wire::decode(v, options.limits);
        if (!m) {
          reject("dropped a message from the coordinator at " + options.endpoint + ": " + m.error().describe());
          continue;
        }
        if (const auto* w = std::get_if<wire::Welcome>(&m->body)) {
          if (w->heartbeat_ms == 0)
            throw MembershipError("the coordinator at " + options.endpoint + " sent a welcome with heartbeat period 0");
          return *w;
        }
        if (const auto* b = std::get_if<wire::Bye>(&m->body))
          throw MembershipError("the coordinator at " + options.endpoint + " refused this worker: " + b->reason);
        // Anything else before the welcome (a stray heartbeat from an
        // earlier session's coordinator) is not worth failing the join over.
      }
    }
  }

  void run(MembershipClient& self) {
    const auto period = self.period_;
    const auto loss_after = period * self.missed_heartbeats_;
    auto last_seen = Clock::now();
    auto next_beat = Clock::now();
    while (!self.stop_) {
      try {
        const auto now = Clock::now();
        if (now >= next_beat) {
          send(wire::Heartbeat{self.running_.load(), self.queued_.load()});
          next_beat = now + period;
        }
        const auto wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - Clock::now()),
                                     std::chrono::milliseconds(0), client_max_poll);
        zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, wait);
        for (auto frames = zio::receive(socket); !frames.empty(); frames = zio::receive(socket)) {
          const auto v = zio::views(frames, 0);
          const auto m = wire::decode(v, options.limits);
          if (!m) {
            reject("dropped a message from the coordinator: " + m.error().describe());
            continue;
          }
          last_seen = Clock::now();
          if (const auto* b = std::get_if<wire::Bye>(&m->body)) {
            // The normal end of a run; the owner reports what it means.
            options.log(LogLevel::debug, "membership: the coordinator at " + options.endpoint + " said bye: " + b->reason);
            end(self, CoordinatorEventKind::left, b->reason);
            return;
          }
          // Heartbeats and repeated welcomes only prove liveness; work
          // messages belong to other layers and are not expected here.
          if (!std::holds_alternative<wire::Heartbeat>(m->body) && !std::holds_alternative<wire::Welcome>(m->body))
            reject("ignored " + std::string(wire::to_string(m->header.type)) + " on the membership connection");
        }
        if (Clock::now() - last_seen > loss_after) {
          const std::string why = "no message for " + std::to_string(self.missed_heartbeats_) +
                                  " heartbeat periods of " + std::to_string(period.count()) + " ms";
          options.log(LogLevel::warning, "membership: lost the coordinator at " + options.endpoint + ": " + why);
          end(self, CoordinatorEventKind::lost, why);
          return;
        }
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        if (e.num() == ETERM) return;
        options.log(LogLevel::error, std::string("membership client: ") + e.what());
      } catch (const std::exception& e) {
        options.log(LogLevel::error, std::string("membership client: ") + e.what());
      }
    }
  }

  static void end(MembershipClient& self, CoordinatorEventKind kind, std::string reason) {
    self.connected_ = false;
    self.events_.push(CoordinatorEvent{kind, std::move(reason)});
  }
};

MembershipClient::MembershipClient(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  const auto w = impl_->join();
  worker_id_ = w.worker_id;
  period_ = std::chrono::milliseconds(w.heartbeat_ms);
  config_ = w.config;
  // The coordinator's bound, when it sends one: both sides then give up on
  // the other after the same silence (a worker told to ride out a 10 s
  // outage by the coordinator's --missed-heartbeats must not leave at 1.5 s).
  missed_heartbeats_ = impl_->options.missed_heartbeats;
  if (const auto it = config_.find("missed_heartbeats");
      config_.is_object() && it != config_.end() && it->is_number_unsigned() && it->get<std::uint64_t>() >= 1 &&
      it->get<std::uint64_t>() <= 1'000'000)
    missed_heartbeats_ = it->get<std::uint32_t>();
  impl_->options.log(LogLevel::info, "membership: joined the coordinator at " + impl_->options.endpoint +
                                         " as worker " + std::to_string(worker_id_));
  // The socket is used only by the thread from now on; thread creation
  // orders the accesses, as libzmq requires.
  thread_ = std::thread([this] { impl_->run(*this); });
}

MembershipClient::~MembershipClient() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  // The join above orders this thread's use of the socket after the
  // loop's.
  if (connected_) {
    try {
      impl_->send(wire::Bye{"worker shutting down"});
      impl_->socket.set(zmq::sockopt::linger, static_cast<int>(impl_->options.bye_linger.count()));
    } catch (const std::exception&) {
      // A destructor must not throw; the coordinator's heartbeat timeout
      // covers a bye that could not be sent.
    }
  }
}

}  // namespace flowd::net::membership

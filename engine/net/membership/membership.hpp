#pragma once
// Control-plane membership (issue 5, docs/cluster.md "Membership and
// heartbeats"): which workers belong to a run and whether they are alive.
//
// The coordinator's MembershipServer (ROUTER) and each worker's
// MembershipClient (DEALER) speak hello / welcome / heartbeat / bye of the
// wire format. Both sides heartbeat every period and declare the other lost
// after `missed_heartbeats` periods without hearing from it, so a crashed or
// partitioned node is noticed without relying on TCP keepalives (which take
// minutes) or on ZeroMQ, which hides disconnects behind reconnects.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "flowd/error.hpp"
#include "flowd/item.hpp"
#include "flowd/operator.hpp"
#include "net/security/curve.hpp"
#include "wire/wire.hpp"

namespace flowd::net::membership {

using MembershipLog = std::function<void(LogLevel, std::string_view)>;

// A worker never got a welcome (or the options were unusable). The message
// names the endpoint and the likely causes.
class MembershipError : public Error {
public:
  using Error::Error;
};

struct WorkerInfo {
  std::uint32_t id = 0;             // assigned by the coordinator; 0 is the coordinator itself
  std::string name{};               // from hello, e.g. "host:pid"
  std::string data_endpoint{};      // where peers fetch this worker's items
  std::uint32_t cpu_slots = 0;
  std::uint32_t gpu_slots = 0;
  Json labels = Json::object();     // hello info["labels"], as the worker sent it
  Json info = Json::object();       // the whole hello info
  std::string peer_address{};       // ZeroMQ's Peer-Address ("" on inproc)
  std::string user{};               // CURVE: the authorised key's name (ZAP User-Id)
  std::uint32_t running = 0;        // load from the latest heartbeat
  std::uint32_t queued = 0;
};

enum class MemberEventKind : std::uint8_t {
  joined,  // hello answered with welcome
  left,    // bye, or replaced by a new hello under the same name
  lost,    // missed_heartbeats periods without a message
};
std::string_view to_string(MemberEventKind k) noexcept;

struct MemberEvent {
  MemberEventKind kind = MemberEventKind::joined;
  WorkerInfo worker{};
  std::string reason{};
};

struct CurveServerKeys {
  security::KeyPair server;             // workers must know server.public_key
  security::AuthorisedKeys authorised;  // the worker keys allowed to join
};

struct ServerOptions {
  // Without keys only loopback TCP, ipc and inproc (security/policy.hpp).
  std::string endpoint = "tcp://127.0.0.1:*";
  std::optional<CurveServerKeys> curve{};
  std::chrono::milliseconds heartbeat_period{1000};
  std::uint32_t missed_heartbeats = 3;
  Json config = Json::object();  // sent in every welcome (the run)
  wire::Limits limits{};
  MembershipLog log{};
};

// A tiny thread-safe queue: the socket thread pushes, the owner polls.
template <class T> class EventQueue {
public:
  void push(T e) {
    {
      std::lock_guard lock(m_);
      q_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  std::optional<T> poll(std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_);
    if (!cv_.wait_for(lock, timeout, [&] { return !q_.empty(); })) return std::nullopt;
    T e = std::move(q_.front());
    q_.pop_front();
    return e;
  }

private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<T> q_;
};

class MembershipServer {
public:
  // Binds (throws flowd::Error when the endpoint is refused or in use) and
  // starts serving on a thread of its own.
  explicit MembershipServer(ServerOptions options);
  // Says bye to every member and stops within ~50 ms (plus a short linger
  // so the byes leave).
  ~MembershipServer();
  MembershipServer(const MembershipServer&) = delete;
  MembershipServer& operator=(const MembershipServer&) = delete;

  // The bound endpoint, with the actual port when bound to '*'.
  const std::string& endpoint() const noexcept { return endpoint_; }
  // The next join/leave/loss, or nullopt after `timeout`.
  std::optional<MemberEvent> poll_event(std::chrono::milliseconds timeout) { return events_.poll(timeout); }
  // The members now, by id.
  std::vector<WorkerInfo> workers() const;
  // Malformed or unexpected messages dropped so far.
  std::uint64_t rejected() const noexcept { return rejected_.load(); }

private:
  struct Impl;
  // Before impl_, which keeps references to them.
  EventQueue<MemberEvent> events_;
  std::atomic<std::uint64_t> rejected_{0};
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct ClientOptions {
  std::string endpoint{};  // the coordinator's membership endpoint
  // Without credentials only local endpoints (security/policy.hpp).
  std::optional<security::ClientCredentials> curve{};
  std::string name{};
  std::string data_endpoint{};
  std::uint32_t cpu_slots = 0;
  std::uint32_t gpu_slots = 0;
  Json labels = Json::object();  // travels as hello info["labels"]
  Json info = Json::object();    // anything else for hello info
  std::chrono::milliseconds welcome_timeout{std::chrono::seconds(10)};
  std::uint32_t missed_heartbeats = 3;
  // How long closing waits for the bye to leave when the coordinator is slow.
  std::chrono::milliseconds bye_linger{250};
  wire::Limits limits{};
  MembershipLog log{};
};

enum class CoordinatorEventKind : std::uint8_t {
  left,  // the coordinator said bye (shutdown, or it no longer knows us)
  lost,  // missed_heartbeats periods without a message
};
std::string_view to_string(CoordinatorEventKind k) noexcept;

struct CoordinatorEvent {
  CoordinatorEventKind kind = CoordinatorEventKind::left;
  std::string reason{};
};

class MembershipClient {
public:
  // Connects, says hello and waits for the welcome; throws MembershipError
  // naming the endpoint when none comes within welcome_timeout. Then
  // heartbeats on a thread of its own.
  explicit MembershipClient(ClientOptions options);
  // Says bye, unless the coordinator is already gone.
  ~MembershipClient();
  MembershipClient(const MembershipClient&) = delete;
  MembershipClient& operator=(const MembershipClient&) = delete;

  std::uint32_t worker_id() const noexcept { return worker_id_; }
  std::chrono::milliseconds heartbeat_period() const noexcept { return period_; }
  // Silent periods after which the coordinator counts as lost: the
  // welcome's "missed_heartbeats", else ClientOptions::missed_heartbeats.
  std::uint32_t missed_heartbeats() const noexcept { return missed_heartbeats_; }
  const Json& config() const noexcept { return config_; }
  // False once the coordinator left or was lost; the session is over then
  // (a new MembershipClient joins again).
  bool connected() const noexcept { return connected_.load(); }
  std::optional<CoordinatorEvent> poll_event(std::chrono::milliseconds timeout) { return events_.poll(timeout); }
  // Load reported in the next heartbeats.
  void set_load(std::uint32_t running, std::uint32_t queued) noexcept {
    running_.store(running);
    queued_.store(queued);
  }

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint32_t worker_id_ = 0;
  std::chrono::milliseconds period_{0};
  std::uint32_t missed_heartbeats_ = 3;
  Json config_ = Json::object();
  EventQueue<CoordinatorEvent> events_;
  std::atomic<bool> connected_{true};
  std::atomic<std::uint32_t> running_{0}, queued_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace flowd::net::membership

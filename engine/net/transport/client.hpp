#pragma once
// The consumer's side of peer-to-peer item transfer (docs/transport.md):
// pulls an item from the node that holds it and reassembles it into one
// buffer, re-requesting lost chunks.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "flowd/error.hpp"
#include "flowd/item.hpp"
#include "net/security/curve.hpp"
#include "net/transport/server.hpp"
#include "wire/wire.hpp"

namespace flowd::net::transport {

// Every way a fetch can fail; the message names the peer and the item.
class FetchError : public Error {
public:
  // abandoned: ClientOptions::abandon gave a reason (the holder was
  // declared lost) before an answer came.
  enum class Kind { not_found, refused, timed_out, corrupt, abandoned };
  FetchError(Kind kind, const std::string& message) : Error(message), kind_(kind) {}
  Kind kind() const noexcept { return kind_; }

private:
  Kind kind_;
};

struct ClientOptions {
  // Our key pair and the default server key; peers with a key of their own
  // name it in Peer. Without keys only local endpoints may be fetched from.
  std::optional<security::ClientCredentials> curve{};
  // Silence this long (no descriptor, no chunk) counts as loss: the missing
  // chunks are asked for again. Longer than a chunk takes on the wire. While
  // the peer's TCP connection stands, the silence allowed doubles after each
  // retry, up to 8 × retry_interval (a slow link shared by other transfers:
  // the defaults give up after 1 + 2 + 4 + 8 + 8 + 8 = 31 s of silence);
  // without a connection (the peer's process is gone) it stays at
  // retry_interval (6 s). The fetch's timeout bounds both.
  std::chrono::milliseconds retry_interval{std::chrono::seconds(1)};
  int max_retries = 5;
  // Messages ZeroMQ buffers per peer before it stops reading (ZMQ_RCVHWM);
  // the server's window bounds it anyway.
  int receive_hwm = 16;
  // Asked at least every 100 ms while a fetch waits: a reason to give up on
  // this peer now (e.g. the coordinator declared it lost), or nothing.
  // Called on the fetching thread; must be thread-safe if clients share it.
  std::function<std::optional<std::string>(const std::string& endpoint)> abandon{};
  wire::Limits limits{};
  // Destination of arrays (e.g. pinned memory); default: host memory, in
  // transparent huge pages when large (client.cpp says why).
  wire::ArrayAllocator allocate{};
  TransportLog log{};
};

struct Peer {
  std::string endpoint;
  std::string server_public_key{};  // empty: ClientOptions::curve's
};

struct FetchStats {
  std::uint32_t chunks = 0;
  std::uint32_t duplicates = 0;
  std::uint32_t rejected = 0;  // chunks that failed their checks (re-requested)
  int retries = 0;
};

// One socket per peer, reused across fetches. Not thread-safe: one client
// per thread (ZeroMQ sockets belong to one thread at a time).
class ItemClient {
public:
  explicit ItemClient(ClientOptions options = {});
  ~ItemClient();
  ItemClient(const ItemClient&) = delete;
  ItemClient& operator=(const ItemClient&) = delete;

  // The item, complete and verified, or FetchError within `timeout`.
  Item fetch(const Peer& peer, const wire::ItemId& id, std::chrono::milliseconds timeout);
  Item fetch(std::string_view endpoint, const wire::ItemId& id, std::chrono::milliseconds timeout) {
    return fetch(Peer{std::string(endpoint)}, id, timeout);
  }

  // About the last fetch (for tests and benchmarks).
  const FetchStats& last_stats() const noexcept { return last_; }

private:
  // A peer's socket and what its monitor says of the TCP connection: a
  // silent peer that is connected is slow (the silence allowed grows), one
  // that is not is gone or unreachable (it does not).
  struct PeerSocket {
    zmq::socket_t socket;
    zmq::socket_t monitor;  // PAIR: the socket's connected / disconnected events
    bool connected = false;
    void update();  // reads the monitor's pending events
  };
  PeerSocket& socket_for(const Peer& peer);
  void forget(const Peer& peer);

  ClientOptions options_;
  zmq::context_t ctx_{1};
  std::map<std::string, PeerSocket> sockets_;
  std::uint64_t next_transfer_;
  std::uint64_t seq_ = 0;
  FetchStats last_{};
};

}  // namespace flowd::net::transport

#pragma once
// The holder's side of peer-to-peer item transfer (docs/transport.md): a
// ROUTER socket, served by a thread of its own, that answers fetch_item
// with the item's descriptor and chunks.
//
// Flow control is credit-based: each transfer has at most `window_chunks`
// item_chunk messages sent and not yet acked; every ack from the consumer
// returns one credit. The server never blocks on one slow consumer (the
// others keep being served) and never drops: a send that meets the peer's
// high-water mark is retried on the next turn of the loop.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "flowd/operator.hpp"
#include "net/security/curve.hpp"
#include "store/item_store.hpp"
#include "wire/wire.hpp"

namespace flowd::net::transport {

// Where the transport reports what it refused or gave up on.
using TransportLog = std::function<void(LogLevel, std::string_view)>;

struct CurveServerKeys {
  security::KeyPair server;             // clients must know server.public_key
  security::AuthorisedKeys authorised;  // the consumers allowed to fetch
};

struct ServerOptions {
  // Without keys only loopback TCP, ipc and inproc (security/policy.hpp).
  std::string endpoint = "tcp://127.0.0.1:*";
  std::optional<CurveServerKeys> curve{};
  // 16 MiB: few enough messages that per-message costs vanish, small
  // enough that the consumer hashes and copies one chunk while the next
  // is on the wire.
  std::uint64_t chunk_bytes = 16ull << 20;
  // Chunks in flight per transfer: bounds what a consumer must buffer
  // (window × chunk_bytes on top of the item itself).
  std::uint32_t window_chunks = 4;
  // Messages queued per peer in ZeroMQ (ZMQ_SNDHWM). With the window this
  // caps ZeroMQ's queue when one peer runs several transfers.
  int send_hwm = 8;
  // A transfer nobody acks or re-requests for this long is dropped (its
  // consumer died); a later re-request starts it afresh.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
  // Concurrent transfers; a fetch beyond them is answered later, when the
  // consumer retries.
  std::size_t max_transfers = 1024;
  wire::Limits limits{};
  TransportLog log{};
};

struct ServerStats {
  std::uint64_t transfers_started = 0;
  std::uint64_t transfers_completed = 0;  // every chunk acked: state released
  std::uint64_t transfers_expired = 0;
  std::uint64_t chunks_sent = 0;          // item_chunk messages, retries included
  std::uint64_t chunks_resent = 0;        // chunks a consumer re-requested
  std::uint64_t descriptors_resent = 0;   // a transfer's descriptor sent again: asked for again after its bytes' time at 1 MB/s
  std::uint64_t unknown_items = 0;
  std::uint64_t rejected = 0;             // malformed or unexpected messages
  std::uint64_t active_transfers = 0;
};

class ItemServer {
public:
  // Binds (throws flowd::Error when the endpoint is refused or in use) and
  // starts serving. The store (`items`) must outlive the server.
  ItemServer(const store::ItemStore& items, ServerOptions options);
  // Stops within ~50 ms; transfers in progress are abandoned (their
  // consumers time out and report it).
  ~ItemServer();
  ItemServer(const ItemServer&) = delete;
  ItemServer& operator=(const ItemServer&) = delete;

  // The bound endpoint, with the actual port when bound to '*'.
  const std::string& endpoint() const noexcept { return endpoint_; }
  ServerStats stats() const;

  // Test hook: the next time item_chunk `index` is due, it is counted as
  // sent but not sent, as if the network had lost it.
  void drop_chunk_once(std::uint32_t index) { drop_chunk_.store(index); }

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
  std::atomic<std::int64_t> drop_chunk_{-1};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace flowd::net::transport

#include "net/transport/server.hpp"

#include <zmq_addon.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "flowd/error.hpp"
#include "net/zio/zio.hpp"

namespace flowd::net::transport {

namespace {

using Clock = std::chrono::steady_clock;
namespace wire = flowd::wire;

// How long the idle loop sleeps in poll: bounds how long stop takes.
constexpr auto idle_poll = std::chrono::milliseconds(50);
// A send met a full pipe: look again this soon. The consumer drains a
// chunk in milliseconds, so sleeping longer would idle the link.
constexpr auto blocked_poll = std::chrono::milliseconds(1);
// Messages taken from the socket per turn before sends get their turn, so
// a flood of requests cannot starve transfers in progress.
constexpr int max_receive_batch = 256;

struct Transfer {
  std::string peer;  // ROUTER routing id
  std::uint64_t id = 0;
  wire::ItemId item{};
  std::optional<wire::OutgoingItem> out{};
  bool descriptor_due = false;    // item_data waiting to be sent
  bool descriptor_acked = true;   // false while the consumer has not confirmed it
  std::deque<std::uint32_t> queue{};
  std::vector<bool> queued{}, in_flight{}, delivered{};
  std::uint32_t in_flight_count = 0;
  std::uint32_t delivered_count = 0;
  Clock::time_point last_activity{};
  Clock::time_point descriptor_sent{};  // when item_data last went into the pipe

  std::uint32_t chunk_count() const { return out->chunk_count(); }
  void enqueue(std::uint32_t i) {
    if (!queued[i]) {
      queued[i] = true;
      queue.push_back(i);
    }
  }
  void deliver(std::uint32_t i) {
    if (in_flight[i]) {
      in_flight[i] = false;
      --in_flight_count;
    }
    if (!delivered[i]) {
      delivered[i] = true;
      ++delivered_count;
    }
  }
  void undeliver(std::uint32_t i) {
    if (in_flight[i]) {
      in_flight[i] = false;  // lost: its credit comes back
      --in_flight_count;
    }
    if (delivered[i]) {
      delivered[i] = false;
      --delivered_count;
    }
    enqueue(i);
  }
  bool complete() const { return descriptor_acked && !descriptor_due && delivered_count == out->chunk_count(); }
};

}  // namespace

struct ItemServer::Impl {
  const store::ItemStore& items;
  ServerOptions options;
  zmq::context_t ctx{1};
  // After the context (destroyed before it), before the socket (which it
  // must cover from the start): see security/zap.hpp.
  std::unique_ptr<security::ZapHandler> zap;
  zmq::socket_t socket;
  // Logs refused connections (with CURVE). Declared after the socket: the
  // server's thread has stopped when it goes, and the socket is still open.
  std::unique_ptr<security::HandshakeMonitor> monitor;
  std::map<std::pair<std::string, std::uint64_t>, Transfer> transfers;
  // Items encoded recently, with their hashes: one item pulled by several
  // consumers (or again after a retry) is hashed once. An entry is used only
  // while the store still hands out the same item object, and the cache is
  // small because an entry keeps its item's memory alive.
  struct Encoded {
    std::weak_ptr<const Item> item;
    wire::OutgoingItem out;
  };
  static constexpr std::size_t encoded_cache_size = 8;
  std::vector<Encoded> encoded;
  std::uint64_t seq = 0;
  mutable std::mutex stats_m;
  ServerStats stats;
  // Rejection log lines per second: a peer spraying garbage must not flood
  // the log; the count of what was held back is logged with the next line.
  zio::RateLimitedLog rejection_log;

  Impl(const store::ItemStore& s, ServerOptions o) : items(s), options(std::move(o)) {
    if (!options.log) options.log = [](LogLevel, std::string_view) {};
    if (options.window_chunks == 0) throw Error("ItemServer: window_chunks must be at least 1");
    if (options.chunk_bytes == 0 || options.chunk_bytes > options.limits.max_chunk_bytes)
      throw Error("ItemServer: chunk_bytes " + std::to_string(options.chunk_bytes) + " outside 1.." +
                  std::to_string(options.limits.max_chunk_bytes));
    if (options.curve) zap = std::make_unique<security::ZapHandler>(ctx, options.curve->authorised, options.log);
    socket = zmq::socket_t(ctx, zmq::socket_type::router);
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::sndhwm, std::max(1, options.send_hwm));
    // Without it a ROUTER silently drops what meets a full pipe; with it the
    // send reports EAGAIN and the chunk waits for the next turn.
    socket.set(zmq::sockopt::router_mandatory, true);
    // Requests are small: a peer announcing a bigger frame is cut off by
    // libzmq before anything is allocated for it.
    socket.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(options.limits.max_header_bytes));
    if (options.curve) {
      security::configure_curve_server(socket, *zap, options.curve->server);
      monitor = std::make_unique<security::HandshakeMonitor>(ctx, socket, options.log);
    }
  }

  template <class F> void count(F&& f) {
    std::lock_guard lock(stats_m);
    f(stats);
  }

  std::string peer_name(std::vector<zmq::message_t>& frames) const { return zio::peer_name(frames, options.curve.has_value()); }

  void log_rejection(const std::string& line) { rejection_log(options.log, "item server " + line); }

  void send_nack(const std::string& peer, std::uint64_t ref_seq, std::uint64_t transfer, wire::RejectCode code,
                 std::string reason) {
    auto msg = wire::encode(++seq, wire::Nack{ref_seq, transfer, wire::whole_message, code, std::move(reason)},
                            options.limits);
    // A nack that meets a full pipe is dropped: the consumer's retry asks
    // again, and blocking here would stall every other transfer.
    if (msg) zio::send(socket, peer, *msg, true);
  }

  wire::Result<wire::OutgoingItem> make_outgoing(const std::string& peer, const wire::Header& h, const wire::FetchItem& f,
                                           const std::string& who) {
    auto item = items.find(f.id);
    if (!item) {
      count([](ServerStats& s) { ++s.unknown_items; });
      options.log(LogLevel::info, "item server: " + who + " asked for " + describe(f.id) + ", which is not held here");
      send_nack(peer, h.seq, f.transfer_id, wire::RejectCode::unexpected, describe(f.id) + " is not held here");
      return wire::reject(wire::RejectCode::unexpected, "unknown item");
    }
    std::erase_if(encoded, [](const Encoded& e) { return e.item.expired(); });
    for (const Encoded& e : encoded)
      if (e.item.lock() == item) return e.out.for_transfer(f.transfer_id);
    wire::EncodeOptions eo;
    eo.chunk_bytes = options.chunk_bytes;
    eo.limits = options.limits;
    auto out = wire::OutgoingItem::make(*item, f.transfer_id, eo);
    if (out) {
      if (encoded.size() == encoded_cache_size) encoded.erase(encoded.begin());
      encoded.push_back({item, *out});
    }
    if (!out) {
      options.log(LogLevel::warning, "item server: cannot send " + describe(f.id) + " to " + who + ": " +
                                         out.error().describe());
      send_nack(peer, h.seq, f.transfer_id, out.error().code, describe(f.id) + ": " + out.error().reason);
    }
    return out;
  }

  void on_fetch(const std::string& peer, const wire::Header& h, const wire::FetchItem& f, const std::string& who) {
    const auto key = std::make_pair(peer, f.transfer_id);
    auto it = transfers.find(key);
    bool created = false;
    if (it != transfers.end() && !(it->second.item == f.id)) {
      log_rejection("rejected fetch_item from " + who + ": transfer " + std::to_string(f.transfer_id) +
                    " is already in use for " + describe(it->second.item));
      count([](ServerStats& s) { ++s.rejected; });
      send_nack(peer, h.seq, f.transfer_id, wire::RejectCode::unexpected,
                "transfer " + std::to_string(f.transfer_id) + " is already in use for another item");
      return;
    }
    if (it == transfers.end()) {
      if (transfers.size() >= options.max_transfers) {
        log_rejection("busy: " + std::to_string(transfers.size()) + " transfers in progress; " + who +
                      " will retry its fetch of " + describe(f.id));
        return;
      }
      auto out = make_outgoing(peer, h, f, who);
      if (!out) return;
      Transfer t;
      t.peer = peer;
      t.id = f.transfer_id;
      t.item = f.id;
      t.out.emplace(std::move(out).value());
      const auto n = t.chunk_count();
      t.queued.assign(n, false);
      t.in_flight.assign(n, false);
      t.delivered.assign(n, false);
      it = transfers.emplace(key, std::move(t)).first;
      created = true;
      count([](ServerStats& s) {
        ++s.transfers_started;
        ++s.active_transfers;
      });
    }
    Transfer& t = it->second;
    t.last_activity = Clock::now();
    const auto n = t.chunk_count();
    if (f.chunks.empty() && !created) {
      // The consumer asks again before our answer reached it. Once handed
      // to ZeroMQ the answer is on its way (TCP loses nothing while the
      // connection stands), and on a slow link shared with other transfers
      // an item of a few MB takes seconds: sending it again would double
      // the traffic on that link (benchmarks.md §15.3 measured it). So the
      // descriptor (with the chunks it carries) goes again only once it
      // has been out longer than its bytes need at 1 MB/s, or 1 s; chunks
      // the consumer then lacks, it asks for by number.
      const auto need = std::chrono::milliseconds(std::max<std::uint64_t>(1000, t.out->payload_bytes() / 1000));
      if (!t.descriptor_acked && !t.descriptor_due && Clock::now() - t.descriptor_sent >= need) {
        t.descriptor_due = true;
        count([](ServerStats& s) { ++s.descriptors_resent; });
      }
      return;
    }
    if (f.chunks.empty()) {
      // The whole item, from the start: the consumer has no descriptor.
      t.queue.clear();
      for (std::uint32_t i = 0; i < n; ++i) {
        t.queued[i] = t.in_flight[i] = t.delivered[i] = false;
      }
      t.in_flight_count = t.delivered_count = 0;
      t.descriptor_due = true;
      t.descriptor_acked = false;
      for (std::uint32_t i = t.out->inline_chunks(); i < n; ++i) t.enqueue(i);
      return;
    }
    for (const auto i : f.chunks) {
      if (i >= n) {
        log_rejection("rejected fetch_item from " + who + ": chunk " + std::to_string(i) + " of " + describe(f.id) +
                      ", which has " + std::to_string(n));
        count([](ServerStats& s) { ++s.rejected; });
        send_nack(peer, h.seq, f.transfer_id, wire::RejectCode::unexpected,
                  "chunk " + std::to_string(i) + " out of range (" + std::to_string(n) + " chunks)");
        if (created) drop(it, false);
        return;
      }
    }
    // A re-request for a transfer this server no longer knows (completed,
    // expired, or this is a restarted server) starts a transfer of just
    // those chunks: everything else counts as delivered.
    if (created) {
      for (std::uint32_t i = 0; i < n; ++i) t.deliver(i);
    }
    for (const auto i : f.chunks) t.undeliver(i);
    count([&](ServerStats& s) { s.chunks_resent += f.chunks.size(); });
  }

  void on_ack(const std::string& peer, const wire::Ack& a) {
    const auto it = transfers.find({peer, a.transfer_id});
    if (it == transfers.end()) return;  // a late ack for a finished transfer
    Transfer& t = it->second;
    t.last_activity = Clock::now();
    if (a.chunk == wire::whole_message) {
      t.descriptor_acked = true;
      for (std::uint32_t i = 0; i < t.out->inline_chunks(); ++i) t.deliver(i);
    } else if (a.chunk < t.chunk_count()) {
      t.deliver(a.chunk);
    }
    finish_if_complete(it);
  }

  void finish_if_complete(std::map<std::pair<std::string, std::uint64_t>, Transfer>::iterator it) {
    if (!it->second.complete()) return;
    transfers.erase(it);
    count([](ServerStats& s) {
      ++s.transfers_completed;
      --s.active_transfers;
    });
  }

  void drop(std::map<std::pair<std::string, std::uint64_t>, Transfer>::iterator it, bool expired) {
    transfers.erase(it);
    count([&](ServerStats& s) {
      --s.active_transfers;
      if (expired) ++s.transfers_expired;
    });
  }

  void on_message(std::vector<zmq::message_t>& frames) {
    if (frames.empty()) return;
    const std::string peer = frames[0].to_string();
    if (frames.size() < 2) {
      count([](ServerStats& s) { ++s.rejected; });
      log_rejection("dropped an empty message from " + peer_name(frames));
      return;
    }
    const auto v = zio::views(frames, 1);
    auto m = wire::decode(v, options.limits);
    if (!m) {
      count([](ServerStats& s) { ++s.rejected; });
      const auto h = wire::peek_header(v[0]);
      log_rejection("dropped a message from " + peer_name(frames) + ": " + m.error().describe());
      if (h) send_nack(peer, h->seq, 0, m.error().code, m.error().reason);
      return;
    }
    if (const auto* f = std::get_if<wire::FetchItem>(&m->body)) {
      on_fetch(peer, m->header, *f, peer_name(frames));
    } else if (const auto* a = std::get_if<wire::Ack>(&m->body)) {
      on_ack(peer, *a);
    } else if (const auto* n = std::get_if<wire::Nack>(&m->body)) {
      // The consumer gave up on the transfer: nothing more to send.
      if (const auto it = transfers.find({peer, n->transfer_id}); it != transfers.end()) drop(it, false);
    } else {
      count([](ServerStats& s) { ++s.rejected; });
      const std::string type(wire::to_string(m->header.type));
      log_rejection("rejected " + type + " from " + peer_name(frames) + ": a data endpoint takes only fetch_item, ack and nack");
      send_nack(peer, m->header.seq, 0, wire::RejectCode::unexpected, type + " is not accepted on a data endpoint");
    }
  }

  // One message per transfer per pass, so transfers share the link; passes
  // repeat while anything moves. Returns true when a send met a full pipe.
  bool pump(std::atomic<std::int64_t>& drop_chunk) {
    bool blocked = false;
    for (bool moved = true; moved;) {
      moved = false;
      for (auto it = transfers.begin(); it != transfers.end();) {
        auto next = std::next(it);
        Transfer& t = it->second;
        std::optional<wire::Result<wire::OutMessage>> msg;
        std::int64_t chunk = -1;
        if (t.descriptor_due) {
          msg.emplace(t.out->descriptor(++seq));
        } else {
          while (!t.queue.empty() && t.delivered[t.queue.front()]) {
            t.queued[t.queue.front()] = false;
            t.queue.pop_front();
          }
          if (!t.queue.empty() && t.in_flight_count < options.window_chunks) {
            chunk = t.queue.front();
            msg.emplace(t.out->chunk(static_cast<std::uint32_t>(chunk), ++seq));
          }
        }
        if (!msg) {
          it = next;
          continue;
        }
        if (!*msg) {
          // The codec refused its own item: a bug, not the peer's fault.
          options.log(LogLevel::error, "item server: cannot encode " + describe(t.item) + ": " + msg->error().describe());
          send_nack(t.peer, 0, t.id, wire::RejectCode::internal, msg->error().reason);
          drop(it, false);
          it = next;
          continue;
        }
        auto expected = chunk;
        const bool lose = chunk >= 0 && drop_chunk.compare_exchange_strong(expected, -1);
        const auto r = lose ? zio::SendResult::sent : zio::send(socket, t.peer, **msg, true);
        if (r == zio::SendResult::would_block) {
          blocked = true;
        } else if (r == zio::SendResult::unreachable) {
          options.log(LogLevel::debug, "item server: consumer of " + describe(t.item) + " (peer " +
                                           zio::hex_id(t.peer) + ") is gone; transfer dropped");
          drop(it, false);
        } else {
          moved = true;
          if (chunk < 0) {
            t.descriptor_due = false;
            t.descriptor_sent = Clock::now();
          } else {
            const auto i = static_cast<std::uint32_t>(chunk);
            t.queue.pop_front();
            t.queued[i] = false;
            t.in_flight[i] = true;
            ++t.in_flight_count;
            count([](ServerStats& s) { ++s.chunks_sent; });
          }
        }
        it = next;
      }
    }
    return blocked;
  }

  bool has_sendable() const {
    for (const auto& [k, t] : transfers)
      if (t.descriptor_due || (!t.queue.empty() && t.in_flight_count < options.window_chunks)) return true;
    return false;
  }

  void expire() {
    const auto now = Clock::now();
    for (auto it = transfers.begin(); it != transfers.end();) {
      auto next = std::next(it);
      if (now - it->second.last_activity >= options.idle_timeout) {
        options.log(LogLevel::info, "item server: transfer " + std::to_string(it->second.id) + " of " +
                                        describe(it->second.item) + " to peer " + zio::hex_id(it->second.peer) +
                                        " expired (no ack or request for " +
                                        std::to_string(options.idle_timeout.count()) + " ms)");
        drop(it, true);
      }
      it = next;
    }
  }

  void run(const std::atomic<bool>& stop, std::atomic<std::int64_t>& drop_chunk) {
    bool blocked = false;
    auto last_expiry = Clock::now();
    while (!stop) {
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      const auto wait = blocked ? blocked_poll : (has_sendable() ? std::chrono::milliseconds(0) : idle_poll);
      try {
        zmq::poll(&item, 1, wait);
        for (int n = 0; n < max_receive_batch; ++n) {
          std::vector<zmq::message_t> frames;
          if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)) break;
          on_message(frames);
        }
        blocked = pump(drop_chunk);
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        if (e.num() == ETERM) return;
        // Nothing a peer sends reaches here (decode never throws); an error
        // from libzmq itself is logged and the loop goes on.
        options.log(LogLevel::error, std::string("item server: ") + e.what());
      } catch (const std::exception& e) {
        // bad_alloc building a message, say: one transfer's problem, not
        // the node's. Its consumer retries.
        options.log(LogLevel::error, std::string("item server: ") + e.what());
      }
      if (Clock::now() - last_expiry >= std::chrono::milliseconds(100)) {
        expire();
        last_expiry = Clock::now();
      }
    }
  }
};

ItemServer::ItemServer(const store::ItemStore& items, ServerOptions options)
    : impl_(std::make_unique<Impl>(items, std::move(options))) {
  endpoint_ = security::secure_bind(impl_->socket, impl_->options.endpoint);
  // The socket is used only by the thread from now on; thread creation
  // orders the accesses, as libzmq requires.
  thread_ = std::thread([this] { impl_->run(stop_, drop_chunk_); });
}

ItemServer::~ItemServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

ServerStats ItemServer::stats() const {
  std::lock_guard lock(impl_->stats_m);
  return impl_->stats;
}

}  // namespace flowd::net::transport

#include "net/transport/client.hpp"

#include <sys/mman.h>
#include <zmq_addon.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "net/zio/zio.hpp"

namespace flowd::net::transport {

namespace {

using Clock = std::chrono::steady_clock;
namespace wire = flowd::wire;

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

constexpr std::size_t huge_page = 2u << 20;

// The default destination of a received array. A large item lands in
// memory the process has never touched, so with 4 KiB pages the copy of
// each chunk into it takes a page fault every 4 KiB (measured: a memcpy of
// 64 MiB into fresh memory costs 3.5x one into touched memory). Asking for
// transparent huge pages (THP "madvise" mode, the common default) cuts the
// faults 512-fold. Small arrays gain nothing and keep the ordinary path.
flowd::Array huge_page_array(flowd::DType dtype, std::span<const std::int64_t> shape) {
  std::size_t bytes = flowd::size_of(dtype);
  for (const auto d : shape) bytes *= static_cast<std::size_t>(d);  // validated by the assembler: no overflow
  if (bytes < 2 * huge_page) return flowd::Array::uninitialized(dtype, shape);
  const std::size_t length = (bytes + huge_page - 1) / huge_page * huge_page + huge_page;
  void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();  // the assembler reports out_of_memory
  // Huge pages need 2 MiB-aligned ranges; mmap only promises 4 KiB.
  const auto addr = reinterpret_cast<std::uintptr_t>(base);
  auto* data = reinterpret_cast<void*>((addr + huge_page - 1) / huge_page * huge_page);
  ::madvise(data, length - huge_page, MADV_HUGEPAGE);  // advice only: without THP, ordinary pages
  std::shared_ptr<void> owner(base, [length](void* p) { ::munmap(p, length); });
  return flowd::Array::adopt(std::move(owner), data, dtype, shape);
}

}  // namespace

ItemClient::ItemClient(ClientOptions options) : options_(std::move(options)) {
  if (!options_.log) options_.log = [](LogLevel, std::string_view) {};
  if (options_.retry_interval.count() <= 0) throw Error("ItemClient: retry_interval must be positive");
  if (!options_.allocate) options_.allocate = huge_page_array;
  // Transfer ids are per connection on the server's side; starting at a
  // random point keeps a reconnecting client (same process, new socket)
  // from reusing the ids of transfers the server may still remember.
  std::random_device rd;
  next_transfer_ = (static_cast<std::uint64_t>(rd()) << 32 | rd()) >> 1;
}

ItemClient::~ItemClient() = default;

void ItemClient::PeerSocket::update() {
  std::vector<zmq::message_t> frames;
  while (frames.clear(), zmq::recv_multipart(monitor, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
    if (frames.empty() || frames[0].size() < sizeof(std::uint16_t)) continue;
    std::uint16_t event = 0;
    std::memcpy(&event, frames[0].data(), sizeof event);
    if (event == ZMQ_EVENT_CONNECTED) connected = true;
    if (event == ZMQ_EVENT_DISCONNECTED) connected = false;
  }
}

ItemClient::PeerSocket& ItemClient::socket_for(const Peer& peer) {
  const std::string key = peer.endpoint + "|" + peer.server_public_key;
  if (auto it = sockets_.find(key); it != sockets_.end()) return it->second;
  zmq::socket_t s(ctx_, zmq::socket_type::dealer);
  // Watched from before the connect, so that its first connection counts.
  const std::string watch = "inproc://flowd-item-client-" + std::to_string(reinterpret_cast<std::uintptr_t>(s.handle()));
  if (zmq_socket_monitor(s.handle(), watch.c_str(), ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0)
    throw Error("fetching from " + peer.endpoint + ": cannot watch the connection: " + zmq_strerror(zmq_errno()));
  zmq::socket_t monitor(ctx_, zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(watch);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvhwm, std::max(1, options_.receive_hwm));
  // A frame bigger than any chunk the limits allow is cut off by libzmq
  // before it is allocated: a hostile peer cannot make us take 16 GiB.
  s.set(zmq::sockopt::maxmsgsize,
        static_cast<std::int64_t>(std::max<std::uint64_t>(options_.limits.max_header_bytes, options_.limits.max_chunk_bytes)));
  if (options_.curve) {
    auto creds = *options_.curve;
    if (!peer.server_public_key.empty()) creds.server_public_key = peer.server_public_key;
    security::configure_curve_client(s, creds);
  } else if (!peer.server_public_key.empty()) {
    throw Error("fetching from " + peer.endpoint + ": the peer has a CURVE key but this client has no key pair");
  }
  security::secure_connect(s, peer.endpoint);
  return sockets_.emplace(key, PeerSocket{std::move(s), std::move(monitor)}).first->second;
}

void ItemClient::forget(const Peer& peer) { sockets_.erase(peer.endpoint + "|" + peer.server_public_key); }

namespace {
// How often a waiting fetch asks ClientOptions::abandon.
constexpr std::chrono::milliseconds abandon_poll{100};
}  // namespace

Item ItemClient::fetch(const Peer& peer, const wire::ItemId& id, std::chrono::milliseconds timeout) {
  last_ = FetchStats{};
  const std::string what = describe(id) + " from " + peer.endpoint;
  PeerSocket& peer_socket = socket_for(peer);
  zmq::socket_t& socket = peer_socket.socket;
  const std::uint64_t transfer = next_transfer_++;
  const auto start = Clock::now();
  const auto deadline = start + timeout;

  const auto fail = [&](FetchError::Kind kind, const std::string& why) -> FetchError {
    // Tell a live holder to drop the transfer now rather than at its idle
    // timeout; best effort, with a short linger so the nack can leave.
    try {
      auto nack = wire::encode(++seq_, wire::Nack{0, transfer, wire::whole_message, wire::RejectCode::unexpected,
                                                  "consumer gave up"},
                               options_.limits);
      if (nack) zio::send(socket, {}, *nack, true);
      socket.set(zmq::sockopt::linger, 100);
    } catch (const zmq::error_t&) {
    }
    // A fresh socket next time: requests still queued for a dead peer, and
    // replies to this transfer, must not reach the next fetch.
    forget(peer);
    return FetchError(kind, "fetching " + what + ": " + why);
  };
  const auto send = [&](const wire::Body& body) {
    auto msg = wire::encode(++seq_, body, options_.limits);
    if (!msg) throw fail(FetchError::Kind::corrupt, "cannot encode a request: " + msg.error().describe());
    // A full pipe means the peer is not reading: the request counts as lost
    // and the retry timer covers it.
    zio::send(socket, {}, *msg, true);
  };
  const auto request = [&](std::vector<std::uint32_t> chunks) {
    send(wire::FetchItem{transfer, id, std::move(chunks)});
  };

  std::optional<wire::ItemAssembler> assembler;
  const auto ask_again = [&](const char* why) {
    if (last_.retries >= options_.max_retries)
      throw fail(FetchError::Kind::timed_out,
                 std::string(why) + " and " + std::to_string(last_.retries) + " retries did not help (" +
                     (assembler ? std::to_string(assembler->received()) + " of " +
                                      std::to_string(assembler->descriptor().chunk_count) + " chunks received"
                                : std::string("no descriptor received")) +
                     ")");
    ++last_.retries;
    options_.log(LogLevel::debug, "fetching " + what + ": " + why + "; asking again (retry " +
                                      std::to_string(last_.retries) + ")");
    request(assembler ? assembler->missing(options_.limits.max_list_entries) : std::vector<std::uint32_t>{});
  };

  request({});
  auto last_progress = Clock::now();
  while (true) {
    const auto now = Clock::now();
    if (now >= deadline)
      throw fail(FetchError::Kind::timed_out,
                 "no complete answer within " + ms(timeout) + " (" +
                     (assembler ? std::to_string(assembler->received()) + " of " +
                                      std::to_string(assembler->descriptor().chunk_count) + " chunks received"
                                : std::string("nothing received: is the peer up, and does it accept our CURVE key?")) +
                     ", " + std::to_string(last_.retries) + " retries)");
    // While the peer is connected, the silence allowed doubles with each
    // retry, up to 8 intervals: on a slow link shared by several transfers an
    // answer may queue behind other items for seconds, and asking again at
    // once only adds to the queue. A peer that is not connected gets no such
    // patience (ClientOptions::retry_interval).
    if (options_.abandon)
      if (auto why = options_.abandon(peer.endpoint)) throw fail(FetchError::Kind::abandoned, *why);
    peer_socket.update();
    const auto silence = options_.retry_interval * (peer_socket.connected ? 1 << std::min(last_.retries, 3) : 1);
    const auto wake = std::min(deadline, last_progress + silence);
    if (now >= wake) {
      ask_again(assembler ? "chunks stopped arriving" : "no answer");
      last_progress = Clock::now();
      continue;
    }
    zmq::pollitem_t readable{socket.handle(), 0, ZMQ_POLLIN, 0};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now) + std::chrono::milliseconds(1);
    if (options_.abandon) wait = std::min(wait, abandon_poll);
    zmq::poll(&readable, 1, wait);
    std::vector<zmq::message_t> frames;
    while (frames.clear(), zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      const auto views = zio::views(frames);
      auto m = wire::decode(views, options_.limits);
      if (!m) {
        // Not ours to answer: a reply we cannot read is lost, and the retry
        // timer recovers it.
        ++last_.rejected;
        options_.log(LogLevel::warning, "fetching " + what + ": " + m.error().describe());
        continue;
      }
      const auto& h = m->header;
      if (const auto* n = std::get_if<wire::Nack>(&m->body)) {
        if (n->transfer_id != transfer) continue;
        const bool missing = n->reason.find("not held here") != std::string::npos;
        throw fail(missing ? FetchError::Kind::not_found : FetchError::Kind::refused,
                   "the peer refused: " + n->reason + " (" + std::string(wire::to_string(n->code)) + ")");
      }
      if (const auto* d = std::get_if<wire::ItemData>(&m->body)) {
        if (d->transfer_id != transfer) continue;  // a reply to an earlier, failed fetch
        send(wire::Ack{h.seq, transfer, wire::whole_message});
        last_progress = Clock::now();
        if (assembler) continue;  // our whole-item retry crossed the first answer
        auto a = wire::ItemAssembler::start(*d, m->payload, options_.limits, options_.allocate);
        if (!a) {
          if (a.error().code != wire::RejectCode::bad_checksum)
            throw fail(FetchError::Kind::corrupt, "the descriptor was refused: " + a.error().describe());
          ++last_.rejected;
          options_.log(LogLevel::warning, "fetching " + what + ": " + a.error().describe());
          ask_again("the first chunk arrived damaged");
          continue;
        }
        assembler.emplace(std::move(a).value());
        last_.chunks += assembler->received();
      } else if (const auto* c = std::get_if<wire::ItemChunk>(&m->body)) {
        if (c->transfer_id != transfer || !assembler) continue;
        const auto r = assembler->add(*c, m->payload.at(0));
        if (!r) {
          ++last_.rejected;
          options_.log(LogLevel::warning, "fetching " + what + ": " + r.error().describe());
          if (last_.retries >= options_.max_retries)
            throw fail(FetchError::Kind::corrupt, "chunk " + std::to_string(c->index) + " refused: " + r.error().describe());
          ++last_.retries;
          request({c->index});
          continue;
        }
        send(wire::Ack{h.seq, transfer, c->index});
        last_progress = Clock::now();
        if (*r == wire::ChunkStatus::duplicate) ++last_.duplicates;
        else ++last_.chunks;
      } else {
        ++last_.rejected;
        options_.log(LogLevel::warning, "fetching " + what + ": ignored an unexpected " +
                                            std::string(wire::to_string(h.type)) + " from the peer");
        continue;
      }
      if (assembler && assembler->complete()) {
        auto item = assembler->finish();
        if (!item) throw fail(FetchError::Kind::corrupt, item.error().describe());
        return std::move(item).value();
      }
    }
  }
}

}  // namespace flowd::net::transport

#pragma once
// flowd's versioned wire codec (docs/wire-format.md): messages to frames
// and back, items to zero-copy chunked payload frames and back into one
// preallocated buffer. No sockets here: frames are plain byte spans, so the
// socket layer (ZeroMQ) and the fuzzer drive the same code.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "flowd/item.hpp"
#include "wire/messages.hpp"
#include "wire/result.hpp"
#include "wire/xxhash64.hpp"

namespace flowd::wire {

// A received frame: the bytes ZeroMQ handed us, borrowed for the call.
using FrameView = std::span<const std::byte>;

// A frame to send. `bytes` may point into an item's array; `owner` keeps
// that memory alive until the socket layer has sent it (with ZeroMQ: pass
// a heap copy of `owner` as the hint of zmq_msg_init_data and delete it in
// the free function; nothing is copied).
struct OutFrame {
  std::span<const std::byte> bytes{};
  std::shared_ptr<const void> owner{};
};
using OutMessage = std::vector<OutFrame>;

// Encodes a message without payload frames (everything but item_data and
// item_chunk, which OutgoingItem makes). Rejected when the body would break
// `limits` (the peer would reject it) or holds unserialisable JSON.
Result<OutMessage> encode(std::uint64_t seq, const Body& body, const Limits& limits = {});

// A decoded message. `payload` views the caller's frames: valid only while
// they are.
struct Message {
  Header header{};
  Body body{};
  std::vector<FrameView> payload{};
};

// Checks and parses one multipart message: prefix, version, header size,
// checksum, type, the body field by field (item descriptors included:
// shape × dtype = payload bytes, chunk arithmetic, bbox/core dims, JSON
// size and depth), and the number of payload frames. Never throws.
Result<Message> decode(std::span<const FrameView> frames, const Limits& limits = {});

// The prefix of a header frame as it claims to be, unverified: enough to
// answer a rejected message with a nack referring to its seq. Empty when
// the frame is too short or not a flowd frame.
std::optional<Header> peek_header(FrameView frame) noexcept;

// How an item is cut into frames.
struct EncodeOptions {
  std::uint64_t chunk_bytes = 16ull << 20;  // a 1 GiB array leaves as 64 frames
  std::uint32_t inline_chunks = 1;          // chunks sent inside item_data (a small item is one message)
  Limits limits{};
};

// One item being sent. make() hashes the payload once (the descriptor
// carries the digest); descriptor() and chunk() then build messages whose
// payload frames are views of the item's memory: a contiguous host array is
// never copied. Copies are made only for
//   - a strided (non-contiguous) array: made contiguous once, see
//     made_contiguous();
//   - tables (columns serialised into one buffer) and JSON values (text).
// Device arrays are rejected: the runtime stages them to host first.
// Immutable after make(); chunk() may be called again for retries.
class OutgoingItem {
public:
  static Result<OutgoingItem> make(const Item& item, std::uint64_t transfer_id, const EncodeOptions& options = {});

  // The item_data message: the descriptor + chunks [0, inline_chunks()).
  Result<OutMessage> descriptor(std::uint64_t seq) const;
  // An item_chunk message for chunk `index` (any index, for retries).
  Result<OutMessage> chunk(std::uint32_t index, std::uint64_t seq) const;

  // The same item for another transfer. The hashes do not depend on the
  // transfer id, so serving an item again shares the payload and the hashes
  // make() computed: no second pass over the bytes.
  OutgoingItem for_transfer(std::uint64_t transfer_id) const;

  std::uint64_t transfer_id() const noexcept { return data_->transfer_id; }
  std::uint64_t payload_bytes() const noexcept { return data_->payload_bytes; }
  std::uint32_t chunk_count() const noexcept { return data_->chunk_count; }
  std::uint32_t inline_chunks() const noexcept { return static_cast<std::uint32_t>(data_->inline_hashes.size()); }
  bool made_contiguous() const noexcept { return made_contiguous_; }
  const ItemData& descriptor_body() const noexcept { return *data_; }

private:
  OutgoingItem() = default;
  std::span<const std::byte> chunk_bytes(std::uint32_t index) const noexcept;

  std::shared_ptr<ItemData> data_;
  std::span<const std::byte> payload_{};
  std::shared_ptr<const void> payload_owner_{};
  std::vector<std::uint64_t> hashes_{};
  Limits limits_{};
  bool made_contiguous_ = false;
};

// Allocates the destination of an incoming array (e.g. pinned memory). It
// must return a contiguous host array of exactly that dtype and shape.
using ArrayAllocator = std::function<Array(DType, std::span<const std::int64_t>)>;

enum class ChunkStatus : std::uint8_t { accepted, duplicate };

// Reassembles one incoming item. start() allocates the destination once, at
// its final size: an array's bytes are written straight into the Array that
// finish() returns, so receiving N bytes needs N bytes plus the chunk in
// hand, never 2N. Chunks may come in any order and more than once (retries).
// Each is checked against its hash before it is copied; finish() checks the
// digest over all chunk hashes. Never throws.
class ItemAssembler {
public:
  static Result<ItemAssembler> start(const ItemData& descriptor, std::span<const FrameView> inline_frames,
                                     const Limits& limits = {}, const ArrayAllocator& allocate = {});

  Result<ChunkStatus> add(const ItemChunk& chunk, FrameView bytes);

  bool complete() const noexcept { return received_ == data_.chunk_count; }
  std::uint32_t received() const noexcept { return received_; }
  // Chunks not yet received, at most `max` of them (for a fetch_item retry).
  std::vector<std::uint32_t> missing(std::size_t max = 64) const;
  std::uint64_t transfer_id() const noexcept { return data_.transfer_id; }
  const ItemData& descriptor() const noexcept { return data_; }

  // The item, once complete(); the assembler is empty afterwards.
  Result<Item> finish();

private:
  ItemAssembler() = default;
  Result<ChunkStatus> put(std::uint32_t index, std::uint64_t hash, FrameView bytes);

  ItemData data_{};
  Limits limits_{};
  Array array_{};                             // destination of array payloads
  std::unique_ptr<std::byte[]> buffer_{};     // destination of table/JSON payloads
  std::byte* dest_ = nullptr;
  std::vector<std::uint64_t> hashes_{};
  std::vector<bool> have_{};
  std::uint32_t received_ = 0;
  bool finished_ = false;
};

// decode() + start() + finish() for an item_data message that carries all
// its chunks (tests, fuzzing, small items).
Result<Item> decode_item(std::span<const FrameView> frames, const Limits& limits = {});

}  // namespace flowd::wire

#pragma once
// The messages of flowd's wire protocol, version 1 (docs/wire-format.md).
//
// Every message is one ZeroMQ multipart message: a header frame (fixed
// 32-byte prefix + a type-specific binary body) followed by payload frames
// (item_data, item_chunk only). Bodies are a compact little-endian binary
// encoding rather than JSON: they are parsed from untrusted bytes on every
// message, and a length-prefixed binary layout can be bounds-checked field by
// field without a general-purpose parser, makes every size explicit before
// anything is allocated, and costs nothing to parse at chunk rates. JSON
// appears only where the content is open-ended (item attrs, JSON values,
// hello/welcome/assign extras), always length-prefixed, size- and
// depth-limited.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "flowd/item.hpp"
#include "wire/result.hpp"

namespace flowd::wire {

inline constexpr std::uint32_t wire_magic = 0x44574C46;  // "FLWD" as it appears on the wire
inline constexpr std::uint16_t wire_version = 2;
inline constexpr std::size_t header_prefix_bytes = 32;

// Numbers are part of the format: never reuse or renumber; a new type
// means a new version.
enum class MessageType : std::uint8_t {
  hello = 1,             // worker -> coordinator: I joined; my slots and data endpoint
  welcome = 2,           // coordinator -> worker: your id, heartbeat period, run config
  heartbeat = 3,         // both ways: still alive; load
  request_work = 4,      // worker -> coordinator: demand-driven pull, "I can take N tasks"
  assign_task = 5,       // coordinator -> worker: run this stage on these items (and where they live)
  task_done = 6,         // worker -> coordinator: finished; the items it produced stay on the worker
  task_failed = 7,       // worker -> coordinator: failed; retry elsewhere or not
  fetch_item = 8,        // consumer -> holder (peer to peer): send me this item, or these chunks again
  item_data = 9,         // holder -> consumer: item descriptor + the first chunks as payload frames
  item_chunk = 10,       // holder -> consumer: one more chunk (one payload frame)
  ack = 11,              // receiver -> sender: message/chunk accepted (sender stops its retry timer)
  nack = 12,             // receiver -> sender: rejected, with the reason code; sender retries now
  directory_update = 13, // worker -> coordinator: items added to / dropped from my store
  steal_request = 14,    // coordinator -> busy worker: give back up to N queued tasks
  steal_reply = 15,      // busy worker -> coordinator: these task ids were not started; reassign them
  release_items = 16,    // coordinator -> holder: every consumer has these; free them
  bye = 17,              // both ways: orderly leave / shutdown
  holder_lost = 18,      // coordinator -> workers: this node is gone; stop pulling from it (version 2)
};
inline constexpr int message_type_count = 18;

std::string_view to_string(MessageType t) noexcept;

// Every size the decoder trusts is bounded by one of these before anything
// is allocated. Both sides should use the same limits: the encoder checks
// its output against them, so a sender learns of a violation locally.
struct Limits {
  std::size_t max_header_bytes = 1u << 20;     // header frame, prefix + body
  std::size_t max_key_bytes = 4096;            // item keys
  std::size_t max_string_bytes = 64u << 10;    // names, endpoints, stage names, messages
  std::size_t max_attrs_bytes = 64u << 10;     // ItemMeta::attrs as JSON text
  std::size_t max_json_bytes = 512u << 10;     // JSON fields of control messages (hello info, welcome config, task spec)
  std::size_t max_json_depth = 64;             // nesting of any JSON we parse
  std::size_t max_list_entries = 1u << 16;     // inputs, outputs, directory entries, task ids, chunk lists
  std::uint64_t max_item_bytes = 16ull << 30;  // payload of one item
  // Tables are parsed out of the reassembled payload into their own
  // columns, so they briefly need twice their size; this bounds payload plus
  // decoded columns (a string costs sizeof(std::string) however short).
  std::uint64_t max_parsed_bytes = 256ull << 20;
  // JSON item values ("a small JSON value"): parsed JSON takes several times
  // its text size, so this is kept well below max_parsed_bytes.
  std::uint64_t max_json_value_bytes = 16ull << 20;
  std::uint64_t max_chunk_bytes = 256ull << 20;
  std::uint32_t max_chunks = 1u << 16;         // per item
  std::uint32_t max_inline_chunks = 64;        // payload frames in one item_data message
  std::uint32_t max_table_columns = 4096;
};

// Identity of an item ("item tuple"): key, version, logical timestamp.
struct ItemId {
  std::string key{};
  std::int64_t version = 0;
  std::int64_t timestamp = 0;
  friend bool operator==(const ItemId&, const ItemId&) = default;
};

// The identity an item travels under.
inline ItemId id_of(const ItemMeta& meta) { return ItemId{meta.key, meta.version, meta.timestamp}; }

// "item 'slide3/tile/12/40' (version 2, timestamp 0)": every error about an
// item names it this way.
inline std::string describe(const ItemId& id) {
  return "item '" + id.key + "' (version " + std::to_string(id.version) + ", timestamp " +
         std::to_string(id.timestamp) + ")";
}

// Where an item lives: the worker that holds it (0 = the coordinator) and
// its payload size, so a consumer can plan its pulls.
struct ItemRef {
  ItemId id{};
  std::uint32_t holder = 0;
  std::uint64_t bytes = 0;
  friend bool operator==(const ItemRef&, const ItemRef&) = default;
};

struct Hello {
  std::string name{};           // e.g. "host:pid"
  std::string data_endpoint{};  // where peers send fetch_item, e.g. "tcp://10.0.0.3:5601"
  std::uint32_t cpu_slots = 0;
  std::uint32_t gpu_slots = 0;
  Json info = Json::object();   // open-ended: plugins, GPU names, versions
  friend bool operator==(const Hello&, const Hello&) = default;
};
struct Welcome {
  std::uint32_t worker_id = 0;
  std::uint32_t heartbeat_ms = 0;
  Json config = Json::object();  // the run: workflow, overrides, peers
  friend bool operator==(const Welcome&, const Welcome&) = default;
};
struct Heartbeat {
  std::uint32_t running = 0;
  std::uint32_t queued = 0;
  friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};
struct RequestWork {
  std::uint32_t cpu_slots = 0;
  std::uint32_t gpu_slots = 0;
  friend bool operator==(const RequestWork&, const RequestWork&) = default;
};
struct AssignTask {
  std::uint64_t task_id = 0;
  std::string stage{};
  std::vector<ItemRef> inputs{};
  Json spec = Json::object();  // what else the task needs (variant, join tuple, reduce partial)
  friend bool operator==(const AssignTask&, const AssignTask&) = default;
};
// One item a task made: where it is stored on the worker (ref.id is the
// store's name for it, unique per task attempt), the output port it was
// emitted on and its metadata as made (the coordinator routes by meta.key
// without fetching the value).
struct TaskOutput {
  ItemRef ref{};
  std::uint32_t port = 0;
  ItemMeta meta{};
  friend bool operator==(const TaskOutput& a, const TaskOutput& b) {
    return a.ref == b.ref && a.port == b.port && a.meta.key == b.meta.key && a.meta.version == b.meta.version &&
           a.meta.timestamp == b.meta.timestamp && a.meta.bbox == b.meta.bbox && a.meta.core == b.meta.core &&
           a.meta.attrs == b.meta.attrs;
  }
};
struct TaskDone {
  std::uint64_t task_id = 0;
  double seconds = 0;  // run time, for the coordinator's performance model
  std::vector<TaskOutput> outputs{};  // in emission order
  friend bool operator==(const TaskDone&, const TaskDone&) = default;
};
struct TaskFailed {
  std::uint64_t task_id = 0;
  bool retryable = false;
  std::string message{};
  // Holders an input could not be pulled from (version 2): the coordinator
  // waits for them within the heartbeat bound or recomputes their items,
  // and does not count the failure against the task.
  std::vector<std::uint32_t> unreachable{};
  friend bool operator==(const TaskFailed&, const TaskFailed&) = default;
};
struct FetchItem {
  std::uint64_t transfer_id = 0;  // chosen by the consumer; echoed in item_data/item_chunk
  ItemId id{};
  std::vector<std::uint32_t> chunks{};  // empty: the whole item; else resend only these (retry)
  friend bool operator==(const FetchItem&, const FetchItem&) = default;
};

// Shape of the value an item carries, enough to size and check the payload.
struct ColumnSpec {
  std::string name{};
  ColumnType type = ColumnType::u8;
  friend bool operator==(const ColumnSpec&, const ColumnSpec&) = default;
};
struct ValueLayout {
  ValueKind kind = ValueKind::none;
  // array
  DType dtype = DType::u8;
  bool null_array = false;  // a default-constructed Array (no memory at all)
  std::vector<std::int64_t> shape{};
  // table
  std::uint64_t rows = 0;
  std::vector<ColumnSpec> columns{};
  friend bool operator==(const ValueLayout&, const ValueLayout&) = default;
};

// The descriptor of an item in transfer. The payload (array bytes in C
// order, serialised table columns, or JSON text) is cut into chunk_count
// chunks of chunk_bytes (the last one shorter); chunk i's hash is
// xxh64(chunk, seed = i) and digest = xxh64(all chunk hashes, seed =
// payload_bytes). The first inline_hashes.size() chunks travel as payload
// frames of this message; the rest as item_chunk messages.
struct ItemData {
  std::uint64_t transfer_id = 0;
  ItemMeta meta{};
  ValueLayout layout{};
  std::uint64_t payload_bytes = 0;
  std::uint64_t chunk_bytes = 0;
  std::uint32_t chunk_count = 0;
  std::uint64_t digest = 0;
  std::vector<std::uint64_t> inline_hashes{};
};
struct ItemChunk {
  std::uint64_t transfer_id = 0;
  std::uint32_t index = 0;
  std::uint64_t hash = 0;
  friend bool operator==(const ItemChunk&, const ItemChunk&) = default;
};

inline constexpr std::uint32_t whole_message = 0xFFFFFFFFu;  // Ack/Nack::chunk when not about a chunk

struct Ack {
  std::uint64_t ref_seq = 0;  // header.seq of the message acknowledged
  std::uint64_t transfer_id = 0;
  std::uint32_t chunk = whole_message;
  friend bool operator==(const Ack&, const Ack&) = default;
};
struct Nack {
  std::uint64_t ref_seq = 0;
  std::uint64_t transfer_id = 0;
  std::uint32_t chunk = whole_message;
  RejectCode code = RejectCode::malformed;
  std::string reason{};
  friend bool operator==(const Nack&, const Nack&) = default;
};
struct DirectoryEntry {
  bool present = true;  // false: the holder dropped it
  ItemRef ref{};
  friend bool operator==(const DirectoryEntry&, const DirectoryEntry&) = default;
};
struct DirectoryUpdate {
  std::vector<DirectoryEntry> entries{};
  friend bool operator==(const DirectoryUpdate&, const DirectoryUpdate&) = default;
};
struct StealRequest {
  std::uint32_t max_tasks = 0;
  std::uint32_t for_worker = 0;  // the idle worker the tasks will go to
  friend bool operator==(const StealRequest&, const StealRequest&) = default;
};
struct StealReply {
  std::vector<std::uint64_t> task_ids{};
  friend bool operator==(const StealReply&, const StealReply&) = default;
};
struct ReleaseItems {
  std::vector<ItemId> ids{};
  friend bool operator==(const ReleaseItems&, const ReleaseItems&) = default;
};
struct Bye {
  std::string reason{};
  friend bool operator==(const Bye&, const Bye&) = default;
};
struct HolderLost {
  std::uint32_t worker_id = 0;
  std::string data_endpoint{};  // where it served its items
  std::string reason{};
  friend bool operator==(const HolderLost&, const HolderLost&) = default;
};

// Alternative i is MessageType i + 1.
using Body = std::variant<Hello, Welcome, Heartbeat, RequestWork, AssignTask, TaskDone, TaskFailed, FetchItem, ItemData,
                          ItemChunk, Ack, Nack, DirectoryUpdate, StealRequest, StealReply, ReleaseItems, Bye,
                          HolderLost>;
static_assert(std::variant_size_v<Body> == message_type_count);

inline MessageType type_of(const Body& b) noexcept { return static_cast<MessageType>(b.index() + 1); }

// The fixed 32-byte prefix of every header frame, little-endian:
//   0 u32 magic | 4 u16 version | 6 u8 type | 7 u8 flags (0)
//   8 u64 seq | 16 u32 body_bytes | 20 u32 payload_frames | 24 u64 checksum
// checksum = xxh64(body, seed = xxh64(bytes 0..24, seed 0)).
struct Header {
  std::uint16_t version = wire_version;
  MessageType type = MessageType::hello;
  std::uint8_t flags = 0;
  std::uint64_t seq = 0;  // per-connection sequence number chosen by the sender; acks refer to it
  std::uint32_t body_bytes = 0;
  std::uint32_t payload_frames = 0;
  std::uint64_t checksum = 0;
};

}  // namespace flowd::wire

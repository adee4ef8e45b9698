#pragma once
// Every message body as one list of its fields in wire order
// (docs/wire-format.md). The same list is written by the Encoder, read and
// checked by the Decoder and measured by MinBytes (codec.hpp), so the two
// directions cannot drift apart: a field added, moved or retyped here
// changes both at once. Checks that only bytes from a peer need (ranges
// that span several fields, overflow) sit under `if constexpr
// (Io::decoding)`. The strings name the field in rejection reasons and are
// part of what peers and logs see: keep them as they are.
#include <cstddef>
#include <cstdint>
#include <string>

#include "wire/codec.hpp"

namespace flowd::wire::detail {

// ---- field groups ----------------------------------------------------------

template <class Io>
void fields(Io& io, ItemId& v) {
  io.str(v.key, &Limits::max_key_bytes, "item key");
  io.num(v.version, "item version");
  io.num(v.timestamp, "item timestamp");
}

template <class Io>
void fields(Io& io, ItemRef& v) {
  fields(io, v.id);
  io.num(v.holder, "item holder");
  io.num(v.bytes, "item bytes");
}

template <class Io>
void fields(Io& io, Box& b, const char* what) {
  auto ndim = static_cast<std::uint8_t>(b.ndim);
  io.num(ndim, what);
  if constexpr (Io::decoding) {
    // Before the loops below, which index fixed arrays of max_dims.
    if (ndim > Box::max_dims) {
      io.fail(RejectCode::malformed, std::string(what) + ": " + std::to_string(ndim) + " dimensions; at most " +
                                         std::to_string(Box::max_dims));
      return;
    }
    b.ndim = ndim;
  }
  for (int d = 0; d < b.ndim; ++d)
    io.num(b.origin[static_cast<std::size_t>(d)], what);
  for (int d = 0; d < b.ndim; ++d)
    io.num(b.extent[static_cast<std::size_t>(d)], what);
  if constexpr (Io::decoding) {
    for (std::size_t d = 0; d < ndim && io.ok(); ++d) {
      std::int64_t end;
      if (b.extent[d] < 0 || __builtin_add_overflow(b.origin[d], b.extent[d], &end))
        io.fail(RejectCode::malformed, std::string(what) + ": dimension " + std::to_string(d) + " has extent " +
                                           std::to_string(b.extent[d]) + " at origin " + std::to_string(b.origin[d]));
    }
  }
}

// Item metadata, as in item_data and task_done. The boxes byte says which
// of bbox (1) and core (2) follow.
template <class Io>
void fields(Io& io, ItemMeta& m) {
  io.str(m.key, &Limits::max_key_bytes, "item key");
  io.num(m.version, "item version");
  io.num(m.timestamp, "item timestamp");
  const auto boxes = io.flags(static_cast<std::uint8_t>((m.bbox ? 1 : 0) | (m.core ? 2 : 0)), 3, "item boxes");
  if (boxes & 1) fields(io, io.present(m.bbox), "item bbox");
  if (boxes & 2) fields(io, io.present(m.core), "item core");
  io.json(m.attrs, &Limits::max_attrs_bytes, "item attrs");
}

template <class Io>
void fields(Io& io, TaskOutput& o) {
  fields(io, o.ref);
  io.num(o.port, "task_done output port");
  fields(io, o.meta);
}

template <class Io>
void fields(Io& io, DirectoryEntry& e) {
  io.num(e.present, "directory entry present");
  fields(io, e.ref);
}

template <class Io>
void fields(Io& io, ColumnSpec& c) {
  io.str(c.name, &Limits::max_string_bytes, "column name");
  io.enumeration(c.type, ColumnType::u8, ColumnType::string, "column type",
                 [&c] { return "column '" + c.name + "' type"; });
}

// What follows the kind depends on it: dtype, null flag and shape for an
// array, rows and columns for a table, nothing for JSON and none.
template <class Io>
void fields(Io& io, ValueLayout& v) {
  io.enumeration(v.kind, ValueKind::none, ValueKind::json, "value kind");
  if (v.kind == ValueKind::array) {
    io.enumeration(v.dtype, DType{}, static_cast<DType>(dtype_count - 1), "array dtype");
    io.num(v.null_array, "array null flag");
    auto ndim = static_cast<std::uint8_t>(v.shape.size());
    io.num(ndim, "array ndim");
    if constexpr (Io::decoding) {
      if (ndim > max_ndim)
        io.fail(RejectCode::malformed,
                "array of " + std::to_string(ndim) + " dimensions; at most " + std::to_string(max_ndim));
      if (io.ok()) v.shape.resize(ndim);  // only a checked ndim sizes anything
    }
    for (auto& e : v.shape)
      io.num(e, "array shape");
  } else if (v.kind == ValueKind::table) {
    io.num(v.rows, "table rows");
    io.list(v.columns, &Limits::max_table_columns, "table columns");
  }
}

// ---- bodies ----------------------------------------------------------------

template <class Io>
void fields(Io& io, Hello& b) {
  io.str(b.name, &Limits::max_string_bytes, "hello name");
  io.str(b.data_endpoint, &Limits::max_string_bytes, "hello data endpoint");
  io.num(b.cpu_slots, "hello cpu slots");
  io.num(b.gpu_slots, "hello gpu slots");
  io.json(b.info, &Limits::max_json_bytes, "hello info");
}

template <class Io>
void fields(Io& io, Welcome& b) {
  io.num(b.worker_id, "welcome worker id");
  io.num(b.heartbeat_ms, "welcome heartbeat");
  io.json(b.config, &Limits::max_json_bytes, "welcome config");
}

template <class Io>
void fields(Io& io, Heartbeat& b) {
  io.num(b.running, "heartbeat running");
  io.num(b.queued, "heartbeat queued");
}

template <class Io>
void fields(Io& io, RequestWork& b) {
  io.num(b.cpu_slots, "request_work cpu slots");
  io.num(b.gpu_slots, "request_work gpu slots");
}

template <class Io>
void fields(Io& io, AssignTask& b) {
  io.num(b.task_id, "assign_task id");
  io.str(b.stage, &Limits::max_string_bytes, "assign_task stage");
  io.list(b.inputs, &Limits::max_list_entries, "assign_task inputs");
  io.json(b.spec, &Limits::max_json_bytes, "assign_task spec");
}

template <class Io>
void fields(Io& io, TaskDone& b) {
  io.num(b.task_id, "task_done id");
  io.num(b.seconds, "task_done seconds");
  io.list(b.outputs, &Limits::max_list_entries, "task_done outputs");
}

template <class Io>
void fields(Io& io, TaskFailed& b) {
  io.num(b.task_id, "task_failed id");
  io.num(b.retryable, "task_failed retryable");
  io.str(b.message, &Limits::max_string_bytes, "task_failed message");
  io.list(b.unreachable, &Limits::max_list_entries, "task_failed unreachable", "holder");
}

template <class Io>
void fields(Io& io, FetchItem& b) {
  io.num(b.transfer_id, "fetch_item transfer");
  fields(io, b.id);
  io.list(b.chunks, &Limits::max_list_entries, "fetch_item chunks", "chunk");
}

// The item descriptor; validate_descriptor() checks how its fields fit
// together.
template <class Io>
void fields(Io& io, ItemData& b) {
  io.num(b.transfer_id, "item_data transfer");
  fields(io, b.meta);
  fields(io, b.layout);
  io.num(b.payload_bytes, "payload bytes");
  io.num(b.chunk_bytes, "chunk bytes");
  io.num(b.chunk_count, "chunk count");
  io.num(b.digest, "digest");
  io.list(b.inline_hashes, &Limits::max_inline_chunks, "inline chunks", "inline chunk hash");
}

template <class Io>
void fields(Io& io, ItemChunk& b) {
  io.num(b.transfer_id, "item_chunk transfer");
  io.num(b.index, "item_chunk index");
  io.num(b.hash, "item_chunk hash");
}

template <class Io>
void fields(Io& io, Ack& b) {
  io.num(b.ref_seq, "ack seq");
  io.num(b.transfer_id, "ack transfer");
  io.num(b.chunk, "ack chunk");
}

template <class Io>
void fields(Io& io, Nack& b) {
  io.num(b.ref_seq, "nack seq");
  io.num(b.transfer_id, "nack transfer");
  io.num(b.chunk, "nack chunk");
  io.enumeration(b.code, RejectCode::truncated, RejectCode::internal, "nack code");
  io.str(b.reason, &Limits::max_string_bytes, "nack reason");
}

template <class Io>
void fields(Io& io, DirectoryUpdate& b) {
  io.list(b.entries, &Limits::max_list_entries, "directory entries");
}

template <class Io>
void fields(Io& io, StealRequest& b) {
  io.num(b.max_tasks, "steal_request max tasks");
  io.num(b.for_worker, "steal_request for worker");
}

template <class Io>
void fields(Io& io, StealReply& b) {
  io.list(b.task_ids, &Limits::max_list_entries, "steal_reply tasks", "task id");
}

template <class Io>
void fields(Io& io, ReleaseItems& b) {
  io.list(b.ids, &Limits::max_list_entries, "release_items ids");
}

template <class Io>
void fields(Io& io, Bye& b) {
  io.str(b.reason, &Limits::max_string_bytes, "bye reason");
}

template <class Io>
void fields(Io& io, HolderLost& b) {
  io.num(b.worker_id, "holder_lost worker");
  io.str(b.data_endpoint, &Limits::max_string_bytes, "holder_lost endpoint");
  io.str(b.reason, &Limits::max_string_bytes, "holder_lost reason");
}

}  // namespace flowd::wire::detail

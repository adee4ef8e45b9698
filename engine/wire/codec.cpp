#include "wire/codec.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <unordered_set>

#include "wire/fields.hpp"

namespace flowd::wire {

std::string_view to_string(MessageType t) noexcept {
  switch (t) {
    case MessageType::hello: return "hello";
    case MessageType::welcome: return "welcome";
    case MessageType::heartbeat: return "heartbeat";
    case MessageType::request_work: return "request_work";
    case MessageType::assign_task: return "assign_task";
    case MessageType::task_done: return "task_done";
    case MessageType::task_failed: return "task_failed";
    case MessageType::fetch_item: return "fetch_item";
    case MessageType::item_data: return "item_data";
    case MessageType::item_chunk: return "item_chunk";
    case MessageType::ack: return "ack";
    case MessageType::nack: return "nack";
    case MessageType::directory_update: return "directory_update";
    case MessageType::steal_request: return "steal_request";
    case MessageType::steal_reply: return "steal_reply";
    case MessageType::release_items: return "release_items";
    case MessageType::bye: return "bye";
    case MessageType::holder_lost: return "holder_lost";
  }
  return "unknown";
}

namespace detail {

std::string hex(std::uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Rejected from_exception() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return reject(RejectCode::out_of_memory, "out of memory");
  } catch (const std::exception& e) {
    return reject(RejectCode::internal, e.what());
  } catch (...) {
    return reject(RejectCode::internal, "unknown exception");
  }
}

void Encoder::json_text(const Json& j) { text(j.dump(-1, ' ', false, Json::error_handler_t::strict)); }

bool Reader::boolean(const char* what) {
  const auto v = num<std::uint8_t>(what);
  if (v > 1) fail(RejectCode::malformed, std::string(what) + ": boolean is " + std::to_string(v));
  return v == 1;
}

double Reader::f64(const char* what) {
  const double v = std::bit_cast<double>(num<std::uint64_t>(what));
  if (!std::isfinite(v)) {
    fail(RejectCode::malformed, std::string(what) + ": not a finite number");
    return 0;
  }
  return v;
}

std::span<const std::byte> Reader::bytes(std::size_t n, const char* what) {
  if (error_) return {};
  if (remaining() < n) {
    fail(RejectCode::truncated, std::string(what) + ": " + std::to_string(n) + " bytes declared, " +
                                    std::to_string(remaining()) + " left");
    return {};
  }
  auto s = in_.subspan(pos_, n);
  pos_ += n;
  return s;
}

std::string Reader::str(std::size_t max, const char* what) {
  const auto n = num<std::uint32_t>(what);
  if (error_) return {};
  if (n > max) {
    fail(RejectCode::too_large, std::string(what) + ": " + std::to_string(n) + " bytes; limit " + std::to_string(max));
    return {};
  }
  const auto b = bytes(n, what);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::uint32_t Reader::count(std::size_t max, std::size_t min_bytes, const char* what) {
  const auto n = num<std::uint32_t>(what);
  if (error_) return 0;
  if (n > max) {
    fail(RejectCode::too_large, std::string(what) + ": " + std::to_string(n) + " entries; limit " + std::to_string(max));
    return 0;
  }
  if (static_cast<std::uint64_t>(n) * min_bytes > remaining()) {
    fail(RejectCode::truncated, std::string(what) + ": " + std::to_string(n) + " entries cannot fit in " +
                                    std::to_string(remaining()) + " bytes");
    return 0;
  }
  return n;
}

Json Reader::json(std::size_t max_bytes, const char* what) {
  const std::string text = str(max_bytes, what);
  if (error_) return {};
  auto j = parse_json(text, limits_.max_json_depth, what);
  if (!j) {
    fail(j.error().code, j.error().reason);
    return {};
  }
  return std::move(j).value();
}

void Reader::ends_early(const char* what) {
  if (!error_) fail(RejectCode::truncated, std::string(what) + ": ends early");
}

void Reader::end(const char* what) {
  if (!error_ && remaining() != 0)
    fail(RejectCode::malformed, std::string(what) + ": " + std::to_string(remaining()) + " trailing bytes");
}

Result<Json> parse_json(std::string_view text, std::size_t max_depth, const char* what) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return reject(RejectCode::too_large, std::string(what) + ": JSON nested deeper than " + std::to_string(max_depth));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return reject(RejectCode::malformed, std::string(what) + ": not valid JSON");
  return j;
}

}  // namespace detail

namespace {

template <std::size_t I = 0> Body make_body(std::size_t index) {
  if constexpr (I < std::variant_size_v<Body>) {
    if (index == I) return Body(std::in_place_index<I>);
    return make_body<I + 1>(index);
  } else {
    return Body{};
  }
}

template <class T> void store(std::byte* p, T v) { std::memcpy(p, &v, sizeof v); }
template <class T> T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint64_t header_checksum(std::span<const std::byte> frame) {
  return xxh64(frame.subspan(header_prefix_bytes), xxh64(frame.first(24)));
}

// Which payload frame counts a type allows.
bool payload_allowed(MessageType t, std::uint32_t n, const Limits& l) {
  switch (t) {
    case MessageType::item_data: return n <= l.max_inline_chunks;
    case MessageType::item_chunk: return n == 1;
    default: return n == 0;
  }
}

template <class B>
std::shared_ptr<std::vector<std::byte>> make_header_frame(std::uint64_t seq, MessageType type, const B& body,
                                                          std::uint32_t payload_frames, bool& overflow) {
  detail::Encoder w;
  w.out.resize(header_prefix_bytes);
  // One field list serves both directions, so it takes the body mutably;
  // the encoder only reads it.
  fields(w, const_cast<B&>(body));
  overflow = w.overflow || w.out.size() - header_prefix_bytes > 0xFFFFFFFFu;
  std::byte* p = w.out.data();
  store(p + 0, wire_magic);
  store(p + 4, wire_version);
  store(p + 6, static_cast<std::uint8_t>(type));
  store(p + 7, std::uint8_t{0});
  store(p + 8, seq);
  store(p + 16, static_cast<std::uint32_t>(w.out.size() - header_prefix_bytes));
  store(p + 20, payload_frames);
  store(p + 24, header_checksum(w.out));
  return std::make_shared<std::vector<std::byte>>(std::move(w.out));
}

}  // namespace

namespace detail {

std::shared_ptr<std::vector<std::byte>> header_frame(std::uint64_t seq, const Body& body, std::uint32_t payload_frames,
                                                     bool& overflow) {
  return std::visit([&](const auto& b) { return make_header_frame(seq, type_of(body), b, payload_frames, overflow); }, body);
}
std::shared_ptr<std::vector<std::byte>> header_frame(std::uint64_t seq, const ItemData& body,
                                                     std::uint32_t payload_frames, bool& overflow) {
  return make_header_frame(seq, MessageType::item_data, body, payload_frames, overflow);
}

std::optional<Rejected> validate_descriptor(const ItemData& d, const Limits& l) {
  const auto bad = [](RejectCode c, std::string why) { return std::optional<Rejected>(reject(c, "item_data: " + why)); };
  if (d.meta.key.size() > l.max_key_bytes) return bad(RejectCode::too_large, "key of " + std::to_string(d.meta.key.size()) + " bytes");
  if (d.meta.bbox && d.meta.core && d.meta.bbox->ndim != d.meta.core->ndim)
    return bad(RejectCode::malformed, "bbox has " + std::to_string(d.meta.bbox->ndim) + " dimensions, core " +
                                          std::to_string(d.meta.core->ndim));
  if (d.payload_bytes > l.max_item_bytes)
    return bad(RejectCode::too_large, std::to_string(d.payload_bytes) + " payload bytes; limit " + std::to_string(l.max_item_bytes));
  if (d.chunk_bytes == 0 || d.chunk_bytes > l.max_chunk_bytes)
    return bad(RejectCode::too_large, "chunk size " + std::to_string(d.chunk_bytes) + "; must be 1.." + std::to_string(l.max_chunk_bytes));
  const std::uint64_t chunks = d.payload_bytes == 0 ? 0 : (d.payload_bytes - 1) / d.chunk_bytes + 1;
  if (chunks > l.max_chunks)
    return bad(RejectCode::too_large, std::to_string(chunks) + " chunks; limit " + std::to_string(l.max_chunks));
  if (chunks != d.chunk_count)
    return bad(RejectCode::malformed, std::to_string(d.chunk_count) + " chunks declared; " + std::to_string(d.payload_bytes) +
                                          " bytes in chunks of " + std::to_string(d.chunk_bytes) + " make " + std::to_string(chunks));
  if (d.inline_hashes.size() > d.chunk_count)
    return bad(RejectCode::malformed, std::to_string(d.inline_hashes.size()) + " inline chunks of " + std::to_string(d.chunk_count));

  const ValueLayout& v = d.layout;
  switch (v.kind) {
    case ValueKind::none:
      if (d.payload_bytes != 0) return bad(RejectCode::size_mismatch, "an empty value with " + std::to_string(d.payload_bytes) + " payload bytes");
      break;
    case ValueKind::array: {
      if (static_cast<int>(v.dtype) >= dtype_count) return bad(RejectCode::unknown_type, "dtype " + std::to_string(static_cast<int>(v.dtype)));
      if (v.shape.size() > static_cast<std::size_t>(max_ndim)) return bad(RejectCode::malformed, std::to_string(v.shape.size()) + " dimensions");
      if (v.null_array) {
        if (!v.shape.empty() || d.payload_bytes != 0) return bad(RejectCode::size_mismatch, "a null array with a shape or payload");
        break;
      }
      std::uint64_t bytes = size_of(v.dtype);
      for (const auto e : v.shape) {
        if (e < 0) return bad(RejectCode::malformed, "negative extent " + std::to_string(e));
        if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(e), &bytes))
          return bad(RejectCode::too_large, "shape overflows 64 bits");
      }
      // numel fits std::int64_t as Array computes it: bytes >= numel.
      if (bytes > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return bad(RejectCode::too_large, "shape overflows 63 bits");
      if (bytes != d.payload_bytes)
        return bad(RejectCode::size_mismatch, "shape × dtype is " + std::to_string(bytes) + " bytes; payload " + std::to_string(d.payload_bytes));
      break;
    }
    case ValueKind::table: {
      if (v.columns.size() > l.max_table_columns) return bad(RejectCode::too_large, std::to_string(v.columns.size()) + " columns");
      if (v.columns.empty() && v.rows != 0) return bad(RejectCode::malformed, std::to_string(v.rows) + " rows and no columns");
      std::unordered_set<std::string_view> names;
      std::uint64_t need = 0;
      bool strings = false;
      for (const auto& c : v.columns) {
        if (static_cast<int>(c.type) > static_cast<int>(ColumnType::string)) return bad(RejectCode::unknown_type, "column type");
        if (!names.insert(c.name).second) return bad(RejectCode::malformed, "duplicate column '" + c.name + "'");
        static constexpr std::uint64_t width[] = {1, 4, 8, 4, 8, 4};  // string: a u32 length per row
        strings = strings || c.type == ColumnType::string;
        std::uint64_t col;
        if (__builtin_mul_overflow(v.rows, width[static_cast<int>(c.type)], &col) || __builtin_add_overflow(need, col, &need))
          return bad(RejectCode::too_large, "table size overflows 64 bits");
      }
      if (strings ? need > d.payload_bytes : need != d.payload_bytes)
        return bad(RejectCode::size_mismatch, "schema needs " + std::string(strings ? "at least " : "") + std::to_string(need) +
                                                  " bytes; payload " + std::to_string(d.payload_bytes));
      // The payload and the columns decoded from it coexist in finish().
      std::uint64_t in_memory = 0, strings_bytes = 0;
      bool overflow = __builtin_mul_overflow(d.payload_bytes, std::uint64_t{2}, &in_memory);
      for (const auto& c : v.columns)
        if (c.type == ColumnType::string)
          overflow = overflow || __builtin_mul_overflow(v.rows, std::uint64_t{sizeof(std::string)}, &strings_bytes) ||
                     __builtin_add_overflow(in_memory, strings_bytes, &in_memory);
      if (overflow || in_memory > l.max_parsed_bytes)
        return bad(RejectCode::too_large, "table needs " + (overflow ? std::string("> 2^64") : std::to_string(in_memory)) +
                                              " bytes to decode; limit " +
                                              std::to_string(l.max_parsed_bytes));
      break;
    }
    case ValueKind::json:
      if (d.payload_bytes > l.max_json_value_bytes)
        return bad(RejectCode::too_large, "JSON value of " + std::to_string(d.payload_bytes) + " bytes; limit " +
                                              std::to_string(l.max_json_value_bytes));
      break;
    default:
      return bad(RejectCode::unknown_type, "value kind " + std::to_string(static_cast<int>(v.kind)));
  }
  return std::nullopt;
}

}  // namespace detail

Result<Message> decode(std::span<const FrameView> frames, const Limits& limits) {
  try {
    if (frames.empty()) return reject(RejectCode::truncated, "no frames");
    const FrameView f = frames[0];
    if (f.size() >= 4 && load<std::uint32_t>(f.data()) != wire_magic) return reject(RejectCode::bad_magic, "not a flowd frame");
    if (f.size() < header_prefix_bytes)
      return reject(RejectCode::truncated, "header frame of " + std::to_string(f.size()) + " bytes; the prefix alone is " +
                                               std::to_string(header_prefix_bytes));
    Message m;
    Header& h = m.header;
    h.version = load<std::uint16_t>(f.data() + 4);
    if (h.version != wire_version)
      return reject(RejectCode::version_mismatch, "peer speaks wire version " + std::to_string(h.version) + "; this node " +
                                                      std::to_string(wire_version));
    if (f.size() > limits.max_header_bytes)
      return reject(RejectCode::too_large, "header frame of " + std::to_string(f.size()) + " bytes; limit " +
                                               std::to_string(limits.max_header_bytes));
    const auto type = load<std::uint8_t>(f.data() + 6);
    h.flags = load<std::uint8_t>(f.data() + 7);
    h.seq = load<std::uint64_t>(f.data() + 8);
    h.body_bytes = load<std::uint32_t>(f.data() + 16);
    h.payload_frames = load<std::uint32_t>(f.data() + 20);
    h.checksum = load<std::uint64_t>(f.data() + 24);
    const std::size_t body = f.size() - header_prefix_bytes;
    if (h.body_bytes > body)
      return reject(RejectCode::truncated, "body of " + std::to_string(h.body_bytes) + " bytes declared, " + std::to_string(body) + " present");
    if (h.body_bytes < body)
      return reject(RejectCode::malformed, std::to_string(body - h.body_bytes) + " bytes after the declared body");
    if (const auto sum = header_checksum(f); sum != h.checksum)
      return reject(RejectCode::bad_checksum, "header checksum " + detail::hex(sum) + ", declared " + detail::hex(h.checksum));
    if (h.flags != 0) return reject(RejectCode::malformed, "reserved flags " + std::to_string(h.flags));
    if (type < 1 || type > message_type_count) return reject(RejectCode::unknown_type, "message type " + std::to_string(type));
    h.type = static_cast<MessageType>(type);
    const std::string name(to_string(h.type));
    if (h.payload_frames > frames.size() - 1)
      return reject(RejectCode::truncated, name + ": " + std::to_string(h.payload_frames) + " payload frames declared, " +
                                               std::to_string(frames.size() - 1) + " received");
    if (h.payload_frames < frames.size() - 1)
      return reject(RejectCode::frame_count, name + ": " + std::to_string(frames.size() - 1 - h.payload_frames) + " extra frames");
    if (!payload_allowed(h.type, h.payload_frames, limits))
      return reject(RejectCode::frame_count, name + " with " + std::to_string(h.payload_frames) + " payload frames");

    detail::Decoder in(f.subspan(header_prefix_bytes), limits);
    m.body = make_body(type - 1u);
    std::visit([&](auto& b) { fields(in, b); }, m.body);
    detail::Reader& r = in.reader();
    r.end(name.c_str());
    if (!r.ok()) return reject(r.error()->code, name + ": " + r.error()->reason);
    if (auto* d = std::get_if<ItemData>(&m.body)) {
      if (auto bad = detail::validate_descriptor(*d, limits)) return *bad;
      if (d->inline_hashes.size() != h.payload_frames)
        return reject(RejectCode::frame_count, "item_data: " + std::to_string(d->inline_hashes.size()) + " inline chunk hashes, " +
                                                   std::to_string(h.payload_frames) + " payload frames");
    }
    m.payload.assign(frames.begin() + 1, frames.end());
    return m;
  } catch (...) {
    return detail::from_exception();
  }
}

std::optional<Header> peek_header(FrameView f) noexcept {
  if (f.size() < header_prefix_bytes || load<std::uint32_t>(f.data()) != wire_magic) return std::nullopt;
  Header h;
  h.version = load<std::uint16_t>(f.data() + 4);
  h.type = static_cast<MessageType>(load<std::uint8_t>(f.data() + 6));  // maybe out of range: unverified
  h.flags = load<std::uint8_t>(f.data() + 7);
  h.seq = load<std::uint64_t>(f.data() + 8);
  h.body_bytes = load<std::uint32_t>(f.data() + 16);
  h.payload_frames = load<std::uint32_t>(f.data() + 20);
  h.checksum = load<std::uint64_t>(f.data() + 24);
  return h;
}

Result<OutMessage> encode(std::uint64_t seq, const Body& body, const Limits& limits) {
  try {
    if (std::holds_alternative<ItemData>(body) || std::holds_alternative<ItemChunk>(body))
      return reject(RejectCode::unexpected, std::string(to_string(type_of(body))) + " carries payload frames: use OutgoingItem");
    bool overflow = false;
    auto frame = detail::header_frame(seq, body, 0, overflow);
    if (overflow) return reject(RejectCode::too_large, std::string(to_string(type_of(body))) + ": a field exceeds 4 GiB");
    // The peer would run exactly this check; running it here turns a
    // remote rejection into a local error the caller can act on.
    const FrameView view(*frame);
    if (auto check = decode(std::span(&view, 1), limits); !check)
      return reject(check.error().code, "encode: " + check.error().reason);
    OutMessage out;
    out.push_back(OutFrame{std::span<const std::byte>(*frame), frame});
    return out;
  } catch (...) {
    return detail::from_exception();
  }
}

}  // namespace flowd::wire

// Items on the wire: one payload byte stream per item (array bytes in C
// order, serialised table columns, or JSON text), cut into fixed-size
// chunks. See docs/wire-format.md.
#include <algorithm>
#include <cstring>
#include <limits>

#include "wire/codec.hpp"

namespace flowd::wire {

using detail::from_exception;
using detail::hex;

namespace {

template <class F> decltype(auto) with_column_type(ColumnType t, F&& f) {
  switch (t) {
    case ColumnType::u8: return f(std::uint8_t{});
    case ColumnType::i32: return f(std::int32_t{});
    case ColumnType::i64: return f(std::int64_t{});
    case ColumnType::f32: return f(float{});
    case ColumnType::f64: return f(double{});
    case ColumnType::string: break;
  }
  return f(std::string{});
}

// Table payload: the columns in order; a numeric column is its values
// (rows × width, little-endian), a string column is rows u32 lengths then
// the bytes of all its strings.
Result<std::vector<std::byte>> serialise(const Table& t, ValueLayout& layout) {
  const std::size_t rows = t.rows();
  layout.rows = rows;
  std::vector<std::byte> out;
  for (const auto& c : t.columns()) {
    layout.columns.push_back(ColumnSpec{c.name, c.type()});
    if (const auto* s = std::get_if<std::vector<std::string>>(&c.data)) {
      for (const auto& e : *s) {
        if (e.size() > 0xFFFFFFFFu) return reject(RejectCode::too_large, "table column '" + c.name + "': a string over 4 GiB");
        const auto n = static_cast<std::uint32_t>(e.size());
        const auto* p = reinterpret_cast<const std::byte*>(&n);
        out.insert(out.end(), p, p + sizeof n);
      }
      for (const auto& e : *s) {
        const auto* p = reinterpret_cast<const std::byte*>(e.data());
        out.insert(out.end(), p, p + e.size());
      }
    } else {
      std::visit(
          [&](const auto& v) {
            if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, std::vector<std::string>>) {
              const auto bytes = std::as_bytes(std::span(v));
              out.insert(out.end(), bytes.begin(), bytes.end());
            }
          },
          c.data);
    }
  }
  return out;
}

Result<Table> parse_table(std::span<const std::byte> payload, const ValueLayout& layout, const Limits& limits) {
  detail::Reader r(payload, limits);
  Table t;
  const auto rows = static_cast<std::size_t>(layout.rows);  // bounded by payload size (validate_descriptor)
  for (const auto& spec : layout.columns) {
    with_column_type(spec.type, [&](auto tag) {
      using T = decltype(tag);
      auto& col = t.add_column<T>(spec.name);
      if constexpr (std::is_same_v<T, std::string>) {
        const auto lengths = r.bytes(rows * 4, "string column lengths");
        std::uint64_t total = 0;
        for (std::size_t i = 0; i < rows && r.ok(); ++i) {
          std::uint32_t n;
          std::memcpy(&n, lengths.data() + i * 4, 4);
          total += n;
        }
        if (!r.ok()) return;
        if (total > r.remaining()) {
          r.fail(RejectCode::size_mismatch, "column '" + spec.name + "': strings of " + std::to_string(total) +
                                                " bytes, " + std::to_string(r.remaining()) + " left");
          return;
        }
        col.reserve(rows);
        for (std::size_t i = 0; i < rows; ++i) {
          std::uint32_t n;
          std::memcpy(&n, lengths.data() + i * 4, 4);
          const auto b = r.bytes(n, "string");
          col.emplace_back(reinterpret_cast<const char*>(b.data()), b.size());
        }
      } else {
        const auto b = r.bytes(rows * sizeof(T), "numeric column");
        if (!r.ok()) return;
        col.resize(rows);
        if (rows != 0) std::memcpy(col.data(), b.data(), b.size());
      }
    });
    if (!r.ok()) break;
  }
  r.end("table payload");
  if (!r.ok()) return reject(r.error()->code, "table: " + r.error()->reason);
  return t;
}

}  // namespace

// ---- sending ---------------------------------------------------------------

OutgoingItem OutgoingItem::for_transfer(std::uint64_t transfer_id) const {
  OutgoingItem o = *this;
  auto d = std::make_shared<ItemData>(*data_);
  d->transfer_id = transfer_id;
  o.data_ = std::move(d);
  return o;
}

Result<OutgoingItem> OutgoingItem::make(const Item& item, std::uint64_t transfer_id, const EncodeOptions& options) {
  try {
    const Limits& l = options.limits;
    if (options.chunk_bytes == 0 || options.chunk_bytes > l.max_chunk_bytes)
      return reject(RejectCode::too_large, "chunk size " + std::to_string(options.chunk_bytes) + "; must be 1.." +
                                               std::to_string(l.max_chunk_bytes));
    OutgoingItem o;
    o.limits_ = l;
    auto d = std::make_shared<ItemData>();
    d->transfer_id = transfer_id;
    d->meta = item.meta;
    ValueLayout& v = d->layout;
    v.kind = kind_of(item.value);
    switch (v.kind) {
      case ValueKind::none: break;
      case ValueKind::array: {
        const Array& a = std::get<Array>(item.value);
        v.dtype = a.dtype();
        if (a.empty()) {
          v.null_array = true;
          break;
        }
        if (!a.placement().host_accessible())
          return reject(RejectCode::unexpected, "item '" + item.meta.key + "': array on device " +
                                                    std::to_string(a.placement().device) + "; stage it to host first");
        v.shape.assign(a.shape().begin(), a.shape().end());
        // The payload is C-order bytes; only a strided view needs a copy.
        auto keep = std::make_shared<const Array>(a.is_contiguous() ? a : a.clone());
        o.made_contiguous_ = !a.is_contiguous();
        o.payload_ = std::span(static_cast<const std::byte*>(keep->raw()), keep->nbytes());
        o.payload_owner_ = std::move(keep);
        break;
      }
      case ValueKind::table: {
        auto bytes = serialise(std::get<Table>(item.value), v);
        if (!bytes) return bytes.error();
        auto keep = std::make_shared<const std::vector<std::byte>>(std::move(bytes).value());
        o.payload_ = std::span(*keep);
        o.payload_owner_ = std::move(keep);
        break;
      }
      case ValueKind::json: {
        auto keep = std::make_shared<const std::string>(
            std::get<Json>(item.value).dump(-1, ' ', false, Json::error_handler_t::strict));
        o.payload_ = std::as_bytes(std::span(*keep));
        o.payload_owner_ = std::move(keep);
        break;
      }
    }
    d->payload_bytes = o.payload_.size();
    d->chunk_bytes = options.chunk_bytes;
    const std::uint64_t chunks = d->payload_bytes == 0 ? 0 : (d->payload_bytes - 1) / d->chunk_bytes + 1;
    if (chunks > l.max_chunks)
      return reject(RejectCode::too_large, "item '" + item.meta.key + "': " + std::to_string(d->payload_bytes) + " bytes make " +
                                               std::to_string(chunks) + " chunks of " + std::to_string(d->chunk_bytes) +
                                               "; limit " + std::to_string(l.max_chunks) + ": use larger chunks");
    d->chunk_count = static_cast<std::uint32_t>(chunks);
    o.data_ = d;
    o.hashes_.resize(chunks);
    for (std::uint32_t i = 0; i < chunks; ++i) o.hashes_[i] = xxh64(o.chunk_bytes(i), i);
    d->digest = xxh64(std::as_bytes(std::span(o.hashes_)), d->payload_bytes);
    const std::uint32_t inline_n = std::min({d->chunk_count, options.inline_chunks, l.max_inline_chunks});
    d->inline_hashes.assign(o.hashes_.begin(), o.hashes_.begin() + inline_n);

    auto msg = o.descriptor(0);
    if (!msg) return msg.error();
    std::vector<FrameView> views;
    for (const auto& f : *msg) views.push_back(f.bytes);
    if (auto check = decode(views, l); !check) return reject(check.error().code, "encode: " + check.error().reason);
    return o;
  } catch (...) {
    return from_exception();
  }
}

std::span<const std::byte> OutgoingItem::chunk_bytes(std::uint32_t index) const noexcept {
  const std::uint64_t begin = static_cast<std::uint64_t>(index) * data_->chunk_bytes;
  return payload_.subspan(begin, std::min<std::uint64_t>(data_->chunk_bytes, payload_.size() - begin));
}

Result<OutMessage> OutgoingItem::descriptor(std::uint64_t seq) const {
  try {
    bool overflow = false;
    const auto n = inline_chunks();
    auto frame = detail::header_frame(seq, *data_, n, overflow);
    if (overflow) return reject(RejectCode::too_large, "item_data: a field exceeds 4 GiB");
    OutMessage out;
    out.reserve(1 + n);
    out.push_back(OutFrame{std::span<const std::byte>(*frame), frame});
    for (std::uint32_t i = 0; i < n; ++i) out.push_back(OutFrame{chunk_bytes(i), payload_owner_});
    return out;
  } catch (...) {
    return from_exception();
  }
}

Result<OutMessage> OutgoingItem::chunk(std::uint32_t index, std::uint64_t seq) const {
  try {
    if (index >= data_->chunk_count)
      return reject(RejectCode::unexpected, "chunk " + std::to_string(index) + " of " + std::to_string(data_->chunk_count));
    bool overflow = false;
    auto frame = detail::header_frame(seq, Body(ItemChunk{data_->transfer_id, index, hashes_[index]}), 1, overflow);
    OutMessage out;
    out.push_back(OutFrame{std::span<const std::byte>(*frame), frame});
    out.push_back(OutFrame{chunk_bytes(index), payload_owner_});
    return out;
  } catch (...) {
    return from_exception();
  }
}

// ---- receiving -------------------------------------------------------------

Result<ItemAssembler> ItemAssembler::start(const ItemData& descriptor, std::span<const FrameView> inline_frames,
                                           const Limits& limits, const ArrayAllocator& allocate) {
  try {
    if (auto bad = detail::validate_descriptor(descriptor, limits)) return *bad;
    if (inline_frames.size() != descriptor.inline_hashes.size())
      return reject(RejectCode::frame_count, "item_data: " + std::to_string(inline_frames.size()) + " inline frames, " +
                                                 std::to_string(descriptor.inline_hashes.size()) + " declared");
    ItemAssembler a;
    a.data_ = descriptor;
    a.limits_ = limits;
    const ValueLayout& v = descriptor.layout;
    if (v.kind == ValueKind::array && !v.null_array) {
      if (allocate) {
        a.array_ = allocate(v.dtype, v.shape);
        const bool fits = !a.array_.empty() && a.array_.dtype() == v.dtype &&
                          std::ranges::equal(a.array_.shape(), v.shape) && a.array_.is_contiguous() &&
                          a.array_.placement().host_accessible();
        if (!fits)
          return reject(RejectCode::internal, "the array allocator returned " + a.array_.describe() +
                                                  " (contiguous host memory needed)");
      } else {
        a.array_ = Array::uninitialized(v.dtype, v.shape);
      }
      a.dest_ = static_cast<std::byte*>(a.array_.raw());
    } else if (descriptor.payload_bytes != 0) {
      a.buffer_ = std::make_unique_for_overwrite<std::byte[]>(descriptor.payload_bytes);
      a.dest_ = a.buffer_.get();
    }
    a.hashes_.assign(descriptor.chunk_count, 0);
    a.have_.assign(descriptor.chunk_count, false);
    for (std::uint32_t i = 0; i < inline_frames.size(); ++i)
      if (auto r = a.put(i, descriptor.inline_hashes[i], inline_frames[i]); !r) return r.error();
    return a;
  } catch (...) {
    return from_exception();
  }
}

Result<ChunkStatus> ItemAssembler::add(const ItemChunk& chunk, FrameView bytes) {
  if (chunk.transfer_id != data_.transfer_id)
    return reject(RejectCode::unexpected, "chunk of transfer " + std::to_string(chunk.transfer_id) + " given to transfer " +
                                              std::to_string(data_.transfer_id));
  return put(chunk.index, chunk.hash, bytes);
}

Result<ChunkStatus> ItemAssembler::put(std::uint32_t index, std::uint64_t hash, FrameView bytes) {
  try {
    const std::string where = "transfer " + std::to_string(data_.transfer_id) + " chunk " + std::to_string(index);
    if (finished_) return reject(RejectCode::unexpected, where + ": the item is already finished");
    if (index >= data_.chunk_count)
      return reject(RejectCode::unexpected, where + ": the item has " + std::to_string(data_.chunk_count) + " chunks");
    const std::uint64_t offset = static_cast<std::uint64_t>(index) * data_.chunk_bytes;
    const std::uint64_t expect = std::min(data_.chunk_bytes, data_.payload_bytes - offset);
    if (bytes.size() != expect)
      return reject(RejectCode::size_mismatch, where + ": " + std::to_string(bytes.size()) + " bytes; expected " + std::to_string(expect));
    if (const auto h = xxh64(bytes, index); h != hash)
      return reject(RejectCode::bad_checksum, where + ": bytes hash to " + hex(h) + ", declared " + hex(hash));
    if (have_[index]) {
      if (hashes_[index] != hash) return reject(RejectCode::unexpected, where + ": resent with different contents");
      return ChunkStatus::duplicate;
    }
    std::memcpy(dest_ + offset, bytes.data(), bytes.size());
    have_[index] = true;
    hashes_[index] = hash;
    ++received_;
    return ChunkStatus::accepted;
  } catch (...) {
    return from_exception();
  }
}

std::vector<std::uint32_t> ItemAssembler::missing(std::size_t max) const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < have_.size() && out.size() < max; ++i)
    if (!have_[i]) out.push_back(i);
  return out;
}

Result<Item> ItemAssembler::finish() {
  try {
    const std::string where = "transfer " + std::to_string(data_.transfer_id);
    if (finished_) return reject(RejectCode::unexpected, where + ": already finished");
    if (!complete())
      return reject(RejectCode::truncated, where + ": " + std::to_string(received_) + " of " +
                                               std::to_string(data_.chunk_count) + " chunks received");
    if (const auto d = xxh64(std::as_bytes(std::span(hashes_)), data_.payload_bytes); d != data_.digest)
      return reject(RejectCode::bad_checksum, where + ": item digest " + hex(d) + ", declared " + hex(data_.digest));
    finished_ = true;
    Item item;
    item.meta = std::move(data_.meta);
    const std::span<const std::byte> payload(dest_, dest_ ? data_.payload_bytes : 0);
    switch (data_.layout.kind) {
      case ValueKind::none: break;
      case ValueKind::array: item.value = data_.layout.null_array ? Array{} : std::move(array_); break;
      case ValueKind::table: {
        auto t = parse_table(payload, data_.layout, limits_);
        if (!t) return reject(t.error().code, where + ": " + t.error().reason);
        item.value = std::move(t).value();
        break;
      }
      case ValueKind::json: {
        auto j = detail::parse_json(std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()),
                                    limits_.max_json_depth, "JSON value");
        if (!j) return reject(j.error().code, where + ": " + j.error().reason);
        item.value = std::move(j).value();
        break;
      }
    }
    buffer_.reset();
    dest_ = nullptr;
    return item;
  } catch (...) {
    return from_exception();
  }
}

Result<Item> decode_item(std::span<const FrameView> frames, const Limits& limits) {
  try {
    auto m = decode(frames, limits);
    if (!m) return m.error();
    const auto* d = std::get_if<ItemData>(&m->body);
    if (!d) return reject(RejectCode::unexpected, std::string(to_string(m->header.type)) + " where item_data was expected");
    auto a = ItemAssembler::start(*d, m->payload, limits);
    if (!a) return a.error();
    return a->finish();
  } catch (...) {
    return from_exception();
  }
}

}  // namespace flowd::wire

#pragma once
// Internals shared by codec.cpp and item.cpp; not part of the API.
#include <bit>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "wire/wire.hpp"

namespace flowd::wire::detail {

static_assert(std::endian::native == std::endian::little,
              "the wire is little-endian and array payloads are sent as they lie in memory");

// The field lists of fields.hpp are written once, against an `Io` with
// these members (Encoder, Decoder and MinBytes below):
//   num(v, what)                       an integer, a bool (u8 0/1) or an f64
//   enumeration(e, first, last, what)  a u8 enum value in [first, last]
//   flags(v, defined, what)            a u8 of flag bits; returns the bits
//   present(opt)                       the optional a set flag announces
//   str / json(v, &Limits::max, what)  u32 length + bytes (JSON as text)
//   list(v, &Limits::max, what[, each])  u32 count + the elements
//   ok(), decoding                     for checks only a decoder makes
// `what` names the field in rejection reasons. The encoder ignores limits
// and names: encode() runs the decoder over its output anyway.

// A list element: a number (named `what`), or a field group of fields.hpp,
// found by argument-dependent lookup when the list is instantiated.
template <class Io, class T>
void element(Io& io, T& e, const char* what) {
  if constexpr (std::is_arithmetic_v<T>) {
    io.num(e, what);
  } else {
    fields(io, e);
  }
}

// Appends little-endian fields. A length that does not fit its u32 prefix
// sets `overflow` instead of writing a stream that would mis-parse.
class Encoder {
public:
  static constexpr bool decoding = false;
  std::vector<std::byte> out;
  bool overflow = false;

  bool ok() const noexcept { return true; }
  template <class T>
  void num(T v, const char*) {
    static_assert(std::is_arithmetic_v<T>);
    if constexpr (std::is_same_v<T, bool>) {
      raw<std::uint8_t>(v ? 1 : 0);
    } else {
      raw(v);
    }
  }
  template <class E, class... Label>
  void enumeration(E e, E, E, const char*, Label&&...) {
    raw(static_cast<std::uint8_t>(e));
  }
  std::uint8_t flags(std::uint8_t v, std::uint8_t, const char*) {
    raw(v);
    return v;
  }
  template <class T>
  T& present(std::optional<T>& o) {
    return *o;
  }
  template <class L>
  void str(const std::string& s, L Limits::*, const char*) {
    text(s);
  }
  template <class L>
  void json(const Json& j, L Limits::*, const char*) {
    json_text(j);
  }
  template <class T, class L>
  void list(std::vector<T>& v, L Limits::*, const char*, const char* each = nullptr) {
    length(v.size());
    for (auto& e : v)
      element(*this, e, each);
  }

private:
  template <class T>
  void raw(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* b = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), b, b + sizeof v);
  }
  void length(std::size_t n) {
    if (n > 0xFFFFFFFFu) overflow = true;
    raw(static_cast<std::uint32_t>(n));
  }
  void text(std::string_view s) {
    length(s.size());
    const auto* b = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), b, b + s.size());
  }
  void json_text(const Json& j);  // strict UTF-8 (throws nlohmann's type_error otherwise)
};

// Bounds-checked reads with a sticky error: after the first failure every
// read returns zero/empty and the position jumps to the end, so body parsers
// read straight through and check once. Nothing is allocated from a length
// before that length is checked against the limit and the bytes left.
class Reader {
public:
  Reader(std::span<const std::byte> in, const Limits& limits) : in_(in), limits_(limits) {}

  bool ok() const noexcept { return !error_; }
  const std::optional<Rejected>& error() const noexcept { return error_; }
  const Limits& limits() const noexcept { return limits_; }
  std::size_t remaining() const noexcept { return in_.size() - pos_; }

  void fail(RejectCode code, std::string reason) {
    if (!error_) error_ = Rejected{code, std::move(reason)};
    pos_ = in_.size();
  }
  template <class T>
  T num(const char* what) {
    static_assert(std::is_integral_v<T>);
    if (error_ || remaining() < sizeof(T)) {
      ends_early(what);
      return T{};
    }
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  bool boolean(const char* what);
  double f64(const char* what);
  std::span<const std::byte> bytes(std::size_t n, const char* what);
  std::string str(std::size_t max, const char* what);
  // An element count, checked against `max` and against the bytes left
  // (each element takes at least `min_bytes`), so a lying count cannot make
  // a parser reserve memory.
  std::uint32_t count(std::size_t max, std::size_t min_bytes, const char* what);
  Json json(std::size_t max_bytes, const char* what);
  // All bytes consumed: trailing garbage is rejected, not ignored.
  void end(const char* what);

private:
  // Out of line, so that num() stays small enough to be inlined into every
  // field list that reads through it.
  void ends_early(const char* what);

  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
  const Limits& limits_;
  std::optional<Rejected> error_;
};

// The fewest bytes an element of a list can take (strings, lists and JSON
// empty, optional parts absent): a declared count is checked against the
// bytes left before anything is reserved for it.
class MinBytes {
public:
  static constexpr bool decoding = false;
  std::size_t bytes = 0;

  bool ok() const noexcept { return true; }
  template <class T>
  void num(T&, const char*) {
    bytes += sizeof(T);
  }
  template <class E, class... Label>
  void enumeration(E&, E, E, const char*, Label&&...) {
    bytes += 1;
  }
  std::uint8_t flags(std::uint8_t, std::uint8_t, const char*) {
    bytes += 1;
    return 0;
  }
  template <class T>
  T& present(std::optional<T>& o) {
    return o.emplace();
  }
  template <class L>
  void str(std::string&, L Limits::*, const char*) {
    bytes += 4;
  }
  template <class L>
  void json(Json&, L Limits::*, const char*) {
    bytes += 4;
  }
  template <class T, class L>
  void list(std::vector<T>&, L Limits::*, const char*, const char* = nullptr) {
    bytes += 4;
  }
};

// Measured once per element type from its field list, so the bound moves
// with the format.
template <class T>
std::size_t min_bytes() {
  if constexpr (std::is_arithmetic_v<T>) {
    return sizeof(T);
  } else {
    static const std::size_t n = [] {
      MinBytes m;
      T e{};
      element(m, e, nullptr);
      return m.bytes;
    }();
    return n;
  }
}

// Reads fields through a Reader: every length and count is checked against
// its limit and the bytes left before anything is allocated for it, enums
// against their range, flags against the bits defined.
class Decoder {
public:
  static constexpr bool decoding = true;
  Decoder(std::span<const std::byte> in, const Limits& limits) : r_(in, limits) {}

  Reader& reader() noexcept { return r_; }

  bool ok() const noexcept { return r_.ok(); }
  void fail(RejectCode code, std::string reason) { r_.fail(code, std::move(reason)); }
  template <class T>
  void num(T& v, const char* what) {
    if constexpr (std::is_same_v<T, bool>) {
      v = r_.boolean(what);
    } else if constexpr (std::is_same_v<T, double>) {
      v = r_.f64(what);
    } else {
      v = r_.num<T>(what);
    }
  }
  template <class E>
  void enumeration(E& e, E first, E last, const char* what) {
    enumeration(e, first, last, what, [what] { return std::string(what); });
  }
  // `label` names the field in the rejection when `what` is not enough
  // (a column type names its column); called only on that path.
  template <class E, class Label>
  void enumeration(E& e, E first, E last, const char* what, Label&& label) {
    const auto v = r_.num<std::uint8_t>(what);
    if (v < static_cast<std::uint8_t>(first) || v > static_cast<std::uint8_t>(last))
      r_.fail(RejectCode::unknown_type, label() + " " + std::to_string(v));
    e = static_cast<E>(v);
  }
  std::uint8_t flags(std::uint8_t, std::uint8_t defined, const char* what) {
    const auto v = r_.num<std::uint8_t>(what);
    if (v & ~defined) r_.fail(RejectCode::malformed, std::string(what) + ": unknown flags " + std::to_string(v));
    return v;
  }
  template <class T>
  T& present(std::optional<T>& o) {
    return o.emplace();
  }
  template <class L>
  void str(std::string& s, L Limits::*max, const char* what) {
    s = r_.str(r_.limits().*max, what);
  }
  template <class L>
  void json(Json& j, L Limits::*max, const char* what) {
    j = r_.json(r_.limits().*max, what);
  }
  template <class T, class L>
  void list(std::vector<T>& v, L Limits::*max, const char* what, const char* each = nullptr) {
    const auto n = r_.count(r_.limits().*max, min_bytes<T>(), what);
    v.clear();
    v.reserve(n);
    for (std::uint32_t i = 0; i < n && r_.ok(); ++i)
      element(*this, v.emplace_back(), each);
  }

private:
  Reader r_;
};

// Parses JSON text from a peer: nesting deeper than max_depth is refused
// before the parser runs (nlohmann parses iteratively, but dumping and
// destroying a value recurse, and downstream code walks it recursively).
Result<Json> parse_json(std::string_view text, std::size_t max_depth, const char* what);

// Everything about an item descriptor that does not need the payload.
std::optional<Rejected> validate_descriptor(const ItemData& d, const Limits& limits);

// The header frame for `body` announcing `payload_frames` payload frames.
std::shared_ptr<std::vector<std::byte>> header_frame(std::uint64_t seq, const Body& body, std::uint32_t payload_frames,
                                                     bool& overflow);
std::shared_ptr<std::vector<std::byte>> header_frame(std::uint64_t seq, const ItemData& body,
                                                     std::uint32_t payload_frames, bool& overflow);

Rejected from_exception();  // inside a catch block: the current exception as a rejection

std::string hex(std::uint64_t v);

}  // namespace flowd::wire::detail

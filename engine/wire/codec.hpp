#pragma once
// Internals shared by codec.cpp and item.cpp; not part of the API.
#include <bit>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "wire/wire.hpp"

namespace flowd::wire::detail {

static_assert(std::endian::native == std::endian::little,
              "the wire is little-endian and array payloads are sent as they lie in memory");

// Appends little-endian fields. A length that does not fit its u32 prefix
// sets `overflow` instead of writing a stream that would mis-parse.
class Writer {
public:
  std::vector<std::byte> out;
  bool overflow = false;

  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
  }
  template <class T> void num(T v) {
    static_assert(std::is_integral_v<T>);
    raw(&v, sizeof v);
  }
  void f64(double v) { num(std::bit_cast<std::uint64_t>(v)); }
  void boolean(bool v) { num<std::uint8_t>(v ? 1 : 0); }
  void length(std::size_t n) {
    if (n > 0xFFFFFFFFu) overflow = true;
    num(static_cast<std::uint32_t>(n));
  }
  void str(std::string_view s) {
    length(s.size());
    raw(s.data(), s.size());
  }
  void json(const Json& j);  // text, strict UTF-8 (throws nlohmann's type_error otherwise)
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
  template <class T> T num(const char* what) {
    static_assert(std::is_integral_v<T>);
    if (error_) return T{};
    if (remaining() < sizeof(T)) {
      fail(RejectCode::truncated, std::string(what) + ": ends early");
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
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
  const Limits& limits_;
  std::optional<Rejected> error_;
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

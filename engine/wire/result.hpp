#pragma once
// Results of the wire codec. Nothing that parses bytes from the network
// throws: a peer's bytes are untrusted input, and an exception escaping a
// socket loop would take the node down. Every failure is a Rejected value
// that the socket layer logs (describe()) and answers with a nack.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "flowd/error.hpp"

namespace flowd::wire {

// Stable numbers: a nack carries them to the peer.
enum class RejectCode : std::uint8_t {
  truncated = 1,         // fewer bytes or frames than the header declares
  bad_magic = 2,         // not a flowd frame at all
  version_mismatch = 3,  // a peer speaking another wire version
  unknown_type = 4,      // message type, value kind, dtype or column type out of range
  bad_checksum = 5,      // header checksum, chunk hash or item digest differs
  too_large = 6,         // a declared size exceeds a Limits field
  malformed = 7,         // inconsistent fields, trailing bytes, bad JSON, ...
  frame_count = 8,       // more or fewer payload frames than the message allows
  size_mismatch = 9,     // shape/schema and payload bytes disagree; chunk of the wrong size
  out_of_memory = 10,    // the destination could not be allocated
  unexpected = 11,       // well formed but not valid here (other transfer, chunk index out of range)
  internal = 12,         // a bug on this side, e.g. an allocator returning the wrong array
};

constexpr std::string_view to_string(RejectCode c) noexcept {
  switch (c) {
    case RejectCode::truncated: return "truncated";
    case RejectCode::bad_magic: return "bad_magic";
    case RejectCode::version_mismatch: return "version_mismatch";
    case RejectCode::unknown_type: return "unknown_type";
    case RejectCode::bad_checksum: return "bad_checksum";
    case RejectCode::too_large: return "too_large";
    case RejectCode::malformed: return "malformed";
    case RejectCode::frame_count: return "frame_count";
    case RejectCode::size_mismatch: return "size_mismatch";
    case RejectCode::out_of_memory: return "out_of_memory";
    case RejectCode::unexpected: return "unexpected";
    case RejectCode::internal: return "internal";
  }
  return "unknown";
}

struct Rejected {
  RejectCode code = RejectCode::malformed;
  std::string reason{};

  // The log line: "wire: rejected (bad_checksum): chunk 3 hash ..."
  std::string describe() const { return "wire: rejected (" + std::string(to_string(code)) + "): " + reason; }
};

// std::expected is C++23; this is the subset the codec needs.
template <class T> class [[nodiscard]] Result {
public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Rejected r) : v_(std::in_place_index<1>, std::move(r)) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // Checked: reading the value of a rejection is a caller bug, reported as
  // flowd::Error (never reached inside the codec).
  T& value() & { check(); return std::get<0>(v_); }
  const T& value() const& { check(); return std::get<0>(v_); }
  T&& value() && { check(); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Rejected& error() const {
    if (ok()) throw Error("wire::Result::error() on a success");
    return std::get<1>(v_);
  }

private:
  void check() const {
    if (!ok()) throw Error("wire::Result::value() on a rejection: " + std::get<1>(v_).describe());
  }
  std::variant<T, Rejected> v_;
};

inline Rejected reject(RejectCode code, std::string reason) { return Rejected{code, std::move(reason)}; }

}  // namespace flowd::wire

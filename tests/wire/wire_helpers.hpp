#pragma once
// Helpers shared by the wire tests and the seed generator: owned copies of
// encoded messages, and re-sealing a tampered header frame so a test can
// reach the check behind the checksum.
#include <algorithm>
#include <cstring>
#include <vector>

#include "wire/wire.hpp"

namespace flowd::wire::testing {

// A received multipart message: owned frames, as a socket would hand them.
struct Frames {
  std::vector<std::vector<std::byte>> owned;
  std::vector<FrameView> views() const {
    std::vector<FrameView> v;
    for (const auto& f : owned) v.emplace_back(f);
    return v;
  }
};

inline Frames copy(const OutMessage& m) {
  Frames f;
  for (const auto& o : m) f.owned.emplace_back(o.bytes.begin(), o.bytes.end());
  return f;
}

// Recomputes the header checksum after a test has edited the frame.
inline void reseal(std::vector<std::byte>& frame) {
  if (frame.size() < header_prefix_bytes) return;
  const std::span<const std::byte> all(frame);
  const std::uint64_t sum = xxh64(all.subspan(header_prefix_bytes), xxh64(all.first(24)));
  std::memcpy(frame.data() + 24, &sum, 8);
}

}  // namespace flowd::wire::testing

namespace flowd::wire::testing {

// The fuzz target's input format, shared with the seed generator:
//   u8 mode (bit 0: reseal each header checksum, so mutations reach the
//   body parsers), then messages until the data ends, each
//   u8 frame count (taken mod 8, plus 1), then per frame u32 length
//   (clamped to what is left) and the bytes.
inline std::vector<std::byte> fuzz_input(const std::vector<OutMessage>& messages, bool reseal_headers) {
  std::vector<std::byte> out{std::byte{static_cast<unsigned char>(reseal_headers ? 1 : 0)}};
  for (const auto& m : messages) {
    out.push_back(static_cast<std::byte>(m.size() - 1));
    for (const auto& f : m) {
      const auto n = static_cast<std::uint32_t>(f.bytes.size());
      const auto* p = reinterpret_cast<const std::byte*>(&n);
      out.insert(out.end(), p, p + 4);
      out.insert(out.end(), f.bytes.begin(), f.bytes.end());
    }
  }
  return out;
}

inline std::vector<Frames> parse_fuzz_input(std::span<const std::byte> data, bool& reseal_headers) {
  std::vector<Frames> messages;
  reseal_headers = false;
  if (data.empty()) return messages;
  reseal_headers = (std::to_integer<unsigned>(data[0]) & 1) != 0;
  std::size_t pos = 1;
  while (pos < data.size()) {
    const unsigned frames = std::to_integer<unsigned>(data[pos++]) % 8 + 1;
    Frames m;
    for (unsigned i = 0; i < frames && pos < data.size(); ++i) {
      std::uint32_t n = 0;
      const std::size_t take = std::min<std::size_t>(4, data.size() - pos);
      std::memcpy(&n, data.data() + pos, take);
      pos += take;
      const std::size_t len = std::min<std::size_t>(n, data.size() - pos);
      m.owned.emplace_back(data.begin() + static_cast<std::ptrdiff_t>(pos),
                           data.begin() + static_cast<std::ptrdiff_t>(pos + len));
      pos += len;
    }
    if (reseal_headers && !m.owned.empty()) reseal(m.owned[0]);
    messages.push_back(std::move(m));
  }
  return messages;
}

// Small limits for fuzzing: the same checks, without letting an input ask
// for gigabytes the fuzzer's RSS limit would count as a failure.
inline Limits fuzz_limits() {
  Limits l;
  l.max_header_bytes = 64u << 10;
  l.max_item_bytes = 1u << 20;
  l.max_parsed_bytes = 1u << 20;
  l.max_json_value_bytes = 256u << 10;
  l.max_chunks = 4096;
  return l;
}

}  // namespace flowd::wire::testing

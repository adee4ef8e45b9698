#pragma once
// The bytes of one composition vector (vector.hpp) as flowd items carry it
// (ops/vectors.hpp), on the host and, unchanged, in GPU memory: a header,
// then the vector's arrays one after the other, each starting on 8 bytes.
//
//   Header                      32 bytes
//   middles    u64 × middles
//   masks      u64 × middles
//   starts     u32 × (middles + 1)
//   ends       u16 × seen
//   values     f64 × seen
#include <cstddef>
#include <cstdint>

namespace flowd::cvtree::layout {

struct Header {
  std::uint64_t k;
  std::uint64_t middles;
  std::uint64_t seen;
  double unseen;
};
static_assert(sizeof(Header) == 32, "the header is four 8-byte words");

// Byte offsets from the start of a vector's bytes.
struct Offsets {
  std::size_t middles, masks, starts, ends, values, end;
};

constexpr std::size_t align8(std::size_t n) { return (n + 7) / 8 * 8; }

constexpr Offsets offsets(std::size_t middles, std::size_t seen) {
  Offsets o{};
  o.middles = sizeof(Header);
  o.masks = o.middles + middles * sizeof(std::uint64_t);
  o.starts = o.masks + middles * sizeof(std::uint64_t);
  o.ends = o.starts + align8((middles + 1) * sizeof(std::uint32_t));
  o.values = o.ends + align8(seen * sizeof(std::uint16_t));
  o.end = o.values + seen * sizeof(double);
  return o;
}

}  // namespace flowd::cvtree::layout

#include "wire/xxhash64.hpp"

#include <bit>
#include <cstring>

namespace flowd::wire {
namespace {

constexpr std::uint64_t P1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t P2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t P3 = 0x165667B19E3779F9ULL;
constexpr std::uint64_t P4 = 0x85EBCA77C2B2AE63ULL;
constexpr std::uint64_t P5 = 0x27D4EB2F165667C5ULL;

// The specification reads little-endian words; memcpy keeps unaligned
// reads defined (payload frames start anywhere).
static_assert(std::endian::native == std::endian::little, "xxh64: big-endian hosts need byte swaps here");
inline std::uint64_t read64(const std::byte* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint32_t read32(const std::byte* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline std::uint64_t round(std::uint64_t acc, std::uint64_t input) noexcept {
  acc += input * P2;
  acc = std::rotl(acc, 31);
  return acc * P1;
}
inline std::uint64_t merge(std::uint64_t h, std::uint64_t v) noexcept {
  h ^= round(0, v);
  return h * P1 + P4;
}

}  // namespace

std::uint64_t xxh64(std::span<const std::byte> data, std::uint64_t seed) noexcept {
  const std::byte* p = data.data();
  std::size_t left = data.size();
  std::uint64_t h;
  if (left >= 32) {
    std::uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
    do {
      v1 = round(v1, read64(p));
      v2 = round(v2, read64(p + 8));
      v3 = round(v3, read64(p + 16));
      v4 = round(v4, read64(p + 24));
      p += 32;
      left -= 32;
    } while (left >= 32);
    h = std::rotl(v1, 1) + std::rotl(v2, 7) + std::rotl(v3, 12) + std::rotl(v4, 18);
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = seed + P5;
  }
  h += static_cast<std::uint64_t>(data.size());
  while (left >= 8) {
    h ^= round(0, read64(p));
    h = std::rotl(h, 27) * P1 + P4;
    p += 8;
    left -= 8;
  }
  if (left >= 4) {
    h ^= static_cast<std::uint64_t>(read32(p)) * P1;
    h = std::rotl(h, 23) * P2 + P3;
    p += 4;
    left -= 4;
  }
  while (left > 0) {
    h ^= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(*p)) * P5;
    h = std::rotl(h, 11) * P1;
    ++p;
    --left;
  }
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

}  // namespace flowd::wire

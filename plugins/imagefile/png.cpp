#include "png.hpp"

#include <cstring>
#include <string>

#include "decode.hpp"

namespace flowd::imagefile {

namespace {

constexpr std::uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

std::uint32_t be32(const std::uint8_t* p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

bool is_png(std::span<const std::uint8_t> b) noexcept {
  return b.size() >= sizeof signature && std::memcmp(b.data(), signature, sizeof signature) == 0;
}

void check_png(std::span<const std::uint8_t> b) {
  std::size_t at = sizeof signature;
  std::size_t chunks = 0;
  while (at + 8 <= b.size()) {
    const std::uint64_t length = be32(b.data() + at);
    const bool iend = std::memcmp(b.data() + at + 4, "IEND", 4) == 0;
    if (at + 12 + length > b.size())
      throw DecodeError("truncated PNG (chunk " + std::to_string(chunks + 1) + " runs past the end of the file, at byte " +
                        std::to_string(b.size()) + ")");
    if (iend) return;
    at += 12 + length;
    ++chunks;
  }
  throw DecodeError("truncated PNG (the file ends after " + std::to_string(chunks) + " chunks, before IEND)");
}

}  // namespace flowd::imagefile

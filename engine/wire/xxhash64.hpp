#pragma once
// XXH64 (Yann Collet's xxHash, 64-bit variant), written from the public
// specification. Chosen over CRC32C because it runs at memory bandwidth in
// portable C++ (no SSE4.2/ARMv8 CRC intrinsics to select at run time), and
// 64 bits make an undetected corruption of a 16 MiB chunk ~2^-64 rather
// than ~2^-32. It is a checksum against corruption, not a MAC: integrity
// against an attacker is CURVE's job (docs/security.md).
#include <cstddef>
#include <cstdint>
#include <span>

namespace flowd::wire {

std::uint64_t xxh64(std::span<const std::byte> data, std::uint64_t seed = 0) noexcept;

}  // namespace flowd::wire

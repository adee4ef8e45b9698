#pragma once
// The integrity check of a TIFF's first page before OpenCV decodes it
// (decode.hpp says why).
#include <cstdint>
#include <span>

namespace flowd::imagefile {

bool is_tiff(std::span<const std::uint8_t> bytes) noexcept;

// Throws DecodeError when a strip or tile of the first page lies beyond the
// end of the file, or (compressed) does not decompress cleanly.
void check_tiff(std::span<const std::uint8_t> bytes);

}  // namespace flowd::imagefile

#pragma once
// The chunk structure of a PNG, walked before OpenCV decodes it: a file cut
// short is named as such, without libpng's own lines on stderr.
#include <cstdint>
#include <span>

namespace flowd::imagefile {

bool is_png(std::span<const std::uint8_t> bytes) noexcept;

// Throws DecodeError when a chunk runs past the end of the file or the file
// ends before its IEND chunk. CRCs and pixel data are libpng's to check.
void check_png(std::span<const std::uint8_t> bytes);

}  // namespace flowd::imagefile

#pragma once
// JPEG with libjpeg directly (decode.hpp says why).
#include <cstdint>
#include <span>

#include "decode.hpp"

namespace flowd::imagefile {

bool is_jpeg(std::span<const std::uint8_t> bytes) noexcept;

// The pixels as OpenCV's decoder gives them (ISLOW DCT, fancy upsampling,
// BGR or grey). A 4-component (CMYK, YCCK) file is only checked here, its
// pixels left empty: OpenCV converts those itself, as before.
Decoded decode_jpeg(std::span<const std::uint8_t> bytes, Channels channels);

}  // namespace flowd::imagefile

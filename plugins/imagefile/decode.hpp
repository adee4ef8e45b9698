#pragma once
// Decoding an image file's bytes so that a damaged file is an error, never a
// silently altered image. OpenCV (4.6) alone decodes a JPEG cut in half with
// a warning on stderr and grey below the cut, and a TIFF whose compressed
// strips are damaged with garbage in them; PNG and BMP it already refuses.
// Here JPEGs are decoded by libjpeg with its corrupt-data warnings made fatal
// (the same library and settings as OpenCV's, so the pixels are the same),
// and a TIFF's strips or tiles are checked with libtiff before OpenCV decodes
// it; a PNG's chunks are walked first so that a cut one is named as such.
// Shared by the io and prnu plugins (docs/reliability.md, "Damaged
// inputs").
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace flowd::imagefile {

// What the caller wants of the stored channels (OpenCV's imread flags in
// words): `color` three channels, `grey` one, `unchanged` as stored (alpha
// kept). EXIF orientation is never applied: pixel coordinates are those of
// the stored raster (a PRNU pattern follows the sensor, not the viewer).
enum class Channels { color, grey, unchanged };
// `as_stored`: 8- or 16-bit, or 32-bit float (float TIFFs); `eight_bit`:
// 16-bit files scaled down as OpenCV does without IMREAD_ANYDEPTH.
enum class Depth { as_stored, eight_bit };

// A file that cannot be decoded, or only by inventing pixels. what() says
// why without the file's name, which the caller adds.
class DecodeError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct Decoded {
  cv::Mat pixels;  // OpenCV's channel order (BGR, BGRA) and depth (8U, 16U, 32F)
  // Recoverable oddities the decoder met that did not change a pixel
  // (libjpeg's "extraneous bytes before marker" for a camera's padding):
  // for the log, so that nothing goes unsaid.
  std::vector<std::string> warnings;
};

// Throws DecodeError for an empty, truncated, corrupt or unsupported file.
Decoded decode(std::span<const std::uint8_t> bytes, Channels channels, Depth depth = Depth::as_stored);

// OpenCV's limit on the pixels of one image (2^30, or the environment's
// OPENCV_IO_MAX_IMAGE_PIXELS, read as OpenCV reads it); decode() holds JPEGs
// to it as OpenCV would.
std::uint64_t max_image_pixels();

// The whole file in memory; throws DecodeError ("cannot open: ...").
std::vector<std::uint8_t> read_file(const std::string& path);

}  // namespace flowd::imagefile

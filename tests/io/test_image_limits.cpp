// Images OpenCV will not decode because of their size: the message names the
// file, its dimensions and the limit, and what to do, instead of OpenCV's
// internal check text. The files are tiny: only their headers are huge.
#include <array>
#include <cstdint>

#include <gtest/gtest.h>

#include "io_support.hpp"

using namespace flowd;
using namespace flowd::iotest;

namespace {

std::uint32_t crc32(const std::string& bytes) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k)
      c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string chunk(const std::string& type, const std::string& data) {
  return be32(static_cast<std::uint32_t>(data.size())) + type + data + be32(crc32(type + data));
}

// A valid PNG signature and IHDR declaring width x height 8-bit RGB, then
// IEND: what a decoder reads before it allocates anything.
std::string png_header(std::uint32_t width, std::uint32_t height) {
  const std::string ihdr = be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IEND", "");
}

std::string read_error(const fs::path& file) {
  try {
    harness("io.read_images", {{"path", file.string()}}).source();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ImageLimits, AnImageOverOpenCvsPixelLimitIsNamedWithItsSizeAndTheWayOut) {
  const auto dir = test::scratch();
  const auto file = dir / "huge.png";
  write_bytes(file, png_header(100000, 100000));
  const auto err = read_error(file);
  EXPECT_EQ(err.rfind("cannot read image '" + file.string() +
                          "': 100000 x 100000 = 10000000000 pixels, over OpenCV's "
                          "limit of 1073741824 pixels per image; cut it into tiles (files) first, or raise the limit",
                      0),
            0u)
      << err;
  EXPECT_NE(err.find("OPENCV_IO_MAX_IMAGE_PIXELS=10000000000"), std::string::npos) << err;
  EXPECT_EQ(err.find("<= CV_IO_MAX_IMAGE_PIXELS"), std::string::npos) << "OpenCV's check text: " << err;
}

TEST(ImageLimits, AnImageWiderThanOpenCvCanDecodeIsNamed) {
  const auto dir = test::scratch();
  const auto file = dir / "wide.png";
  write_bytes(file, png_header(2'000'000, 2));
  const auto err = read_error(file);
  EXPECT_NE(err.find("2000000 x 2 pixels: a side over 1048576 pixels"), std::string::npos) << err;
}

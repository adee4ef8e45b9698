#include "image_header.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>

namespace flowd::io {

namespace {

class Bytes {
public:
  explicit Bytes(const std::filesystem::path& file) : in_(file, std::ios::binary) {}
  bool ok() const { return static_cast<bool>(in_); }

  bool read(std::uint64_t offset, std::uint8_t* out, std::size_t n) {
    if (offset > static_cast<std::uint64_t>(std::numeric_limits<std::streamoff>::max())) return false;
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    return static_cast<bool>(in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n)));
  }
  template <std::size_t N> std::optional<std::array<std::uint8_t, N>> at(std::uint64_t offset) {
    std::array<std::uint8_t, N> b{};
    if (!read(offset, b.data(), N)) return std::nullopt;
    return b;
  }

private:
  std::ifstream in_;
};

// Reads an unsigned integer of `n` bytes stored big- or little-endian.
std::uint64_t read_uint(const std::uint8_t* p, int n, bool big_endian) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[big_endian ? i : n - 1 - i]) << (8 * (n - 1 - i));
  return v;
}

std::optional<cv::Size> make_size(std::uint64_t w, std::uint64_t h) {
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  if (w == 0 || h == 0 || w > max || h > max) return std::nullopt;
  return cv::Size(static_cast<int>(w), static_cast<int>(h));
}

std::optional<cv::Size> png(Bytes& f) {
  const auto b = f.at<24>(0);
  if (!b || std::memcmp(b->data() + 12, "IHDR", 4) != 0) return std::nullopt;
  return make_size(read_uint(b->data() + 16, 4, true), read_uint(b->data() + 20, 4, true));
}

std::optional<cv::Size> bmp(Bytes& f) {
  const auto b = f.at<26>(0);
  if (!b) return std::nullopt;
  const std::uint64_t header = read_uint(b->data() + 14, 4, false);
  if (header == 12) return make_size(read_uint(b->data() + 18, 2, false), read_uint(b->data() + 20, 2, false));
  const auto w = static_cast<std::int32_t>(read_uint(b->data() + 18, 4, false));
  const auto h = static_cast<std::int32_t>(read_uint(b->data() + 22, 4, false));  // negative: stored top-down
  if (w <= 0 || h == std::numeric_limits<std::int32_t>::min()) return std::nullopt;
  return make_size(static_cast<std::uint64_t>(w), static_cast<std::uint64_t>(h < 0 ? -h : h));
}

std::optional<cv::Size> jpeg(Bytes& f) {
  std::uint64_t pos = 2;
  for (int segments = 0; segments < 4096; ++segments) {
    auto m = f.at<2>(pos);
    if (!m || (*m)[0] != 0xFF) return std::nullopt;
    while ((*m)[1] == 0xFF) {  // fill bytes before a marker
      ++pos;
      if (!(m = f.at<2>(pos))) return std::nullopt;
    }
    const std::uint8_t marker = (*m)[1];
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {  // no length field
      pos += 2;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return std::nullopt;  // end or scan data before any frame header
    const auto len = f.at<2>(pos + 2);
    if (!len) return std::nullopt;
    const std::uint64_t length = read_uint(len->data(), 2, true);
    const bool frame = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (frame) {
      const auto sof = f.at<5>(pos + 4);  // precision, height, width
      if (!sof) return std::nullopt;
      return make_size(read_uint(sof->data() + 3, 2, true), read_uint(sof->data() + 1, 2, true));
    }
    if (length < 2) return std::nullopt;
    pos += 2 + length;
  }
  return std::nullopt;
}

std::optional<cv::Size> tiff(Bytes& f) {
  const auto h = f.at<16>(0);
  if (!h) return std::nullopt;
  const bool big = (*h)[0] == 'M';
  const std::uint64_t version = read_uint(h->data() + 2, 2, big);
  const bool bigtiff = version == 43;
  if (!bigtiff && version != 42) return std::nullopt;
  const std::uint64_t ifd = bigtiff ? read_uint(h->data() + 8, 8, big) : read_uint(h->data() + 4, 4, big);
  std::uint64_t count = 0;
  if (bigtiff) {
    const auto c = f.at<8>(ifd);
    if (!c) return std::nullopt;
    count = read_uint(c->data(), 8, big);
  } else {
    const auto c = f.at<2>(ifd);
    if (!c) return std::nullopt;
    count = read_uint(c->data(), 2, big);
  }
  if (count > 4096) return std::nullopt;
  const std::uint64_t first = ifd + (bigtiff ? 8 : 2), entry_size = bigtiff ? 20 : 12;
  std::uint64_t width = 0, height = 0;
  for (std::uint64_t i = 0; i < count && (width == 0 || height == 0); ++i) {
    std::array<std::uint8_t, 20> bytes{};
    if (!f.read(first + i * entry_size, bytes.data(), entry_size)) return std::nullopt;
    const std::uint64_t tag = read_uint(bytes.data(), 2, big), type = read_uint(bytes.data() + 2, 2, big);
    if (tag != 256 && tag != 257) continue;  // ImageWidth, ImageLength
    const std::uint8_t* value = bytes.data() + (bigtiff ? 12 : 8);
    std::uint64_t v = 0;
    if (type == 3) v = read_uint(value, 2, big);        // SHORT
    else if (type == 4) v = read_uint(value, 4, big);   // LONG
    else if (type == 16) v = read_uint(value, 8, big);  // LONG8
    else return std::nullopt;
    (tag == 256 ? width : height) = v;
  }
  return make_size(width, height);
}

}  // namespace

std::optional<cv::Size> peek_image_size(const std::filesystem::path& file) {
  Bytes f(file);
  if (!f.ok()) return std::nullopt;
  const auto magic = f.at<4>(0);
  if (!magic) return std::nullopt;
  const auto& m = *magic;
  if (m[0] == 0x89 && m[1] == 'P' && m[2] == 'N' && m[3] == 'G') return png(f);
  if (m[0] == 0xFF && m[1] == 0xD8) return jpeg(f);
  if (m[0] == 'B' && m[1] == 'M') return bmp(f);
  if ((m[0] == 'I' && m[1] == 'I' && m[3] == 0) || (m[0] == 'M' && m[1] == 'M' && m[2] == 0)) return tiff(f);
  return std::nullopt;
}

}  // namespace flowd::io

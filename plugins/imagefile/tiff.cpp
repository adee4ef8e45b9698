#include "tiff.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <tiffio.h>
#include <zlib.h>

#include "decode.hpp"

namespace flowd::imagefile {

namespace {

// libtiff reads through these from the bytes in memory.
struct Source {
  std::span<const std::uint8_t> bytes;
  toff_t at = 0;
  std::string error;  // the first error libtiff reported
};

tmsize_t read_proc(thandle_t h, void* buf, tmsize_t size) {
  auto& s = *static_cast<Source*>(h);
  if (s.at >= s.bytes.size()) return 0;
  const auto n = std::min<toff_t>(static_cast<toff_t>(size), s.bytes.size() - s.at);
  std::memcpy(buf, s.bytes.data() + s.at, n);
  s.at += n;
  return static_cast<tmsize_t>(n);
}
tmsize_t write_proc(thandle_t, void*, tmsize_t) { return -1; }
toff_t seek_proc(thandle_t h, toff_t off, int whence) {
  auto& s = *static_cast<Source*>(h);
  const toff_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s.at : s.bytes.size();
  s.at = base + off;
  return s.at;
}
int close_proc(thandle_t) { return 0; }
toff_t size_proc(thandle_t h) { return static_cast<Source*>(h)->bytes.size(); }
int map_proc(thandle_t, void**, toff_t*) { return 0; }
void unmap_proc(thandle_t, void*, toff_t) {}

// Per handle (libtiff 4.5), so that OpenCV's process-wide handlers and
// other threads' files are left alone.
int on_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto& s = *static_cast<Source*>(user);
  if (s.error.empty()) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    s.error = (module && *module ? std::string(module) + ": " : std::string()) + buf;
  }
  return 1;
}
int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct Close {
  void operator()(TIFF* t) const noexcept { TIFFClose(t); }
};

// A zlib stream inflated to its end: false when it is damaged, cut short or
// fails its Adler-32 check.
bool inflates_whole(std::span<const std::uint8_t> data) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return false;
  z.next_in = const_cast<Bytef*>(data.data());
  z.avail_in = static_cast<uInt>(data.size());
  std::uint8_t sink[1 << 15];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = sink;
    z.avail_out = sizeof sink;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // the input ended before the stream did
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END;
}

}  // namespace

bool is_tiff(std::span<const std::uint8_t> b) noexcept {
  if (b.size() < 4) return false;
  const bool le = b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0;
  const bool be = b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43);
  return le || be;
}

void check_tiff(std::span<const std::uint8_t> bytes) {
  Source src{bytes, 0, {}};
  std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)> opts(TIFFOpenOptionsAlloc(), TIFFOpenOptionsFree);
  TIFFOpenOptionsSetErrorHandlerExtR(opts.get(), on_error, &src);
  TIFFOpenOptionsSetWarningHandlerExtR(opts.get(), on_warning, &src);
  std::unique_ptr<TIFF, Close> tif(TIFFClientOpenExt("image", "rm", &src, read_proc, write_proc, seek_proc, close_proc,
                                                     size_proc, map_proc, unmap_proc, opts.get()));
  auto fail = [&](const std::string& why) {
    throw DecodeError("corrupt or truncated TIFF (" + (src.error.empty() ? why : src.error) + ")");
  };
  if (!tif) fail("not readable");
  const bool tiled = TIFFIsTiled(tif.get()) != 0;
  const std::uint32_t n = tiled ? TIFFNumberOfTiles(tif.get()) : TIFFNumberOfStrips(tif.get());
  std::uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_COMPRESSION, &compression);
  const tmsize_t block = tiled ? TIFFTileSize(tif.get()) : TIFFStripSize(tif.get());
  if (n == 0 || block <= 0) fail("no strips or tiles");
  std::vector<std::uint8_t> buf;
  for (std::uint32_t i = 0; i < n; ++i) {
    int err = 0;
    const std::uint64_t off = TIFFGetStrileOffsetWithErr(tif.get(), i, &err);
    const std::uint64_t count = TIFFGetStrileByteCountWithErr(tif.get(), i, &err);
    if (err) fail("its strip table cannot be read");
    if (off > bytes.size() || count > bytes.size() - off)
      fail(std::string(tiled ? "tile " : "strip ") + std::to_string(i) + " of " + std::to_string(n) +
           " ends past the end of the file");
    const std::string which = std::string(tiled ? "tile " : "strip ") + std::to_string(i) + " of " + std::to_string(n);
    if (count == 0) fail(which + " holds no bytes");
    if (compression == COMPRESSION_NONE) continue;  // nothing to check in raw samples
    if (compression == COMPRESSION_ADOBE_DEFLATE || compression == COMPRESSION_DEFLATE) {
      // libtiff stops inflating once the strip's pixels are filled, so a
      // damaged stream that still fills them passes, and the stream's own
      // checksum is never read: inflated here to its end instead.
      if (!inflates_whole(bytes.subspan(static_cast<std::size_t>(off), static_cast<std::size_t>(count))))
        fail(which + " does not decompress (deflate stream damaged or cut)");
      continue;
    }
    if (buf.empty()) buf.resize(static_cast<std::size_t>(block));
    const tmsize_t got = tiled ? TIFFReadEncodedTile(tif.get(), i, buf.data(), block)
                               : TIFFReadEncodedStrip(tif.get(), i, buf.data(), block);
    if (got < 0 || !src.error.empty()) fail(which + " does not decompress");
  }
}

}  // namespace flowd::imagefile

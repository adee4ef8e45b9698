#include "jpeg.hpp"

#include <csetjmp>
#include <cstdio>
#include <string>
#include <vector>

// jpeglib.h needs size_t and FILE declared first, and jerror.h the
// configuration jpeglib.h includes.
#include <jpeglib.h>
// clang-format off
#include <jerror.h>
// clang-format on

namespace flowd::imagefile {

namespace {

// The warnings after which libjpeg goes on with pixels it did not read
// (grey after a premature end, a block skipped to the next restart marker,
// coefficients a damaged code left out, bytes of a scan skipped before the
// next segment): fatal here. The others leave the pixels as decoded and are
// passed on to the log, among them one or two bytes skipped before the
// end-of-image marker once every block was read, which some encoders write
// ("2 extraneous bytes before marker 0xd9" of many cameras' and sites'
// photos). More than two there is what a damaged scan leaves in our trials
// (docs/benchmarks.md §18), and so an error.
constexpr int camera_padding = 2;

bool loses_pixels(const jpeg_error_mgr& err) noexcept {
  const int code = err.msg_code;
  if (code == JWRN_EXTRANEOUS_DATA) return err.msg_parm.i[1] != 0xD9 || err.msg_parm.i[0] > camera_padding;
  switch (code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_MUST_RESYNC:
    case JWRN_HUFF_BAD_CODE:
#if JPEG_LIB_VERSION >= 70 || defined(C_ARITH_CODING_SUPPORTED) || defined(D_ARITH_CODING_SUPPORTED)
    case JWRN_ARITH_BAD_CODE:
#endif
    case JWRN_BOGUS_PROGRESSION:
      return true;
    default:
      return false;
  }
}

// Everything the decoding touches lives here, reached through a reference,
// so that nothing is left in a register that longjmp would restore stale.
struct Reader {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  std::jmp_buf jump{};
  std::string fatal;
  std::vector<std::string> warnings;
  cv::Mat pixels;
  std::vector<std::uint8_t> scratch;  // rows of a file only checked
  std::uint64_t max_pixels = 0;
};

Reader& reader_of(j_common_ptr c) {
  return *static_cast<Reader*>(c->client_data);
}

std::string message_of(j_common_ptr c) {
  char buf[JMSG_LENGTH_MAX];
  (*c->err->format_message)(c, buf);
  return buf;
}

void on_error(j_common_ptr c) {
  Reader& r = reader_of(c);
  r.fatal = message_of(c);
  std::longjmp(r.jump, 1);
}

void on_message(j_common_ptr c, int level) {
  if (level >= 0) return;  // trace output
  Reader& r = reader_of(c);
  if (loses_pixels(*c->err)) {
    r.fatal = message_of(c);
    std::longjmp(r.jump, 1);
  }
  if (r.warnings.size() < 8) r.warnings.push_back(message_of(c));
}

// 0 on success, 1 for libjpeg's error, 2 for an image over the size limit;
// no object with a destructor is created between the setjmp
// and the end.
int run(Reader& r, std::span<const std::uint8_t> bytes, Channels channels) {
  jpeg_decompress_struct& ci = r.cinfo;
  ci.err = jpeg_std_error(&r.err);
  r.err.error_exit = on_error;
  r.err.emit_message = on_message;
  ci.client_data = &r;
  if (setjmp(r.jump)) {
    jpeg_destroy_decompress(&ci);
    return 1;
  }
  jpeg_create_decompress(&ci);
  jpeg_mem_src(&ci, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&ci, TRUE);
  const bool four = ci.num_components == 4;
  const bool colour = channels == Channels::color || (channels == Channels::unchanged && ci.num_components > 1);
  // As OpenCV's decoder sets it (grfmt_jpeg.cpp): BGR or grey, CMYK as read.
  if (four) {
    ci.out_color_space = JCS_CMYK;
  } else {
    ci.out_color_space = colour ? JCS_EXT_BGR : JCS_GRAYSCALE;
  }
  if (static_cast<std::uint64_t>(ci.image_width) * ci.image_height > r.max_pixels) {
    r.fatal = std::to_string(ci.image_width) + " x " + std::to_string(ci.image_height) +
              " pixels, over OpenCV's limit of " + std::to_string(r.max_pixels) +
              " per image (OPENCV_IO_MAX_IMAGE_PIXELS)";
    jpeg_destroy_decompress(&ci);
    return 2;
  }
  jpeg_start_decompress(&ci);
  const int w = static_cast<int>(ci.output_width), h = static_cast<int>(ci.output_height);
  const int comps = ci.output_components;
  if (!four) {
    r.pixels.create(h, w, comps == 3 ? CV_8UC3 : CV_8UC1);
  } else {
    r.scratch.resize(static_cast<std::size_t>(w) * static_cast<std::size_t>(comps));
  }
  while (ci.output_scanline < ci.output_height) {
    JSAMPROW row = four ? r.scratch.data() : r.pixels.ptr<std::uint8_t>(static_cast<int>(ci.output_scanline));
    jpeg_read_scanlines(&ci, &row, 1);
  }
  jpeg_finish_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  return 0;
}

}  // namespace

bool is_jpeg(std::span<const std::uint8_t> b) noexcept {
  return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF;
}

Decoded decode_jpeg(std::span<const std::uint8_t> bytes, Channels channels) {
  Reader r;
  r.max_pixels = max_image_pixels();
  const int failed = run(r, bytes, channels);
  if (failed == 2) throw DecodeError(r.fatal);
  if (failed) throw DecodeError("corrupt or truncated JPEG (" + r.fatal + ")");
  return {std::move(r.pixels), std::move(r.warnings)};
}

}  // namespace flowd::imagefile

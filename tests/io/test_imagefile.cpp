// plugins/imagefile: a damaged image file is an error naming what is wrong,
// never an altered image; a sound one decodes to OpenCV's own pixels.
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <gtest/gtest.h>

#include "decode.hpp"

namespace img = flowd::imagefile;

namespace {

cv::Mat picture(int type) {
  cv::Mat m(150, 203, type);
  cv::theRNG().state = 12345;
  cv::randu(m, 0, CV_MAT_DEPTH(type) == CV_16U ? 60000 : 255);
  cv::GaussianBlur(m, m, {0, 0}, 2.5);
  return m;
}

std::vector<std::uint8_t> encoded(const std::string& ext, const cv::Mat& m, const std::vector<int>& params = {}) {
  std::vector<std::uint8_t> b;
  EXPECT_TRUE(cv::imencode(ext, m, b, params)) << ext;
  return b;
}

std::string error_of(const std::vector<std::uint8_t>& bytes, img::Channels c = img::Channels::color) {
  try {
    img::decode(bytes, c);
  } catch (const img::DecodeError& e) {
    return e.what();
  }
  return "no error";
}

int flags_of(img::Channels c) {
  switch (c) {
    case img::Channels::color: return cv::IMREAD_COLOR | cv::IMREAD_ANYDEPTH | cv::IMREAD_IGNORE_ORIENTATION;
    case img::Channels::grey: return cv::IMREAD_GRAYSCALE | cv::IMREAD_ANYDEPTH | cv::IMREAD_IGNORE_ORIENTATION;
    case img::Channels::unchanged: return cv::IMREAD_UNCHANGED;
  }
  return 0;
}

}  // namespace

// libjpeg with OpenCV's settings: the same pixels, in every channel mode,
// for baseline, progressive and grey JPEGs (the PRNU pattern and the nuclei
// features are computed from them).
TEST(ImageFile, SoundFilesDecodeToOpenCvsPixels) {
  const cv::Mat rgb = picture(CV_8UC3), grey = picture(CV_8UC1), deep = picture(CV_16UC1);
  const std::vector<std::vector<std::uint8_t>> files = {
      encoded(".jpg", rgb, {cv::IMWRITE_JPEG_QUALITY, 85}), encoded(".jpg", rgb, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}),
      encoded(".jpg", grey), encoded(".png", rgb), encoded(".png", deep), encoded(".tif", deep),
      encoded(".tif", rgb, {cv::IMWRITE_TIFF_COMPRESSION, 8}), encoded(".bmp", rgb)};
  for (std::size_t f = 0; f < files.size(); ++f)
    for (const auto c : {img::Channels::color, img::Channels::grey, img::Channels::unchanged}) {
      SCOPED_TRACE("file " + std::to_string(f) + ", channels " + std::to_string(static_cast<int>(c)));
      const img::Decoded d = img::decode(files[f], c);
      const cv::Mat want = cv::imdecode(files[f], flags_of(c));
      ASSERT_EQ(d.pixels.size(), want.size());
      ASSERT_EQ(d.pixels.type(), want.type());
      EXPECT_EQ(cv::norm(d.pixels, want, cv::NORM_INF), 0.0);
      EXPECT_TRUE(d.warnings.empty());
    }
}

TEST(ImageFile, EightBitDepthScalesSixteenBitFilesAsOpenCvDoes) {
  const auto png = encoded(".png", picture(CV_16UC1));
  const img::Decoded d = img::decode(png, img::Channels::color, img::Depth::eight_bit);
  const cv::Mat want = cv::imdecode(png, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  ASSERT_EQ(d.pixels.type(), CV_8UC3);
  EXPECT_EQ(cv::norm(d.pixels, want, cv::NORM_INF), 0.0);
}

// Issue 38: OpenCV decoded a JPEG cut in half with grey below the cut and a
// line on stderr, and a damaged LZW or deflate TIFF with garbage in it.
TEST(ImageFile, TruncatedAndCorruptFilesAreErrorsSayingWhy) {
  const cv::Mat rgb = picture(CV_8UC3);
  struct Case {
    std::vector<std::uint8_t> bytes;
    const char* says;
  };
  auto cut = [](std::vector<std::uint8_t> b) {
    b.resize(b.size() / 2);
    return b;
  };
  auto flip = [](std::vector<std::uint8_t> b) {
    for (std::size_t i = b.size() / 2; i < b.size() / 2 + 64; ++i) b[i] ^= 0x5a;
    return b;
  };
  // A lost sector: 512 bytes of zeros past the middle.
  auto lost = [](std::vector<std::uint8_t> b) {
    for (std::size_t i = b.size() * 6 / 10; i < b.size() * 6 / 10 + 512 && i + 2 < b.size(); ++i) b[i] = 0;
    return b;
  };
  const auto jpg = encoded(".jpg", rgb), png = encoded(".png", rgb),
             lzw = encoded(".tif", rgb, {cv::IMWRITE_TIFF_COMPRESSION, 5}),
             zip = encoded(".tif", rgb, {cv::IMWRITE_TIFF_COMPRESSION, 8}), bmp = encoded(".bmp", rgb);
  const std::vector<Case> cases = {
      {cut(jpg), "corrupt or truncated JPEG (Premature end of JPEG file)"},
      {lost(jpg), "corrupt or truncated JPEG (Corrupt JPEG data"},
      {cut(png), "truncated PNG (chunk"},
      {flip(png), "not a supported image, or corrupt or truncated"},
      {lost(png), "not a supported image, or corrupt or truncated"},
      {cut(lzw), "corrupt or truncated TIFF"},
      {flip(lzw), "corrupt or truncated TIFF"},
      {lost(lzw), "corrupt or truncated TIFF"},
      {flip(zip), "corrupt or truncated TIFF"},
      // libtiff alone decodes this one to garbage: it stops inflating once
      // the strip is full and never reads the stream's checksum.
      {lost(zip), "does not decompress (deflate stream damaged or cut)"},
      {cut(bmp), "corrupt or truncated"},
      {{}, "empty file"},
      {{'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'}, "not a supported image"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string e = error_of(cases[i].bytes);
    EXPECT_NE(e.find(cases[i].says), std::string::npos) << "case " << i << ": " << e;
  }
}

// One or two bytes some encoders leave before the end-of-image marker, once
// every block is read: libjpeg skips them and the pixels are whole; said,
// not refused. More of them, or any before another marker (a scan that lost
// data), are an error.
TEST(ImageFile, ExtraneousBytesBeforeTheEndAreAWarningElsewhereAnError) {
  const cv::Mat rgb = picture(CV_8UC3);
  const std::vector<std::uint8_t> clean = encoded(".jpg", rgb);
  const cv::Mat want = cv::imdecode(clean, cv::IMREAD_COLOR);
  ASSERT_EQ(clean[clean.size() - 2], 0xFF);
  ASSERT_EQ(clean[clean.size() - 1], 0xD9);
  // How many of k inserted bytes libjpeg reports as skipped depends on how
  // far its bit reader had read ahead: try k = 1..40.
  int warned = 0, refused = 0;
  for (int k = 1; k <= 40; ++k) {
    std::vector<std::uint8_t> jpg = clean;
    jpg.insert(jpg.end() - 2, static_cast<std::size_t>(k), 0x12);
    try {
      const img::Decoded d = img::decode(jpg, img::Channels::color);
      EXPECT_EQ(cv::norm(d.pixels, want, cv::NORM_INF), 0.0) << k;
      if (!d.warnings.empty()) {
        ++warned;
        EXPECT_NE(d.warnings[0].find("extraneous bytes before marker 0xd9"), std::string::npos) << d.warnings[0];
      }
    } catch (const img::DecodeError& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find("extraneous bytes before marker 0xd9"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(warned, 0);
  EXPECT_GT(refused, 0);
  // Before the progressive file's second scan (its second SOS marker).
  std::vector<std::uint8_t> progressive = encoded(".jpg", rgb, {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  std::size_t sos = 0;
  for (std::size_t i = 0, seen = 0; i + 1 < progressive.size(); ++i)
    if (progressive[i] == 0xFF && progressive[i + 1] == 0xDA && ++seen == 2) sos = i;
  ASSERT_GT(sos, 0u);
  progressive.insert(progressive.begin() + static_cast<std::ptrdiff_t>(sos), {0x12, 0x34, 0x56});
  EXPECT_NE(error_of(progressive).find("extraneous bytes before marker 0xda"), std::string::npos)
      << error_of(progressive);
}

// A header that claims more pixels than OpenCV's limit allocates nothing.
TEST(ImageFile, AJpegHeaderOverTheSizeLimitIsRefusedBeforeDecoding) {
  std::vector<std::uint8_t> jpg = encoded(".jpg", picture(CV_8UC3));
  // SOF0: FF C0, length (2), precision (1), height (2), width (2).
  for (std::size_t i = 0; i + 8 < jpg.size(); ++i)
    if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {
      jpg[i + 5] = jpg[i + 7] = 0x9C;  // 40000 x 40000: libjpeg's own limit is 65500
      jpg[i + 6] = jpg[i + 8] = 0x40;
      break;
    }
  EXPECT_NE(error_of(jpg).find("40000 x 40000 pixels, over OpenCV's limit"), std::string::npos) << error_of(jpg);
}

#include "decode.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <opencv2/imgcodecs.hpp>

#include "jpeg.hpp"
#include "png.hpp"
#include "tiff.hpp"

namespace flowd::imagefile {

namespace {

// The file descriptor, closed on every way out.
class Fd {
public:
  explicit Fd(int fd) noexcept : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }

private:
  int fd_;
};

cv::Mat with_opencv(std::span<const std::uint8_t> bytes, Channels channels, Depth depth) {
  const int any_depth = depth == Depth::as_stored ? cv::IMREAD_ANYDEPTH : 0;
  int flags = cv::IMREAD_UNCHANGED;
  if (channels == Channels::color) flags = cv::IMREAD_COLOR | any_depth | cv::IMREAD_IGNORE_ORIENTATION;
  if (channels == Channels::grey) flags = cv::IMREAD_GRAYSCALE | any_depth | cv::IMREAD_IGNORE_ORIENTATION;
  cv::Mat m;
  try {
    // imdecode takes a Mat header over the bytes: no copy.
    const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<std::uint8_t*>(bytes.data()));
    m = cv::imdecode(buf, flags);
  } catch (const cv::Exception& e) {
    throw DecodeError(e.err);
  }
  if (m.empty()) throw DecodeError("not a supported image, or corrupt or truncated");
  if (depth == Depth::eight_bit && m.depth() != CV_8U) m.convertTo(m, CV_8U);
  return m;
}

}  // namespace

std::uint64_t max_image_pixels() {
  if (const char* env = std::getenv("OPENCV_IO_MAX_IMAGE_PIXELS"); env && *env) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end && *end == '\0' && v > 0) return v;
  }
  return std::uint64_t{1} << 30;
}

Decoded decode(std::span<const std::uint8_t> bytes, Channels channels, Depth depth) {
  if (bytes.empty()) throw DecodeError("empty file");
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX)) throw DecodeError("over 2 GiB, more than OpenCV reads");
  if (is_jpeg(bytes)) {
    Decoded d = decode_jpeg(bytes, channels);
    if (d.pixels.empty()) d.pixels = with_opencv(bytes, channels, depth);  // CMYK: checked, OpenCV converts
    return d;
  }
  if (is_png(bytes)) check_png(bytes);
  if (is_tiff(bytes)) check_tiff(bytes);
  return {with_opencv(bytes, channels, depth), {}};
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  // One read of the whole file (a stream iterator, byte by byte, cost as
  // much as decoding an uncompressed TIFF).
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw DecodeError(std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw DecodeError(std::string("cannot read: ") + std::strerror(errno));
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::max<off_t>(st.st_size, 0)));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw DecodeError(std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) break;  // shorter than it was a moment ago
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace flowd::imagefile

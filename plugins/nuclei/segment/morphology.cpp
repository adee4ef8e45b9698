// Grey opening by OpenCV's elliptic disk, computed row by row of the disk:
// each disk row is a horizontal segment, and the min (max) over a segment of
// any length is the min of two overlapping power-of-two windows (van den
// Boomgaard / Urbach-Wilkinson chord tables). Cost per pixel: log2(2r+1)
// table levels plus 3 ops per disk row, all on contiguous rows, against r^2
// for a direct kernel.
#include <algorithm>
#include <stdexcept>

#include <opencv2/imgproc.hpp>

#include "segment.hpp"

namespace flowd::nuclei {

std::vector<int> disk_half_widths(int radius) {
  if (radius < 0) throw std::invalid_argument("disk_half_widths: radius must be >= 0");
  const int n = 2 * radius + 1;
  const cv::Mat se = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(n, n));
  std::vector<int> half(static_cast<std::size_t>(n), 0);
  for (int y = 0; y < n; ++y) {
    const std::uint8_t* row = se.ptr<std::uint8_t>(y);
    int first = n, last = -1;
    for (int x = 0; x < n; ++x)
      if (row[x]) {
        first = std::min(first, x);
        last = x;
      }
    if (last < 0 || first + last != 2 * radius) throw std::logic_error("disk_half_widths: OpenCV's ellipse is not a centred disk");
    half[static_cast<std::size_t>(y)] = radius - first;
  }
  return half;
}

namespace {

int floor_log2(int v) {
  int k = 0;
  while ((2 << k) <= v) ++k;
  return k;
}

struct Min {
  static constexpr std::uint8_t identity = 255;
  static std::uint8_t op(std::uint8_t a, std::uint8_t b) { return a < b ? a : b; }
};
struct Max {
  static constexpr std::uint8_t identity = 0;
  static std::uint8_t op(std::uint8_t a, std::uint8_t b) { return a > b ? a : b; }
};

// Erosion (Min) or dilation (Max) by the disk; outside pixels are ignored,
// i.e. behave as the operation's identity.
template <class Op> void morph(const cv::Mat& src, cv::Mat& dst, const std::vector<int>& half) {
  const int r = static_cast<int>(half.size() / 2), rows = src.rows, cols = src.cols;
  int levels = 1;
  std::vector<int> lg(half.size());
  for (std::size_t i = 0; i < half.size(); ++i) {
    lg[i] = floor_log2(2 * half[i] + 1);
    levels = std::max(levels, lg[i] + 1);
  }
  const int ring = 2 * r + 1;
  const std::size_t width = static_cast<std::size_t>(cols) + 2 * static_cast<std::size_t>(r) + (std::size_t{2} << levels);
  std::vector<std::uint8_t> tables(static_cast<std::size_t>(ring) * levels * width, Op::identity);
  auto level_ptr = [&](int y, int k) {
    return tables.data() + (static_cast<std::size_t>(y % ring) * levels + k) * width;
  };
  int built = 0;  // input rows [0, built) have tables
  auto build = [&](int y) {
    std::uint8_t* p0 = level_ptr(y, 0);
    std::copy_n(src.ptr<std::uint8_t>(y), cols, p0 + r);
    for (int k = 1; k < levels; ++k) {
      const std::uint8_t* __restrict a = level_ptr(y, k - 1);
      std::uint8_t* __restrict b = level_ptr(y, k);
      const std::size_t step = std::size_t{1} << (k - 1);
      const std::size_t n = width - step;
      for (std::size_t i = 0; i < n; ++i) b[i] = Op::op(a[i], a[i + step]);
    }
  };
  std::vector<std::uint8_t> acc(static_cast<std::size_t>(cols));
  for (int y = 0; y < rows; ++y) {
    while (built < rows && built <= y + r) build(built++);
    std::fill(acc.begin(), acc.end(), Op::identity);
    for (int dy = -r; dy <= r; ++dy) {
      const int yy = y + dy;
      if (yy < 0 || yy >= rows) continue;
      const std::size_t i = static_cast<std::size_t>(dy + r);
      const int h = half[i], k = lg[i];
      const std::uint8_t* p = level_ptr(yy, k);
      const std::uint8_t* __restrict a = p + (r - h);
      const std::uint8_t* __restrict b = p + (r + h - (1 << k) + 1);
      std::uint8_t* __restrict out = acc.data();
      for (int x = 0; x < cols; ++x) out[x] = Op::op(out[x], Op::op(a[x], b[x]));
    }
    std::copy(acc.begin(), acc.end(), dst.ptr<std::uint8_t>(y));
  }
}

}  // namespace

cv::Mat open(const cv::Mat& grey, int radius) {
  if (grey.type() != CV_8U) throw std::invalid_argument("open: expects CV_8U");
  const std::vector<int> half = disk_half_widths(radius);
  cv::Mat eroded(grey.size(), CV_8U), out(grey.size(), CV_8U);
  if (grey.empty()) return out;
  morph<Min>(grey, eroded, half);
  morph<Max>(eroded, out, half);
  return out;
}

}  // namespace flowd::nuclei

// Frozen oracle (see frozen.hpp): plugins/nuclei/segment/reconstruct.cpp as of commit 9ae5313.
// Grey reconstruction by dilation, Vincent's hybrid algorithm (1993): one
// raster and one anti-raster scan settle most pixels, then a FIFO of the
// pixels that can still raise a neighbour finishes the propagation.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "frozen.hpp"

namespace flowd::nuclei::frozen {

namespace {

template <class T> constexpr T lowest() {
  if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
  return std::numeric_limits<T>::lowest();
}

template <class T> cv::Mat reconstruct_impl(const cv::Mat& marker, const cv::Mat& mask) {
  const int rows = marker.rows, cols = marker.cols;
  // A one-pixel frame at the lowest value (equal in J and I) never rises,
  // so the scans need no border tests.
  const std::ptrdiff_t w = cols + 2;
  const std::size_t n = static_cast<std::size_t>(rows + 2) * static_cast<std::size_t>(w);
  std::vector<T> J(n, lowest<T>()), I(n, lowest<T>());
  for (int y = 0; y < rows; ++y) {
    const T* m = marker.ptr<T>(y);
    const T* k = mask.ptr<T>(y);
    T* j = J.data() + (y + 1) * w + 1;
    T* i = I.data() + (y + 1) * w + 1;
    for (int x = 0; x < cols; ++x) {
      i[x] = k[x];
      j[x] = std::min(m[x], k[x]);
    }
  }
  T* const Jp = J.data();
  const T* const Ip = I.data();
  for (int y = 1; y <= rows; ++y) {
    std::ptrdiff_t p = y * w + 1;
    for (int x = 0; x < cols; ++x, ++p) {
      const T v = std::max(std::max(std::max(Jp[p], Jp[p - 1]), std::max(Jp[p - w - 1], Jp[p - w])), Jp[p - w + 1]);
      Jp[p] = std::min(v, Ip[p]);
    }
  }
  std::vector<std::uint32_t> queue;
  for (int y = rows; y >= 1; --y) {
    std::ptrdiff_t p = y * w + cols;
    for (int x = cols - 1; x >= 0; --x, --p) {
      const T v = std::max(std::max(std::max(Jp[p], Jp[p + 1]), std::max(Jp[p + w + 1], Jp[p + w])), Jp[p + w - 1]);
      const T jp = std::min(v, Ip[p]);
      Jp[p] = jp;
      for (const std::ptrdiff_t q : {p + 1, p + w - 1, p + w, p + w + 1})
        if (Jp[q] < jp && Jp[q] < Ip[q]) {
          queue.push_back(static_cast<std::uint32_t>(p));
          break;
        }
    }
  }
  const std::ptrdiff_t nb[8] = {-w - 1, -w, -w + 1, -1, 1, w - 1, w, w + 1};
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::ptrdiff_t p = queue[head];
    const T jp = Jp[p];
    for (const std::ptrdiff_t d : nb) {
      const std::ptrdiff_t q = p + d;
      if (Jp[q] < jp && Ip[q] != Jp[q]) {
        Jp[q] = std::min(jp, Ip[q]);
        queue.push_back(static_cast<std::uint32_t>(q));
      }
    }
    // The FIFO only grows; drop the consumed front once it dominates.
    if (head >= 1u << 20 && head * 2 >= queue.size()) {
      queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(head) + 1);
      head = static_cast<std::size_t>(-1);
    }
  }
  cv::Mat out(rows, cols, marker.type());
  for (int y = 0; y < rows; ++y) std::copy_n(J.data() + (y + 1) * w + 1, cols, out.ptr<T>(y));
  return out;
}

}  // namespace

cv::Mat reconstruct(const cv::Mat& marker, const cv::Mat& mask) {
  if (marker.size() != mask.size() || marker.type() != mask.type())
    throw std::invalid_argument("reconstruct: marker and mask must have the same size and type");
  if (static_cast<double>(marker.rows + 2) * (marker.cols + 2) >= 4294967295.0)
    throw std::invalid_argument("reconstruct: image too large");
  if (marker.type() == CV_8U) return reconstruct_impl<std::uint8_t>(marker, mask);
  if (marker.type() == CV_32F) return reconstruct_impl<float>(marker, mask);
  throw std::invalid_argument("reconstruct: expects CV_8U or CV_32F");
}

}  // namespace flowd::nuclei::frozen

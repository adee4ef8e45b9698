// Grey reconstruction by dilation, Vincent's hybrid algorithm (1993): one
// raster and one anti-raster scan settle most pixels, then a FIFO of the
// pixels that can still raise a neighbour finishes the propagation.
//
// Each scan row is split in two: the neighbours on the previous row are
// final, so max(J, three of them) then min(mask) is one vectorised pass; only
// the neighbour on the same row (the value just written) forms a chain,
//   J[x] = max(a[x], min(J[x-1], I[x]))   with a = min(max(J, row above), I),
// which equals the textbook min(max(J, all four), I) since min distributes
// over max. Floats run as order-preserving 32-bit integer keys (as the GPU
// twin does), so the chain is integer compares and moves rather than
// float min/max with their longer latency. The reconstruction is unique, so
// none of this can change the result (for floats: on inputs without NaN and
// without both -0 and +0, which the keys order while float compares do not;
// the pipeline produces neither).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "internal.hpp"
#include "segment.hpp"

namespace flowd::nuclei {

namespace {

// The serial part of a scan row: j[x] = max(j[x], min(j[x -+ 1], i[x])).
// Where a whole block already sits at its mask (j == i: background, and
// whatever the vectorised pass saturated), the chain cannot change it and
// restarts from i at the block's end, so such blocks are skipped.
template <class K>
constexpr int block = 32 / sizeof(K);

template <class K>
bool saturated(const K* __restrict j, const K* __restrict i) {
  unsigned diff = 0;
  for (int k = 0; k < block<K>; ++k)
    diff |= static_cast<unsigned>(j[k] != i[k]);
  return diff == 0;
}

template <class K>
void chain_forward(K* __restrict j, const K* __restrict i, int cols, K prev) {
  int x = 0;
  while (x < cols) {
    if (x + block<K> <= cols && saturated(j + x, i + x)) {
      x += block<K>;
      prev = i[x - 1];
      continue;
    }
    for (const int e = std::min(cols, x + block<K>); x < e; ++x)
      j[x] = prev = std::max(j[x], std::min(prev, i[x]));
  }
}

template <class K>
void chain_backward(K* __restrict j, const K* __restrict i, int cols, K prev) {
  int x = cols;
  while (x > 0) {
    if (x - block<K> >= 0 && saturated(j + x - block<K>, i + x - block<K>)) {
      x -= block<K>;
      prev = i[x];
      continue;
    }
    for (const int e = std::max(0, x - block<K>); x > e; --x)
      j[x - 1] = prev = std::max(j[x - 1], std::min(prev, i[x - 1]));
  }
}

// The hybrid algorithm on framed images of u8 values or float keys.
template <class K>
void reconstruct_keys(std::vector<K>& Jv, const std::vector<K>& Iv, int rows, int cols) {
  const std::ptrdiff_t w = padded::stride(cols);
  const K lowest = std::numeric_limits<K>::min();
  K* const Jp = Jv.data();
  const K* const Ip = Iv.data();
  const auto raster = [&] {
    for (int y = 1; y <= rows; ++y) {
      K* __restrict j = Jp + y * w + 1;
      const K* __restrict up = Jp + (y - 1) * w + 1;
      const K* __restrict i = Ip + y * w + 1;
      for (int x = 0; x < cols; ++x)
        j[x] = std::min(std::max(std::max(j[x], up[x - 1]), std::max(up[x], up[x + 1])), i[x]);
      chain_forward(j, i, cols, lowest);
    }
  };
  std::vector<std::uint32_t> queue;
  std::vector<std::uint8_t> flag(static_cast<std::size_t>(cols));
  const auto anti_raster = [&] {
    for (int y = rows; y >= 1; --y) {
      K* __restrict j = Jp + y * w + 1;
      const K* __restrict dn = Jp + (y + 1) * w + 1;
      const K* __restrict i = Ip + y * w + 1;
      const K* __restrict idn = Ip + (y + 1) * w + 1;
      for (int x = 0; x < cols; ++x)
        j[x] = std::min(std::max(std::max(j[x], dn[x - 1]), std::max(dn[x], dn[x + 1])), i[x]);
      chain_backward(j, i, cols, lowest);
      // Pixels that can raise a neighbour the anti-raster scan already passed
      // (right, and the row below) go to the FIFO; the others were raised by
      // this scan itself. Branch-free per pixel, then a sparse gather.
      std::uint8_t* __restrict f = flag.data();
      for (int x = 0; x < cols; ++x) {
        const K v = j[x];
        const bool r = (j[x + 1] < v) & (j[x + 1] < i[x + 1]);
        const bool a = (dn[x - 1] < v) & (dn[x - 1] < idn[x - 1]);
        const bool b = (dn[x] < v) & (dn[x] < idn[x]);
        const bool c = (dn[x + 1] < v) & (dn[x + 1] < idn[x + 1]);
        f[x] = static_cast<std::uint8_t>(r | a | b | c);
      }
      for (int x = 0; x < cols; ++x)
        if (f[x]) queue.push_back(static_cast<std::uint32_t>(y * w + 1 + x));
    }
  };
  raster();
  anti_raster();
  // The FIFO: p raises each neighbour below it that is not yet at its mask.
  // The neighbours are unrolled so the loop keeps everything in registers.
  K* __restrict jf = Jp;
  const K* __restrict ifr = Ip;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::ptrdiff_t p = queue[head];
    const K jp = jf[p];
    const auto raise = [&](std::ptrdiff_t q) {
      const K jq = jf[q], iq = ifr[q];
      if (jq < jp && jq != iq) {
        jf[q] = std::min(jp, iq);
        queue.push_back(static_cast<std::uint32_t>(q));
      }
    };
    raise(p - w - 1);
    raise(p - w);
    raise(p - w + 1);
    raise(p - 1);
    raise(p + 1);
    raise(p + w - 1);
    raise(p + w);
    raise(p + w + 1);
    // The FIFO only grows; drop the consumed front once it dominates.
    if (head >= 1u << 20 && head * 2 >= queue.size()) {
      queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(head) + 1);
      head = static_cast<std::size_t>(-1);
    }
  }
}

template <class P, class K, class Key>
cv::Mat reconstruct_impl(const cv::Mat& marker, const cv::Mat& mask, K lowest, Key key, P (*value)(K)) {
  const int rows = marker.rows, cols = marker.cols;
  // A one-pixel frame at the lowest key (equal in J and I) never rises,
  // so the scans need no border tests.
  const std::ptrdiff_t w = padded::stride(cols);
  const std::size_t n = padded::size(rows, cols);
  std::vector<K> J(n, lowest), I(n, lowest);
  for (int y = 0; y < rows; ++y) {
    const P* __restrict m = marker.ptr<P>(y);
    const P* __restrict k = mask.ptr<P>(y);
    K* __restrict j = J.data() + (y + 1) * w + 1;
    K* __restrict i = I.data() + (y + 1) * w + 1;
    for (int x = 0; x < cols; ++x) {
      const K mk = key(k[x]), mm = key(m[x]);
      i[x] = mk;
      j[x] = std::min(mm, mk);
    }
  }
  reconstruct_keys(J, I, rows, cols);
  cv::Mat out(rows, cols, marker.type());
  for (int y = 0; y < rows; ++y) {
    const K* __restrict j = J.data() + (y + 1) * w + 1;
    P* __restrict o = out.ptr<P>(y);
    for (int x = 0; x < cols; ++x)
      o[x] = value(j[x]);
  }
  return out;
}

std::uint8_t same(std::uint8_t v) { return v; }

}  // namespace

cv::Mat reconstruct(const cv::Mat& marker, const cv::Mat& mask) {
  if (marker.size() != mask.size() || marker.type() != mask.type())
    throw std::invalid_argument("reconstruct: marker and mask must have the same size and type");
  if (static_cast<double>(marker.rows + 2) * (marker.cols + 2) >= 4294967295.0)
    throw std::invalid_argument("reconstruct: image too large");
  if (marker.type() == CV_8U) return reconstruct_impl<std::uint8_t, std::uint8_t>(marker, mask, 0, same, same);
  if (marker.type() == CV_32F)
    return reconstruct_impl<float, std::int32_t>(marker, mask, padded::frame, padded::key, padded::value);
  throw std::invalid_argument("reconstruct: expects CV_8U or CV_32F");
}

namespace padded {
void reconstruct(std::vector<std::uint8_t>& J, const std::vector<std::uint8_t>& I, int rows, int cols) {
  reconstruct_keys(J, I, rows, cols);
}
void reconstruct(std::vector<std::int32_t>& J, const std::vector<std::int32_t>& I, int rows, int cols) {
  reconstruct_keys(J, I, rows, cols);
}
}  // namespace padded

}  // namespace flowd::nuclei

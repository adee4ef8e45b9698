// Marker watershed by steepest ascent on the maxima-imposed distance map
// (segment.hpp gives the definition). Every pixel gets one pointer, fixed by
// values, the lower-complete distance on plateaus and a fixed neighbour
// order, so the result does not depend on any processing order; labels are
// then read off by pointer chasing with path compression.
//
// Everything lives in framed buffers (internal.hpp): r as float keys (the
// reconstruction's own buffer), one byte of state per pixel, and one int32
// buffer that holds the mask during the reconstruction, the plateau distance
// after it and the labels at the end. The plateau distance is only computed
// on actual plateaus, which are rare on a distance map.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "internal.hpp"
#include "segment.hpp"

namespace flowd::nuclei {

namespace {
// State of a framed pixel: 0..7 points to that neighbour (N, NE, E, SE, S,
// SW, W, NW), or one of these.
constexpr std::uint8_t plateau = 8;  // in mask, not a marker, no higher neighbour
constexpr std::uint8_t marker = 9;
constexpr std::uint8_t outside = 10;  // outside mask (and the frame)
}  // namespace

cv::Mat watershed(const cv::Mat& dist, const cv::Mat& markers, const cv::Mat& mask) {
  if (dist.type() != CV_32F || markers.type() != CV_32S || mask.type() != CV_8U)
    throw std::invalid_argument("watershed: expects CV_32F dist, CV_32S markers, CV_8U mask");
  if (dist.size() != markers.size() || dist.size() != mask.size())
    throw std::invalid_argument("watershed: dist, markers and mask must have the same size");
  const int rows = dist.rows, cols = dist.cols;
  cv::Mat out(dist.size(), CV_32S);
  if (dist.empty()) return out;
  if (static_cast<double>(rows + 2) * (cols + 2) >= 4294967295.0)
    throw std::invalid_argument("watershed: image too large");
  const std::ptrdiff_t w = padded::stride(cols);
  const std::size_t n = padded::size(rows, cols);
  // r = reconstruct(g, dist), g = dist on markers, 0 elsewhere.
  std::vector<std::int32_t> R(n, padded::frame), A(n, padded::frame);
  std::vector<std::uint8_t> state(n, outside);
  const std::int32_t zero = padded::key(0.0f);
  for (int y = 0; y < rows; ++y) {
    const float* __restrict d = dist.ptr<float>(y);
    const std::int32_t* __restrict m = markers.ptr<std::int32_t>(y);
    const std::uint8_t* __restrict k = mask.ptr<std::uint8_t>(y);
    std::int32_t* __restrict r = R.data() + (y + 1) * w + 1;
    std::int32_t* __restrict a = A.data() + (y + 1) * w + 1;
    std::uint8_t* __restrict s = state.data() + (y + 1) * w + 1;
    for (int x = 0; x < cols; ++x) {
      const std::int32_t dk = padded::key(d[x]);
      a[x] = dk;
      r[x] = m[x] > 0 ? dk : std::min(zero, dk);
      s[x] = k[x] ? (m[x] > 0 ? marker : plateau) : outside;
    }
  }
  padded::reconstruct(R, A, rows, cols);

  // N, NE, E, SE, S, SW, W, NW
  const std::ptrdiff_t nb[8] = {-w, -w + 1, 1, w + 1, w, w - 1, -1, -w - 1};
  const std::int32_t* __restrict Rp = R.data();
  std::uint8_t* __restrict S = state.data();
  // Steepest ascent: the first neighbour (in nb's order) of the largest r,
  // if that is above r(p). The frame is below everything.
  std::vector<std::uint32_t> flat;  // mask pixels with no higher neighbour
  for (int y = 1; y <= rows; ++y)
    for (std::ptrdiff_t p = y * w + 1, e = y * w + cols + 1; p < e; ++p) {
      if (S[p] != plateau) continue;
      const std::int32_t v0 = Rp[p + nb[0]], v1 = Rp[p + nb[1]], v2 = Rp[p + nb[2]], v3 = Rp[p + nb[3]];
      const std::int32_t v4 = Rp[p + nb[4]], v5 = Rp[p + nb[5]], v6 = Rp[p + nb[6]], v7 = Rp[p + nb[7]];
      const std::int32_t top =
          std::max(std::max(std::max(v0, v1), std::max(v2, v3)), std::max(std::max(v4, v5), std::max(v6, v7)));
      if (top <= Rp[p]) {
        flat.push_back(static_cast<std::uint32_t>(p));
        continue;
      }
      S[p] = v0 == top   ? 0
             : v1 == top ? 1
             : v2 == top ? 2
             : v3 == top ? 3
             : v4 == top ? 4
             : v5 == top ? 5
             : v6 == top ? 6
                         : 7;
    }
  // Plateaus: breadth-first lower-complete distance lc from the zone pixels
  // (mask, not marker) of equal r that have a higher neighbour (lc 0).
  // lc lives in A (the mask keys are no longer needed); only plateau pixels'
  // entries are set and read.
  constexpr std::int32_t far = std::numeric_limits<std::int32_t>::max();
  std::int32_t* __restrict lc = A.data();
  for (const std::uint32_t p : flat)
    lc[p] = far;
  std::vector<std::uint32_t> queue;
  for (const std::uint32_t p : flat)
    for (const std::ptrdiff_t d : nb) {
      const std::ptrdiff_t q = p + d;
      if (S[q] < plateau && Rp[q] == Rp[p]) {
        lc[p] = 1;
        queue.push_back(p);
        break;
      }
    }
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::ptrdiff_t p = queue[head];
    for (const std::ptrdiff_t d : nb) {
      const std::ptrdiff_t q = p + d;
      if (S[q] == plateau && lc[q] == far && Rp[q] == Rp[p]) {
        lc[q] = lc[p] + 1;
        queue.push_back(static_cast<std::uint32_t>(q));
      }
    }
  }
  // A plateau pixel points to the first equal-r zone neighbour one step
  // closer; the pointers are set only after every lc is known.
  std::vector<std::uint8_t> plateau_dir(queue.size());
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const std::ptrdiff_t p = queue[i];
    const std::int32_t want = lc[p] - 1;
    for (int d = 0; d < 8; ++d) {
      const std::ptrdiff_t q = p + nb[d];
      if (Rp[q] != Rp[p]) continue;
      if ((want == 0 && S[q] < plateau) || (want > 0 && S[q] == plateau && lc[q] == want)) {
        plateau_dir[i] = static_cast<std::uint8_t>(d);
        break;
      }
    }
  }
  for (std::size_t i = 0; i < queue.size(); ++i)
    S[queue[i]] = plateau_dir[i];
  // Labels, in A: markers' labels, 0 outside the mask and for pixels whose
  // path ends nowhere (plateau pixels no lc reached), -1 until resolved.
  constexpr std::int32_t unresolved = -1;
  std::int32_t* __restrict lab = A.data();
  std::fill(A.begin(), A.begin() + w, 0);
  std::fill(A.end() - w, A.end(), 0);
  for (int y = 0; y < rows; ++y) {
    const std::int32_t* __restrict m = markers.ptr<std::int32_t>(y);
    std::int32_t* __restrict l = lab + (y + 1) * w + 1;
    const std::uint8_t* __restrict s = S + (y + 1) * w + 1;
    l[-1] = l[cols] = 0;
    for (int x = 0; x < cols; ++x)
      l[x] = s[x] == marker ? m[x] : s[x] < plateau ? unresolved : 0;
  }
  // Pointer chasing; every pixel on a followed path receives the end's label.
  std::vector<std::uint32_t> path;
  for (int y = 1; y <= rows; ++y)
    for (std::ptrdiff_t p0 = y * w + 1, e = y * w + cols + 1; p0 < e; ++p0) {
      if (lab[p0] != unresolved) continue;
      std::ptrdiff_t p = p0;
      while (lab[p] == unresolved) {
        path.push_back(static_cast<std::uint32_t>(p));
        p += nb[S[p]];
      }
      const std::int32_t result = lab[p];
      for (const std::uint32_t q : path)
        lab[q] = result;
      path.clear();
    }
  for (int y = 0; y < rows; ++y) {
    const std::int32_t* s = lab + (y + 1) * w + 1;
    std::copy_n(s, cols, out.ptr<std::int32_t>(y));
  }
  return out;
}

}  // namespace flowd::nuclei

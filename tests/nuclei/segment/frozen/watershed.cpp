// Frozen oracle (see frozen.hpp): plugins/nuclei/segment/watershed.cpp as of commit 9ae5313.
// Marker watershed by steepest ascent on the maxima-imposed distance map
// (segment.hpp gives the definition). Every pixel gets one pointer, fixed by
// values, the lower-complete distance on plateaus and a fixed neighbour
// order, so the result does not depend on any processing order; labels are
// then read off by pointer chasing with path compression.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "frozen.hpp"

namespace flowd::nuclei::frozen {

cv::Mat watershed(const cv::Mat& dist, const cv::Mat& markers, const cv::Mat& mask) {
  if (dist.type() != CV_32F || markers.type() != CV_32S || mask.type() != CV_8U)
    throw std::invalid_argument("watershed: expects CV_32F dist, CV_32S markers, CV_8U mask");
  if (dist.size() != markers.size() || dist.size() != mask.size())
    throw std::invalid_argument("watershed: dist, markers and mask must have the same size");
  const int rows = dist.rows, cols = dist.cols;
  cv::Mat out(dist.size(), CV_32S);
  if (dist.empty()) return out;
  cv::Mat g(dist.size(), CV_32F);
  for (int y = 0; y < rows; ++y) {
    const float* d = dist.ptr<float>(y);
    const std::int32_t* m = markers.ptr<std::int32_t>(y);
    float* o = g.ptr<float>(y);
    for (int x = 0; x < cols; ++x) o[x] = m[x] > 0 ? d[x] : 0.0f;
  }
  const cv::Mat r = reconstruct(g, dist);

  const std::ptrdiff_t w = cols + 2;
  const std::size_t n = static_cast<std::size_t>(rows + 2) * static_cast<std::size_t>(w);
  constexpr std::int32_t unresolved = -1;
  constexpr std::int32_t far = std::numeric_limits<std::int32_t>::max();
  // The frame is outside the mask and never higher than anything.
  std::vector<float> R(n, -std::numeric_limits<float>::infinity());
  std::vector<std::uint8_t> kind(n, 0);  // 0 outside mask, 1 mask, 2 marker in mask
  std::vector<std::int32_t> lab(n, 0);
  for (int y = 0; y < rows; ++y) {
    const float* rr = r.ptr<float>(y);
    const std::int32_t* m = markers.ptr<std::int32_t>(y);
    const std::uint8_t* k = mask.ptr<std::uint8_t>(y);
    for (int x = 0; x < cols; ++x) {
      const std::size_t p = static_cast<std::size_t>((y + 1) * w + x + 1);
      R[p] = rr[x];
      kind[p] = k[x] ? (m[x] > 0 ? 2 : 1) : 0;
      lab[p] = k[x] ? (m[x] > 0 ? m[x] : unresolved) : 0;
    }
  }
  // N, NE, E, SE, S, SW, W, NW
  const std::ptrdiff_t nb[8] = {-w, -w + 1, 1, w + 1, w, w - 1, -1, -w - 1};
  std::vector<std::uint8_t> dir(n, 8);  // 8: no pointer
  std::vector<std::int32_t> lc(n, far);
  for (int y = 1; y <= rows; ++y)
    for (std::ptrdiff_t p = y * w + 1, e = y * w + cols + 1; p < e; ++p) {
      const auto pu = static_cast<std::size_t>(p);
      if (kind[pu] != 1) continue;
      float best = R[pu];
      int bd = 8;
      for (int d = 0; d < 8; ++d)
        if (R[static_cast<std::size_t>(p + nb[d])] > best) {
          best = R[static_cast<std::size_t>(p + nb[d])];
          bd = d;
        }
      if (bd < 8) {
        dir[pu] = static_cast<std::uint8_t>(bd);
        lc[pu] = 0;
      }
    }
  // Plateau pixels next to a zone pixel that has a higher neighbour start the
  // breadth-first lower-complete distance.
  std::vector<std::uint32_t> queue;
  for (int y = 1; y <= rows; ++y)
    for (std::ptrdiff_t p = y * w + 1, e = y * w + cols + 1; p < e; ++p) {
      const auto pu = static_cast<std::size_t>(p);
      if (kind[pu] != 1 || lc[pu] == 0) continue;
      for (const std::ptrdiff_t d : nb) {
        const auto q = static_cast<std::size_t>(p + d);
        if (kind[q] == 1 && lc[q] == 0 && R[q] == R[pu]) {
          lc[pu] = 1;
          queue.push_back(static_cast<std::uint32_t>(p));
          break;
        }
      }
    }
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::ptrdiff_t p = queue[head];
    const auto pu = static_cast<std::size_t>(p);
    for (const std::ptrdiff_t d : nb) {
      const auto q = static_cast<std::size_t>(p + d);
      if (kind[q] == 1 && lc[q] == far && R[q] == R[pu]) {
        lc[q] = lc[pu] + 1;
        queue.push_back(static_cast<std::uint32_t>(q));
      }
    }
  }
  for (const std::uint32_t p : queue) {
    for (int d = 0; d < 8; ++d) {
      const auto q = static_cast<std::size_t>(p + nb[d]);
      if (kind[q] == 1 && R[q] == R[p] && lc[q] == lc[p] - 1) {
        dir[p] = static_cast<std::uint8_t>(d);
        break;
      }
    }
  }
  // Pointer chasing; every pixel on a followed path receives the end's label.
  std::vector<std::uint32_t> path;
  for (int y = 1; y <= rows; ++y)
    for (std::ptrdiff_t p0 = y * w + 1, e = y * w + cols + 1; p0 < e; ++p0) {
      if (lab[static_cast<std::size_t>(p0)] != unresolved) continue;
      std::ptrdiff_t p = p0;
      std::int32_t result = 0;
      while (true) {
        const auto pu = static_cast<std::size_t>(p);
        if (lab[pu] != unresolved) {
          result = lab[pu];
          break;
        }
        if (dir[pu] == 8) {
          result = 0;
          break;
        }
        path.push_back(static_cast<std::uint32_t>(p));
        p += nb[dir[pu]];
      }
      for (const std::uint32_t q : path) lab[q] = result;
      if (lab[static_cast<std::size_t>(p)] == unresolved) lab[static_cast<std::size_t>(p)] = result;
      path.clear();
    }
  for (int y = 0; y < rows; ++y) {
    const std::int32_t* s = lab.data() + (y + 1) * w + 1;
    std::copy_n(s, cols, out.ptr<std::int32_t>(y));
  }
  return out;
}

}  // namespace flowd::nuclei::frozen

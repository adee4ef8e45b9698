// Watershed markers: regional maxima of the h-maxima transform of the
// distance map, within dist > 0.
//
// r is computed in the reconstruction's framed key buffer (internal.hpp); the
// mask's buffer then becomes r restricted to the domain (the frame value
// elsewhere), so "no higher domain neighbour" is one vectorisable max over
// eight neighbours. The candidates are few (plateau tops), so everything
// after that works on their list.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "internal.hpp"
#include "segment.hpp"

namespace flowd::nuclei {

cv::Mat watershed_markers(const cv::Mat& dist, float h) {
  if (dist.type() != CV_32F) throw std::invalid_argument("watershed_markers: expects a CV_32F distance map");
  const int rows = dist.rows, cols = dist.cols;
  cv::Mat out(dist.size(), CV_32S, cv::Scalar(0));
  if (dist.empty()) return out;
  if (static_cast<double>(rows + 2) * (cols + 2) >= 4294967295.0)
    throw std::invalid_argument("watershed_markers: image too large");
  const std::ptrdiff_t w = padded::stride(cols);
  const std::size_t n = padded::size(rows, cols);
  std::vector<std::int32_t> R(n, padded::frame), D(n, padded::frame);
  for (int y = 0; y < rows; ++y) {
    const float* __restrict d = dist.ptr<float>(y);
    std::int32_t* __restrict r = R.data() + (y + 1) * w + 1;
    std::int32_t* __restrict k = D.data() + (y + 1) * w + 1;
    for (int x = 0; x < cols; ++x) {
      const std::int32_t dk = padded::key(d[x]);
      k[x] = dk;
      r[x] = std::min(padded::key(d[x] - h), dk);
    }
  }
  padded::reconstruct(R, D, rows, cols);
  // D := r on the domain (dist > 0, i.e. key > key(+0) = 0), the frame value
  // elsewhere: outside pixels can then never be a higher neighbour.
  const std::int32_t* __restrict Rp = R.data();
  std::int32_t* __restrict Dp = D.data();
  for (std::size_t p = 0; p < n; ++p)
    Dp[p] = Dp[p] > 0 ? Rp[p] : padded::frame;
  // Candidates: domain pixels with no higher domain neighbour. Two adjacent
  // candidates are equal, so the maxima plateaus are the connected
  // components of the candidates that touch no equal domain non-candidate.
  std::vector<std::uint8_t> cand(n, 0);
  std::vector<std::uint32_t> list;
  for (int y = 1; y <= rows; ++y) {
    const std::int32_t* __restrict up = Dp + (y - 1) * w + 1;
    const std::int32_t* __restrict c = Dp + y * w + 1;
    const std::int32_t* __restrict dn = Dp + (y + 1) * w + 1;
    std::uint8_t* __restrict s = cand.data() + y * w + 1;
    for (int x = 0; x < cols; ++x) {
      const std::int32_t top = std::max(std::max(std::max(up[x - 1], up[x]), std::max(up[x + 1], c[x - 1])),
                                        std::max(std::max(c[x + 1], dn[x - 1]), std::max(dn[x], dn[x + 1])));
      s[x] = static_cast<std::uint8_t>((c[x] != padded::frame) & (top <= c[x]));
    }
    for (int x = 0; x < cols; ++x)
      if (s[x]) list.push_back(static_cast<std::uint32_t>(y * w + 1 + x));
  }
  const std::ptrdiff_t nb[8] = {-w - 1, -w, -w + 1, -1, 1, w - 1, w, w + 1};
  std::vector<std::uint32_t> stack;
  for (const std::uint32_t p : list)
    for (const std::ptrdiff_t d : nb) {
      const std::ptrdiff_t q = p + d;
      if (!cand[q] && Dp[q] == Dp[p]) {  // equal, so in the domain
        stack.push_back(p);
        break;
      }
    }
  while (!stack.empty()) {
    const std::ptrdiff_t p = stack.back();
    stack.pop_back();
    if (cand[p] != 1) continue;
    cand[p] = 2;  // dropped
    for (const std::ptrdiff_t d : nb)
      if (cand[p + d] == 1) stack.push_back(static_cast<std::uint32_t>(p + d));
  }
  // Label the remaining candidates 1..n in raster order of first pixel.
  std::int32_t next = 0;
  for (const std::uint32_t p0 : list) {
    if (cand[p0] != 1) continue;
    ++next;
    cand[p0] = 3;  // labelled
    stack.push_back(p0);
    while (!stack.empty()) {
      const std::ptrdiff_t p = stack.back();
      stack.pop_back();
      const int y = static_cast<int>(p / w) - 1, x = static_cast<int>(p % w) - 1;
      out.ptr<std::int32_t>(y)[x] = next;
      for (const std::ptrdiff_t d : nb)
        if (cand[p + d] == 1) {
          cand[p + d] = 3;
          stack.push_back(static_cast<std::uint32_t>(p + d));
        }
    }
  }
  return out;
}

}  // namespace flowd::nuclei

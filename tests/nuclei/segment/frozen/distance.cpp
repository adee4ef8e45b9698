// Frozen oracle (see frozen.hpp): plugins/nuclei/segment/distance.cpp as of commit 9ae5313.
// Exact Euclidean distance transform in integers: Meijster et al. (2000)
// column pass then Felzenszwalb & Huttenlocher's (2004) lower envelope of
// parabolas per row, so d2 is exact and only the final sqrtf rounds.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "frozen.hpp"

namespace flowd::nuclei::frozen {

cv::Mat distance_transform(const cv::Mat& mask) {
  if (mask.type() != CV_8U) throw std::invalid_argument("distance_transform: expects a CV_8U mask");
  const int rows = mask.rows, cols = mask.cols;
  cv::Mat out(mask.size(), CV_32F);
  if (mask.empty()) return out;
  // Column pass, done row by row (both directions) so it streams through
  // memory: g = vertical distance to the nearest 0 in the column.
  constexpr std::int32_t none = std::numeric_limits<std::int32_t>::max() / 2;
  std::vector<std::int32_t> g(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  bool any_zero = false;
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* m = mask.ptr<std::uint8_t>(y);
    std::int32_t* gy = g.data() + static_cast<std::size_t>(y) * cols;
    const std::int32_t* up = y > 0 ? gy - cols : nullptr;
    for (int x = 0; x < cols; ++x) {
      if (m[x] == 0) {
        gy[x] = 0;
        any_zero = true;
      } else {
        gy[x] = up ? std::min(up[x] + 1, none) : none;
      }
    }
  }
  if (!any_zero) {
    out.setTo(std::numeric_limits<float>::infinity());
    return out;
  }
  for (int y = rows - 2; y >= 0; --y) {
    std::int32_t* gy = g.data() + static_cast<std::size_t>(y) * cols;
    const std::int32_t* down = gy + cols;
    for (int x = 0; x < cols; ++x) gy[x] = std::min(gy[x], down[x] + 1);
  }
  // Row pass: d2(x) = min_i (x - i)^2 + g(i)^2 over columns i with a finite g
  // (every row has one once the image has a 0 pixel).
  // Parabola apexes v and the boundaries between them as exact fractions
  // zn / zd (zd > 0), so no comparison depends on rounding.
  std::vector<int> v(static_cast<std::size_t>(cols));
  std::vector<std::int64_t> f(static_cast<std::size_t>(cols)), zn(static_cast<std::size_t>(cols) + 1),
      zd(static_cast<std::size_t>(cols) + 1);
  for (int y = 0; y < rows; ++y) {
    const std::int32_t* gy = g.data() + static_cast<std::size_t>(y) * cols;
    const std::uint8_t* m = mask.ptr<std::uint8_t>(y);
    float* o = out.ptr<float>(y);
    bool fg = false;
    for (int x = 0; x < cols && !fg; ++x) fg = m[x] != 0;
    if (!fg) {
      for (int x = 0; x < cols; ++x) o[x] = 0.0f;
      continue;
    }
    // Boundary between parabolas j < i: ((f_i + i^2) - (f_j + j^2)) / (2 (i - j)).
    int k = -1;
    for (int i = 0; i < cols; ++i) {
      if (gy[i] >= none) continue;
      const std::int64_t fi = static_cast<std::int64_t>(gy[i]) * gy[i];
      const std::int64_t hi = fi + static_cast<std::int64_t>(i) * i;
      f[static_cast<std::size_t>(i)] = fi;
      std::int64_t num = 0, den = 1;
      while (k >= 0) {
        const int j = v[static_cast<std::size_t>(k)];
        num = hi - (f[static_cast<std::size_t>(j)] + static_cast<std::int64_t>(j) * j);
        den = 2 * static_cast<std::int64_t>(i - j);
        const auto kk = static_cast<std::size_t>(k);
        if (k > 0 && num * zd[kk] <= zn[kk] * den) {
          --k;
        } else {
          break;
        }
      }
      ++k;
      v[static_cast<std::size_t>(k)] = i;
      zn[static_cast<std::size_t>(k)] = num;  // unused for k == 0 (minus infinity)
      zd[static_cast<std::size_t>(k)] = den;
    }
    // Boundary k+1 of the last parabola is plus infinity.
    int q = 0;
    for (int x = 0; x < cols; ++x) {
      while (q < k && zn[static_cast<std::size_t>(q) + 1] < static_cast<std::int64_t>(x) * zd[static_cast<std::size_t>(q) + 1]) ++q;
      if (m[x] == 0) {
        o[x] = 0.0f;
        continue;
      }
      const int i = v[static_cast<std::size_t>(q)];
      const std::int64_t dx = x - i;
      o[x] = std::sqrt(static_cast<float>(dx * dx + f[static_cast<std::size_t>(i)]));
    }
  }
  return out;
}

}  // namespace flowd::nuclei::frozen

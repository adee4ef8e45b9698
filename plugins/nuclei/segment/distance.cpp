// Exact Euclidean distance transform in integers: Meijster et al. (2000)
// column pass then Felzenszwalb & Huttenlocher's (2004) lower envelope of
// parabolas per row, so d2 is exact and only the final sqrtf rounds.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "segment.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace flowd::nuclei {

namespace {
// o[x] = sqrtf(o[x]): IEEE square roots are correctly rounded, so the packed
// instruction gives exactly what std::sqrt gives, four at a time.
void sqrt_row(float* o, int cols) {
  int x = 0;
#if defined(__SSE2__)
  for (; x + 4 <= cols; x += 4)
    _mm_storeu_ps(o + x, _mm_sqrt_ps(_mm_loadu_ps(o + x)));
#endif
  for (; x < cols; ++x)
    o[x] = std::sqrt(o[x]);
}
}  // namespace

cv::Mat distance_transform(const cv::Mat& mask) {
  if (mask.type() != CV_8U) throw std::invalid_argument("distance_transform: expects a CV_8U mask");
  const int rows = mask.rows, cols = mask.cols;
  cv::Mat out(mask.size(), CV_32F);
  if (mask.empty()) return out;
  // Column pass, done row by row (both directions) so it streams through
  // memory: g = vertical distance to the nearest 0 in the column.
  constexpr std::int32_t none = std::numeric_limits<std::int32_t>::max() / 2;
  // g lives in the output's own memory (int32 and float have one size),
  // each row copied out before its distances overwrite it: a second image
  // sized buffer would cost as much in fresh pages as the pass itself.
  static_assert(sizeof(std::int32_t) == sizeof(float));
  const auto grow = [&](int y) { return out.ptr<std::int32_t>(y); };
  unsigned zeros = 0;
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* __restrict m = mask.ptr<std::uint8_t>(y);
    std::int32_t* __restrict gy = grow(y);
    const std::int32_t* __restrict up = y > 0 ? grow(y - 1) : nullptr;
    if (y == 0) {
      for (int x = 0; x < cols; ++x)
        gy[x] = m[x] ? none : 0;
    } else {
      for (int x = 0; x < cols; ++x)
        gy[x] = m[x] ? std::min(up[x] + 1, none) : 0;
    }
    for (int x = 0; x < cols; ++x)
      zeros |= static_cast<unsigned>(m[x] == 0);
  }
  const bool any_zero = zeros != 0;
  if (!any_zero) {
    out.setTo(std::numeric_limits<float>::infinity());
    return out;
  }
  for (int y = rows - 2; y >= 0; --y) {
    std::int32_t* __restrict gy = grow(y);
    const std::int32_t* __restrict down = grow(y + 1);
    for (int x = 0; x < cols; ++x)
      gy[x] = std::min(gy[x], down[x] + 1);
  }
  // Row pass: d2(x) = min_i (x - i)^2 + g(i)^2 over columns i with a finite g
  // (every row has one once the image has a 0 pixel). For x in a foreground
  // run [x0, x1), the 0 pixels at x0 - 1 and x1 (g = 0) are nearer than any
  // column beyond them, so the envelope is built over [x0 - 1, x1] only and
  // the cost follows the foreground, not the image.
  // Parabola apexes v and the boundaries between them as exact fractions
  // zn / zd (zd > 0), so no comparison depends on rounding.
  std::vector<std::int32_t> grow_copy(static_cast<std::size_t>(cols));
  std::vector<int> v(static_cast<std::size_t>(cols));
  std::vector<std::int64_t> f(static_cast<std::size_t>(cols)), zn(static_cast<std::size_t>(cols) + 1),
      zd(static_cast<std::size_t>(cols) + 1);
  for (int y = 0; y < rows; ++y) {
    std::copy_n(grow(y), cols, grow_copy.data());
    const std::int32_t* gy = grow_copy.data();
    const std::uint8_t* m = mask.ptr<std::uint8_t>(y);
    float* o = out.ptr<float>(y);
    int x1 = 0;
    while (true) {
      int x0 = x1;
      while (x0 < cols && m[x0] == 0)
        o[x0++] = 0.0f;  // sqrt(0) below
      if (x0 == cols) break;
      x1 = x0;
      while (x1 < cols && m[x1] != 0)
        ++x1;
      const int lo = std::max(0, x0 - 1), hi = std::min(cols, x1 + 1);
      // Boundary between parabolas j < i: ((f_i + i^2) - (f_j + j^2)) / (2 (i - j)).
      int k = -1;
      for (int i = lo; i < hi; ++i) {
        if (gy[i] >= none) continue;
        const std::int64_t fi = static_cast<std::int64_t>(gy[i]) * gy[i];
        const std::int64_t hi2 = fi + static_cast<std::int64_t>(i) * i;
        f[static_cast<std::size_t>(i)] = fi;
        std::int64_t num = 0, den = 1;
        while (k >= 0) {
          const int j = v[static_cast<std::size_t>(k)];
          num = hi2 - (f[static_cast<std::size_t>(j)] + static_cast<std::int64_t>(j) * j);
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
      for (int x = x0; x < x1; ++x) {
        while (q < k &&
               zn[static_cast<std::size_t>(q) + 1] < static_cast<std::int64_t>(x) * zd[static_cast<std::size_t>(q) + 1])
          ++q;
        const int i = v[static_cast<std::size_t>(q)];
        const std::int64_t dx = x - i;
        o[x] = static_cast<float>(dx * dx + f[static_cast<std::size_t>(i)]);
      }
    }
    sqrt_row(o, cols);
  }
  return out;
}

}  // namespace flowd::nuclei

#pragma once
// Internal to the CPU operations (not part of the segment.hpp contract):
// images held with a one-pixel frame so that every pixel has eight
// neighbours at fixed offsets, floats as order-preserving integer keys (as
// the GPU twins hold them), and the building blocks several operations share.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <opencv2/core.hpp>

namespace flowd::nuclei::padded {

// A float's key: keys compare as the floats do (no NaN; -0 sorts just below
// +0, a case the operations never produce next to each other).
inline std::int32_t key(float v) {
  std::int32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b ^ ((b >> 31) & 0x7fffffff);
}
inline float value(std::int32_t k) {
  const std::int32_t b = k ^ ((k >> 31) & 0x7fffffff);
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
// The frame: below the key of -inf.
constexpr std::int32_t frame = std::numeric_limits<std::int32_t>::min();

// Row stride and element count of a rows x cols image with its frame;
// pixel (y, x) is at (y + 1) * stride(cols) + x + 1.
inline std::ptrdiff_t stride(int cols) { return static_cast<std::ptrdiff_t>(cols) + 2; }
inline std::size_t size(int rows, int cols) {
  return static_cast<std::size_t>(rows + 2) * static_cast<std::size_t>(stride(cols));
}

// Grey reconstruction by dilation of J under I in place (segment.hpp's
// reconstruct), both framed, the frame at the lowest value in both.
void reconstruct(std::vector<std::uint8_t>& J, const std::vector<std::uint8_t>& I, int rows, int cols);
void reconstruct(std::vector<std::int32_t>& J, const std::vector<std::int32_t>& I, int rows, int cols);

}  // namespace flowd::nuclei::padded

namespace flowd::nuclei::runs {

// Connected components of a mask's pixels that are nonzero (foreground,
// 8-connected) or zero (background, 4-connected), as horizontal runs: one
// pass over the mask with union-find on runs, so the cost follows the number
// of runs rather than of pixels. Components are numbered 0..count-1 in raster
// order of their first pixel (the earliest run is every component's root).
struct Run {
  int y, x0, x1;      // [x0, x1) on row y
  std::int32_t comp;  // its component
};
struct Components {
  std::vector<Run> runs;             // in raster order
  std::vector<std::int64_t> area;    // pixels per component
  std::vector<std::uint8_t> border;  // 1 where the component touches the image border
  int count = 0;
};
Components label(const cv::Mat& mask, bool foreground);

// Union-find over run indices with path halving; the earlier run stays the
// root, so every root is its component's first run.
inline std::int32_t find(std::vector<std::int32_t>& parent, std::int32_t a) {
  while (parent[static_cast<std::size_t>(a)] != a) {
    parent[static_cast<std::size_t>(a)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(a)])];
    a = parent[static_cast<std::size_t>(a)];
  }
  return a;
}
inline void unite(std::vector<std::int32_t>& parent, std::int32_t a, std::int32_t b) {
  a = find(parent, a);
  b = find(parent, b);
  if (a < b) parent[static_cast<std::size_t>(b)] = a;
  if (b < a) parent[static_cast<std::size_t>(a)] = b;
}

// Writes `value_of(comp)` on each run of row y of `c` and `fill` elsewhere on
// that row, row by row (one write per pixel).
template <class T, class F>
void paint(const Components& c, cv::Mat& out, T fill, F value_of) {
  std::size_t k = 0;
  for (int y = 0; y < out.rows; ++y) {
    T* o = out.ptr<T>(y);
    int x = 0;
    for (; k < c.runs.size() && c.runs[k].y == y; ++k) {
      const Run& r = c.runs[k];
      std::fill(o + x, o + r.x0, fill);
      std::fill(o + r.x0, o + r.x1, static_cast<T>(value_of(r.comp)));
      x = r.x1;
    }
    std::fill(o + x, o + out.cols, fill);
  }
}

}  // namespace flowd::nuclei::runs

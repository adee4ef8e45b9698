#pragma once
// Internal to the CPU operations (not part of the segment.hpp contract):
// images held with a one-pixel frame so that every pixel has eight
// neighbours at fixed offsets, floats as order-preserving integer keys (as
// the GPU twins hold them), and the building blocks several operations share.
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

// 8-connected components of the pixels where row(y)[x] != 0, numbered 1..n
// in raster order of their first pixel, as runs; `row(y)` gives row y's
// first pixel (unframed). Labels are written by write_labels / keep_areas.
struct Runs {
  struct Run {
    int y, x0, x1;      // [x0, x1) on row y
    std::int32_t comp;  // component index 0..count-1 after label_runs
  };
  std::vector<Run> runs;
  std::vector<std::int64_t> area;  // per component
  int count = 0;
};
Runs label_runs(const cv::Mat& mask);

}  // namespace flowd::nuclei::padded

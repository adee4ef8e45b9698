// Frozen oracle (see frozen.hpp): plugins/nuclei/segment/fill_holes.cpp as of commit 9ae5313.
// Hole filling: background reachable from the border through 4-connected
// background stays background; the rest becomes foreground. A scanline flood
// from every border background pixel visits each outside pixel once and
// pushes one seed per run rather than per pixel.
#include <stdexcept>
#include <utility>
#include <vector>

#include "frozen.hpp"

namespace flowd::nuclei::frozen {

cv::Mat fill_holes(const cv::Mat& mask) {
  if (mask.type() != CV_8U) throw std::invalid_argument("fill_holes: expects a CV_8U mask");
  const int rows = mask.rows, cols = mask.cols;
  if (mask.empty()) return cv::Mat(mask.size(), CV_8U);
  // state: 0 = unvisited background, 1 = outside (reached), 255 = foreground
  cv::Mat state(mask.size(), CV_8U);
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* s = mask.ptr<std::uint8_t>(y);
    std::uint8_t* d = state.ptr<std::uint8_t>(y);
    for (int x = 0; x < cols; ++x) d[x] = s[x] ? 255 : 0;
  }
  std::vector<std::pair<int, int>> stack;
  auto flood = [&](int sx, int sy) {
    if (state.at<std::uint8_t>(sy, sx) != 0) return;
    stack.emplace_back(sx, sy);
    while (!stack.empty()) {
      auto [x, y] = stack.back();
      stack.pop_back();
      std::uint8_t* row = state.ptr<std::uint8_t>(y);
      if (row[x] != 0) continue;
      int l = x, r = x;
      while (l > 0 && row[l - 1] == 0) --l;
      while (r + 1 < cols && row[r + 1] == 0) ++r;
      for (int i = l; i <= r; ++i) row[i] = 1;
      for (const int ny : {y - 1, y + 1}) {
        if (ny < 0 || ny >= rows) continue;
        const std::uint8_t* nrow = state.ptr<std::uint8_t>(ny);
        for (int i = l; i <= r; ++i)
          if (nrow[i] == 0 && (i == l || nrow[i - 1] != 0)) stack.emplace_back(i, ny);
      }
    }
  };
  for (int x = 0; x < cols; ++x) {
    flood(x, 0);
    flood(x, rows - 1);
  }
  for (int y = 0; y < rows; ++y) {
    flood(0, y);
    flood(cols - 1, y);
  }
  cv::Mat out(mask.size(), CV_8U);
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* s = state.ptr<std::uint8_t>(y);
    std::uint8_t* d = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < cols; ++x) d[x] = s[x] == 1 ? 0 : 255;
  }
  return out;
}

}  // namespace flowd::nuclei::frozen

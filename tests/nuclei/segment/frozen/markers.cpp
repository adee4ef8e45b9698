// Frozen oracle (see frozen.hpp): plugins/nuclei/segment/markers.cpp as of commit 9ae5313.
// Watershed markers: regional maxima of the h-maxima transform of the
// distance map, within dist > 0.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "frozen.hpp"

namespace flowd::nuclei::frozen {

cv::Mat watershed_markers(const cv::Mat& dist, float h) {
  if (dist.type() != CV_32F) throw std::invalid_argument("watershed_markers: expects a CV_32F distance map");
  const int rows = dist.rows, cols = dist.cols;
  if (dist.empty()) return cv::Mat(dist.size(), CV_32S);
  cv::Mat lowered(dist.size(), CV_32F);
  for (int y = 0; y < rows; ++y) {
    const float* d = dist.ptr<float>(y);
    float* o = lowered.ptr<float>(y);
    for (int x = 0; x < cols; ++x) o[x] = d[x] - h;
  }
  const cv::Mat r = reconstruct(lowered, dist);
  // A pixel is a candidate when no neighbour in the domain is higher; two
  // adjacent candidates are then equal, so the maxima plateaus are the
  // connected components of the candidates that touch no equal non-candidate.
  const std::ptrdiff_t w = cols + 2;
  const std::size_t n = static_cast<std::size_t>(rows + 2) * static_cast<std::size_t>(w);
  std::vector<float> R(n, 0.0f);
  std::vector<std::uint8_t> state(n, 0);  // 0 outside domain, 1 domain, 2 candidate
  for (int y = 0; y < rows; ++y) {
    const float* d = dist.ptr<float>(y);
    const float* rr = r.ptr<float>(y);
    for (int x = 0; x < cols; ++x) {
      const std::size_t p = static_cast<std::size_t>((y + 1) * w + x + 1);
      R[p] = rr[x];
      state[p] = d[x] > 0 ? 1 : 0;
    }
  }
  const std::ptrdiff_t nb[8] = {-w - 1, -w, -w + 1, -1, 1, w - 1, w, w + 1};
  for (int y = 1; y <= rows; ++y)
    for (std::ptrdiff_t p = y * w + 1, e = y * w + cols + 1; p < e; ++p) {
      if (!state[static_cast<std::size_t>(p)]) continue;
      bool higher = false;
      for (const std::ptrdiff_t d : nb) {
        const auto q = static_cast<std::size_t>(p + d);
        if (state[q] && R[q] > R[static_cast<std::size_t>(p)]) {
          higher = true;
          break;
        }
      }
      if (!higher) state[static_cast<std::size_t>(p)] = 2;
    }
  std::vector<std::uint32_t> stack;
  for (int y = 1; y <= rows; ++y)
    for (std::ptrdiff_t p = y * w + 1, e = y * w + cols + 1; p < e; ++p) {
      if (state[static_cast<std::size_t>(p)] != 2) continue;
      for (const std::ptrdiff_t d : nb) {
        const auto q = static_cast<std::size_t>(p + d);
        if (state[q] == 1 && R[q] == R[static_cast<std::size_t>(p)]) {
          stack.push_back(static_cast<std::uint32_t>(p));
          break;
        }
      }
    }
  while (!stack.empty()) {
    const std::ptrdiff_t p = stack.back();
    stack.pop_back();
    if (state[static_cast<std::size_t>(p)] != 2) continue;
    state[static_cast<std::size_t>(p)] = 1;
    for (const std::ptrdiff_t d : nb)
      if (state[static_cast<std::size_t>(p + d)] == 2) stack.push_back(static_cast<std::uint32_t>(p + d));
  }
  cv::Mat maxima(dist.size(), CV_8U);
  for (int y = 0; y < rows; ++y) {
    std::uint8_t* o = maxima.ptr<std::uint8_t>(y);
    const std::uint8_t* s = state.data() + (y + 1) * w + 1;
    for (int x = 0; x < cols; ++x) o[x] = s[x] == 2 ? 255 : 0;
  }
  return label(maxima);
}

}  // namespace flowd::nuclei::frozen

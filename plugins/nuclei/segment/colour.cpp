// Tissue and red-blood-cell masks: per-pixel integer tests on RGB.
#include <stdexcept>

#include "segment.hpp"

namespace flowd::nuclei {

namespace {
void check_rgb(const cv::Mat& rgb, const char* who) {
  if (rgb.type() != CV_8UC3) throw std::invalid_argument(std::string(who) + ": expects CV_8UC3 RGB");
}
}  // namespace

cv::Mat tissue_mask(const cv::Mat& rgb, int level) {
  check_rgb(rgb, "tissue_mask");
  cv::Mat out(rgb.size(), CV_8U);
  const int limit = 3 * level;
  for (int y = 0; y < rgb.rows; ++y) {
    const std::uint8_t* s = rgb.ptr<std::uint8_t>(y);
    std::uint8_t* d = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x) d[x] = (s[3 * x] + s[3 * x + 1] + s[3 * x + 2] < limit) ? 255 : 0;
  }
  return out;
}

cv::Mat rbc_mask(const cv::Mat& rgb, int rg_q8, int rb_q8, int level) {
  check_rgb(rgb, "rbc_mask");
  cv::Mat out(rgb.size(), CV_8U);
  const int limit = 3 * level;
  for (int y = 0; y < rgb.rows; ++y) {
    const std::uint8_t* s = rgb.ptr<std::uint8_t>(y);
    std::uint8_t* d = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x) {
      const int r = s[3 * x], g = s[3 * x + 1], b = s[3 * x + 2];
      const bool red = 256 * r >= rg_q8 * g && 256 * r >= rb_q8 * b;
      d[x] = (red && r + g + b < limit) ? 255 : 0;
    }
  }
  return out;
}

}  // namespace flowd::nuclei

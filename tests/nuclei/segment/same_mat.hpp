#pragma once
// Whether two images are equal pixel for pixel (size, type and values).
#include <opencv2/core.hpp>

namespace flowd::nuclei::test {

inline bool same(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return false;
  if (a.empty()) return true;
  cv::Mat d;
  cv::compare(a, b, d, cv::CMP_NE);
  return cv::countNonZero(d.reshape(1)) == 0;
}

}  // namespace flowd::nuclei::test

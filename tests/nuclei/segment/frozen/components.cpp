// Frozen oracle (see frozen.hpp): plugins/nuclei/segment/components.cpp as of commit 9ae5313.
// 8-connected component labelling and the area filter, on OpenCV's
// block-based labelling (Spaghetti / BBDT), renumbered so labels follow the
// raster order of each component's first pixel - the order the GPU twin
// produces, so both give identical label images.
#include <stdexcept>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "frozen.hpp"

namespace flowd::nuclei::frozen {

namespace {
void check_mask(const cv::Mat& m, const char* who) {
  if (m.type() != CV_8U) throw std::invalid_argument(std::string(who) + ": expects a CV_8U mask");
}
}  // namespace

cv::Mat label(const cv::Mat& mask, int* count) {
  check_mask(mask, "label");
  cv::Mat labels;
  if (mask.empty()) {
    if (count) *count = 0;
    return cv::Mat(mask.size(), CV_32S);
  }
  const int n = cv::connectedComponents(mask, labels, 8, CV_32S);
  std::vector<std::int32_t> order(static_cast<std::size_t>(n), 0);
  std::int32_t next = 0;
  for (int y = 0; y < labels.rows; ++y) {
    std::int32_t* l = labels.ptr<std::int32_t>(y);
    for (int x = 0; x < labels.cols; ++x) {
      const std::int32_t v = l[x];
      if (v == 0) continue;
      std::int32_t& o = order[static_cast<std::size_t>(v)];
      if (o == 0) o = ++next;
      l[x] = o;
    }
  }
  if (count) *count = next;
  return labels;
}

cv::Mat area_threshold(const cv::Mat& mask, int min_area, int max_area) {
  check_mask(mask, "area_threshold");
  cv::Mat out(mask.size(), CV_8U);
  if (mask.empty()) return out;
  cv::Mat labels, stats, centroids;
  const int n = cv::connectedComponentsWithStats(mask, labels, stats, centroids, 8, CV_32S);
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(n), 0);
  for (int i = 1; i < n; ++i) {
    const int a = stats.at<int>(i, cv::CC_STAT_AREA);
    keep[static_cast<std::size_t>(i)] = (a >= min_area && (max_area <= 0 || a <= max_area)) ? 255 : 0;
  }
  for (int y = 0; y < mask.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    std::uint8_t* d = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < mask.cols; ++x) d[x] = keep[static_cast<std::size_t>(l[x])];
  }
  return out;
}

}  // namespace flowd::nuclei::frozen

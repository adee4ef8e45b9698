// The pipeline's glue steps between segment.hpp operations: masking,
// thresholding, bounded hole filling and the final renumbering.
#include <stdexcept>
#include <vector>

#include "pipeline.hpp"

namespace flowd::nuclei {

cv::Mat mask_haem(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc) {
  cv::Mat out(haem.size(), CV_8U);
  for (int y = 0; y < haem.rows; ++y) {
    const std::uint8_t* h = haem.ptr<std::uint8_t>(y);
    const std::uint8_t* t = tissue.ptr<std::uint8_t>(y);
    const std::uint8_t* r = rbc.ptr<std::uint8_t>(y);
    std::uint8_t* o = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < haem.cols; ++x) o[x] = (t[x] && !r[x]) ? h[x] : 0;
  }
  return out;
}

cv::Mat threshold_mask(const cv::Mat& grey, int level) {
  if (grey.type() != CV_8U) throw std::invalid_argument("threshold_mask: expects CV_8U");
  cv::Mat out(grey.size(), CV_8U);
  for (int y = 0; y < grey.rows; ++y) {
    const std::uint8_t* g = grey.ptr<std::uint8_t>(y);
    std::uint8_t* o = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < grey.cols; ++x) o[x] = g[x] >= level ? 255 : 0;
  }
  return out;
}

cv::Mat fill_small_holes(const cv::Mat& mask, int max_hole_area) {
  const cv::Mat filled = fill_holes(mask);
  cv::Mat holes(mask.size(), CV_8U);
  for (int y = 0; y < mask.rows; ++y) {
    const std::uint8_t* m = mask.ptr<std::uint8_t>(y);
    const std::uint8_t* f = filled.ptr<std::uint8_t>(y);
    std::uint8_t* h = holes.ptr<std::uint8_t>(y);
    for (int x = 0; x < mask.cols; ++x) h[x] = (f[x] && !m[x]) ? 255 : 0;
  }
  const cv::Mat small = area_threshold(holes, 1, max_hole_area <= 0 ? 1 : max_hole_area);
  cv::Mat out(mask.size(), CV_8U);
  for (int y = 0; y < mask.rows; ++y) {
    const std::uint8_t* m = mask.ptr<std::uint8_t>(y);
    const std::uint8_t* s = small.ptr<std::uint8_t>(y);
    std::uint8_t* o = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < mask.cols; ++x) o[x] = (m[x] || (max_hole_area > 0 && s[x])) ? 255 : 0;
  }
  return out;
}

cv::Mat relabel(const cv::Mat& labels, int min_area, int* count) {
  if (labels.type() != CV_32S) throw std::invalid_argument("relabel: expects CV_32S labels");
  std::int32_t top = 0;
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    for (int x = 0; x < labels.cols; ++x) top = std::max(top, l[x]);
  }
  std::vector<std::int64_t> area(static_cast<std::size_t>(top) + 1, 0);
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    for (int x = 0; x < labels.cols; ++x)
      if (l[x] > 0) ++area[static_cast<std::size_t>(l[x])];
  }
  std::vector<std::int32_t> order(area.size(), 0);
  std::int32_t next = 0;
  cv::Mat out(labels.size(), CV_32S);
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    std::int32_t* o = out.ptr<std::int32_t>(y);
    for (int x = 0; x < labels.cols; ++x) {
      const std::int32_t v = l[x];
      if (v <= 0 || area[static_cast<std::size_t>(v)] < min_area) {
        o[x] = 0;
        continue;
      }
      std::int32_t& n = order[static_cast<std::size_t>(v)];
      if (n == 0) n = ++next;
      o[x] = n;
    }
  }
  if (count) *count = next;
  return out;
}

}  // namespace flowd::nuclei

// The pipeline's glue steps between segment.hpp operations: masking,
// thresholding, bounded hole filling and the final renumbering.
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "internal.hpp"
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
  if (mask.type() != CV_8U) throw std::invalid_argument("fill_small_holes: expects a CV_8U mask");
  cv::Mat out(mask.size(), CV_8U);
  for (int y = 0; y < mask.rows; ++y) {
    const std::uint8_t* m = mask.ptr<std::uint8_t>(y);
    std::uint8_t* o = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < mask.cols; ++x)
      o[x] = m[x] ? 255 : 0;
  }
  if (max_hole_area <= 0 || mask.empty()) return out;
  // The holes are the background's 4-connected components that miss the
  // border; their size is that of the 8-connected components of hole pixels
  // (what area_threshold would measure on the hole mask), so hole runs on
  // consecutive rows are joined when they touch diagonally too.
  const runs::Components c = runs::label(mask, false);
  std::vector<const runs::Run*> holes;
  for (const runs::Run& r : c.runs)
    if (!c.border[static_cast<std::size_t>(r.comp)]) holes.push_back(&r);
  std::vector<std::int32_t> parent(holes.size());
  std::size_t row_begin = 0, prev_begin = 0, prev_end = 0, k = 0;
  int row_y = -1, prev_y = -1;
  for (std::size_t i = 0; i < holes.size(); ++i) {
    const runs::Run& r = *holes[i];
    parent[i] = static_cast<std::int32_t>(i);
    if (r.y != row_y) {  // the previous row's hole runs are [row_begin, i)
      prev_begin = row_begin;
      prev_end = i;
      prev_y = row_y;
      row_begin = i;
      row_y = r.y;
      k = prev_begin;
    }
    if (prev_y != r.y - 1) continue;
    while (k < prev_end && holes[k]->x1 + 1 <= r.x0)
      ++k;
    for (std::size_t j = k; j < prev_end && holes[j]->x0 < r.x1 + 1; ++j)
      runs::unite(parent, static_cast<std::int32_t>(i), static_cast<std::int32_t>(j));
  }
  std::vector<std::int64_t> area(holes.size(), 0);
  for (std::size_t i = 0; i < holes.size(); ++i)
    area[static_cast<std::size_t>(runs::find(parent, static_cast<std::int32_t>(i)))] += holes[i]->x1 - holes[i]->x0;
  for (std::size_t i = 0; i < holes.size(); ++i)
    if (area[static_cast<std::size_t>(runs::find(parent, static_cast<std::int32_t>(i)))] <= max_hole_area) {
      std::uint8_t* o = out.ptr<std::uint8_t>(holes[i]->y);
      std::fill(o + holes[i]->x0, o + holes[i]->x1, 255);
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
  std::vector<std::uint8_t> keep(area.size(), 0);
  for (std::size_t i = 1; i < area.size(); ++i)
    keep[i] = area[i] >= min_area ? 1 : 0;
  return renumber_kept(labels, keep, count);
}

cv::Mat renumber_kept(const cv::Mat& labels, const std::vector<std::uint8_t>& keep, int* count) {
  std::vector<std::int32_t> order(keep.size(), 0);
  std::int32_t next = 0;
  cv::Mat out(labels.size(), CV_32S);
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    std::int32_t* o = out.ptr<std::int32_t>(y);
    for (int x = 0; x < labels.cols; ++x) {
      const std::int32_t v = l[x];
      if (v <= 0 || !keep[static_cast<std::size_t>(v)]) {
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

// Connected components on runs (internal.hpp): 8-connected labelling and the
// area filter, labels in raster order of each component's first pixel - the
// order the GPU twin produces, so both give identical label images.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "internal.hpp"
#include "segment.hpp"

namespace flowd::nuclei {

namespace {

void check_mask(const cv::Mat& m, const char* who) {
  if (m.type() != CV_8U) throw std::invalid_argument(std::string(who) + ": expects a CV_8U mask");
}

// The end of the run of pixels starting at x that are nonzero (Fg) or zero
// (!Fg); eight bytes at a time while a whole word qualifies.
template <bool Fg>
int run_end(const std::uint8_t* m, int x, int cols) {
  constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (x + 8 <= cols) {
    std::uint64_t v;
    std::memcpy(&v, m + x, 8);
    const bool has_zero = ((v - ones) & ~v & highs) != 0;
    if (Fg ? has_zero : v != 0) break;
    x += 8;
  }
  while (x < cols && (m[x] != 0) == Fg)
    ++x;
  return x;
}

template <bool Fg>
runs::Components label_impl(const cv::Mat& mask) {
  // Runs on consecutive rows touch when their column ranges overlap, widened
  // by one pixel on each side for 8-connectivity (foreground).
  constexpr int reach = Fg ? 1 : 0;
  runs::Components c;
  std::vector<std::int32_t> parent;
  const int rows = mask.rows, cols = mask.cols;
  std::size_t prev_begin = 0, prev_end = 0;
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* m = mask.ptr<std::uint8_t>(y);
    const std::size_t begin = c.runs.size();
    std::size_t k = prev_begin;
    for (int x = run_end<!Fg>(m, 0, cols); x < cols; x = run_end<!Fg>(m, x, cols)) {
      const int x0 = x;
      x = run_end<Fg>(m, x, cols);
      const auto id = static_cast<std::int32_t>(c.runs.size());
      c.runs.push_back({y, x0, x, 0});
      parent.push_back(id);
      while (k < prev_end && c.runs[k].x1 + reach <= x0)
        ++k;
      for (std::size_t j = k; j < prev_end && c.runs[j].x0 < x + reach; ++j)
        runs::unite(parent, id, static_cast<std::int32_t>(j));
    }
    prev_begin = begin;
    prev_end = c.runs.size();
  }
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    runs::Run& r = c.runs[i];
    const std::int32_t root = runs::find(parent, static_cast<std::int32_t>(i));
    if (root == static_cast<std::int32_t>(i)) {
      r.comp = c.count++;
      c.area.push_back(0);
      c.border.push_back(0);
    } else {
      r.comp = c.runs[static_cast<std::size_t>(root)].comp;
    }
    const auto comp = static_cast<std::size_t>(r.comp);
    c.area[comp] += r.x1 - r.x0;
    if (r.y == 0 || r.y == rows - 1 || r.x0 == 0 || r.x1 == cols) c.border[comp] = 1;
  }
  return c;
}

}  // namespace

namespace runs {
Components label(const cv::Mat& mask, bool foreground) {
  return foreground ? label_impl<true>(mask) : label_impl<false>(mask);
}
}  // namespace runs

cv::Mat label(const cv::Mat& mask, int* count) {
  check_mask(mask, "label");
  cv::Mat labels(mask.size(), CV_32S);
  const runs::Components c = runs::label(mask, true);
  runs::paint<std::int32_t>(c, labels, 0, [](std::int32_t comp) { return comp + 1; });
  if (count) *count = c.count;
  return labels;
}

cv::Mat area_threshold(const cv::Mat& mask, int min_area, int max_area) {
  check_mask(mask, "area_threshold");
  cv::Mat out(mask.size(), CV_8U);
  const runs::Components c = runs::label(mask, true);
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(c.count), 0);
  for (std::size_t i = 0; i < keep.size(); ++i) {
    const std::int64_t a = c.area[i];
    keep[i] = (a >= min_area && (max_area <= 0 || a <= max_area)) ? 255 : 0;
  }
  runs::paint<std::uint8_t>(c, out, 0, [&](std::int32_t comp) { return keep[static_cast<std::size_t>(comp)]; });
  return out;
}

}  // namespace flowd::nuclei

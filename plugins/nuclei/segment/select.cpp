// Object measures (area, convex hull, contrast against a ring) and the
// selection rule built on them.
#include "select.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "pipeline.hpp"

namespace flowd::nuclei {

namespace {

struct Pt {
  std::int64_t x, y;
};

std::int64_t cross(const Pt& o, const Pt& a, const Pt& b) {
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

// Area of the convex hull of `pts`, given sorted by (x, y) without
// duplicates (Andrew's monotone chain).
double hull_area(const std::vector<Pt>& pts) {
  if (pts.size() < 3) return 0;
  std::vector<Pt> h(2 * pts.size());
  std::size_t k = 0;
  for (const Pt& p : pts) {
    while (k >= 2 && cross(h[k - 2], h[k - 1], p) <= 0)
      --k;
    h[k++] = p;
  }
  for (std::size_t i = pts.size() - 1, lower = k + 1; i-- > 0;) {
    while (k >= lower && cross(h[k - 2], h[k - 1], pts[i]) <= 0)
      --k;
    h[k++] = pts[i];
  }
  std::int64_t twice = 0;
  for (std::size_t i = 0; i + 1 < k; ++i)
    twice += h[i].x * h[i + 1].y - h[i + 1].x * h[i].y;
  return static_cast<double>(twice < 0 ? -twice : twice) / 2.0;
}

void check(const cv::Mat& labels, const cv::Mat& haem, const cv::Mat& valid) {
  if (labels.type() != CV_32S) throw std::invalid_argument("measure_objects: expects CV_32S labels");
  if (haem.type() != CV_8U || valid.type() != CV_8U)
    throw std::invalid_argument("measure_objects: expects CV_8U haematoxylin and validity mask");
  if (haem.size() != labels.size() || valid.size() != labels.size())
    throw std::invalid_argument("measure_objects: labels, haematoxylin and mask differ in size");
}

// One horizontal run of an object's pixels.
struct Run {
  std::int32_t label;
  int y, x0, x1;  // pixels x0..x1 inclusive
};

// The leftmost and rightmost pixel of an object on row y.
struct Extent {
  int y, lo, hi;
};

// The ring of one object: valid pixels of no object within chessboard
// distance `radius` of its row extents (rows sorted by y). Per row of the
// ring, the dilated extent is the widest extent within `radius` rows.
void add_ring(const cv::Mat& labels, const cv::Mat& haem, const cv::Mat& valid, int radius,
              const std::vector<Extent>& extents, ObjectMeasures& m) {
  const int y0 = std::max(0, extents.front().y - radius), y1 = std::min(labels.rows - 1, extents.back().y + radius);
  std::int64_t pixels = 0;
  std::uint64_t sum = 0;
  std::size_t lo_k = 0;  // first extent within radius of the row
  for (int y = y0; y <= y1; ++y) {
    while (extents[lo_k].y < y - radius)
      ++lo_k;
    int lo = labels.cols, hi = -1;
    for (std::size_t k = lo_k; k < extents.size() && extents[k].y <= y + radius; ++k) {
      lo = std::min(lo, extents[k].lo);
      hi = std::max(hi, extents[k].hi);
    }
    if (hi < 0) continue;  // a gap between the rows of a disconnected object
    const int a = std::max(0, lo - radius), b = std::min(labels.cols - 1, hi + radius);
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    const std::uint8_t* h = haem.ptr<std::uint8_t>(y);
    const std::uint8_t* v = valid.ptr<std::uint8_t>(y);
    for (int x = a; x <= b; ++x) {
      const bool ring = l[x] <= 0 && v[x];
      pixels += ring;
      sum += ring ? h[x] : 0u;
    }
  }
  m.ring_pixels = pixels;
  m.ring_mean = pixels > 0 ? static_cast<double>(sum) / static_cast<double>(pixels) : 0.0;
}

}  // namespace

cv::Mat valid_tissue(const cv::Mat& tissue, const cv::Mat& rbc) {
  cv::Mat out(tissue.size(), CV_8U);
  for (int y = 0; y < tissue.rows; ++y) {
    const std::uint8_t* t = tissue.ptr<std::uint8_t>(y);
    const std::uint8_t* r = rbc.ptr<std::uint8_t>(y);
    std::uint8_t* o = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < tissue.cols; ++x)
      o[x] = (t[x] && !r[x]) ? 255 : 0;
  }
  return out;
}

std::vector<ObjectMeasures> measure_objects(const cv::Mat& labels, const cv::Mat& haem, const cv::Mat& valid,
                                            int ring_radius) {
  check(labels, haem, valid);
  if (ring_radius > 254) throw std::invalid_argument("measure_objects: ring radius above 254 pixels");
  const int rows = labels.rows, cols = labels.cols;
  // One pass: area, haematoxylin sum and the runs of every object.
  std::vector<Run> runs;
  std::vector<double> inside(1, 0.0);
  std::vector<std::int64_t> area(1, 0);
  for (int y = 0; y < rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    const std::uint8_t* h = haem.ptr<std::uint8_t>(y);
    for (int x = 0; x < cols;) {
      const std::int32_t v = l[x];
      if (v <= 0) {
        ++x;
        continue;
      }
      const int x0 = x;
      std::uint32_t sum = 0;
      for (; x < cols && l[x] == v; ++x) sum += h[x];
      const auto i = static_cast<std::size_t>(v);
      if (i >= area.size()) {
        area.resize(i + 1, 0);
        inside.resize(i + 1, 0.0);
      }
      area[i] += x - x0;
      inside[i] += sum;
      runs.push_back({v, y, x0, x - 1});
    }
  }
  const std::size_t n = area.size();
  std::vector<ObjectMeasures> m(n);
  // Runs grouped by object (counting sort), each group in raster order.
  std::vector<std::size_t> first(n + 1, 0);
  for (const Run& r : runs) ++first[static_cast<std::size_t>(r.label) + 1];
  for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<Run> grouped(runs.size());
  {
    std::vector<std::size_t> next(first.begin(), first.end() - 1);
    for (const Run& r : runs) grouped[next[static_cast<std::size_t>(r.label)]++] = r;
  }
  // The hull of the object's pixel squares is the hull of the extreme
  // corners on each horizontal grid line, which come out sorted by (y, x).
  std::vector<Pt> pts;
  std::vector<Extent> extents;
  for (std::size_t i = 1; i < n; ++i) {
    if (area[i] == 0) continue;
    pts.clear();
    extents.clear();
    int y = -1, lo = 0, hi = 0;  // the current row's extent
    int prev_lo = 0, prev_hi = 0;
    bool have_prev = false;
    // Stored as (y, x) so that Pt's (first, second) order is (y, x).
    auto line = [&](int gy, int a, int b) {
      pts.push_back({gy, a});
      pts.push_back({gy, b});
    };
    auto close_row = [&]() {
      extents.push_back({y, lo, hi});
      // Grid line y: the top corners of row y and the bottom ones of row y-1.
      if (have_prev)
        line(y, std::min(lo, prev_lo), std::max(hi, prev_hi) + 1);
      else
        line(y, lo, hi + 1);
      prev_lo = lo;
      prev_hi = hi;
      have_prev = true;
    };
    for (std::size_t k = first[i]; k < first[i + 1]; ++k) {
      const Run& r = grouped[k];
      if (r.y != y) {
        if (y >= 0) {
          close_row();
          if (r.y != y + 1) {  // cannot happen for a connected object, but stay exact
            line(y + 1, prev_lo, prev_hi + 1);
            have_prev = false;
          }
        }
        y = r.y;
        lo = r.x0;
        hi = r.x1;
      } else {
        lo = std::min(lo, r.x0);
        hi = std::max(hi, r.x1);
      }
    }
    close_row();
    line(y + 1, lo, hi + 1);
    m[i].area = area[i];
    m[i].hull_area = hull_area(pts);
    m[i].inside_mean = inside[i] / static_cast<double>(area[i]);
    if (ring_radius > 0) add_ring(labels, haem, valid, ring_radius, extents, m[i]);
  }
  return m;
}

bool keeps(const ObjectMeasures& m, const SelectRule& rule) {
  if (m.area == 0) return false;
  if (m.solidity() < rule.min_solidity) return false;
  if (m.ring_pixels >= rule.min_ring_pixels &&
      (m.contrast() < rule.min_contrast || m.inside_mean < rule.min_ratio * m.ring_mean))
    return false;
  return true;
}

cv::Mat select_and_relabel(const cv::Mat& labels, const cv::Mat& haem, const cv::Mat& valid, const SelectRule& rule,
                           int min_area, int* count) {
  const std::vector<ObjectMeasures> m = measure_objects(labels, haem, valid, rule.ring_radius);
  // Numbered as relabel() numbers them: raster order of first pixel.
  std::vector<std::uint8_t> keep(m.size(), 0);
  for (std::size_t i = 1; i < m.size(); ++i)
    keep[i] = keeps(m[i], rule) && m[i].area >= min_area ? 1 : 0;
  return renumber_kept(labels, keep, count);
}

cv::Mat select_objects(const cv::Mat& labels, const cv::Mat& haem, const cv::Mat& valid, const SelectRule& rule) {
  const std::vector<ObjectMeasures> m = measure_objects(labels, haem, valid, rule.ring_radius);
  std::vector<std::uint8_t> keep(m.size(), 0);
  for (std::size_t i = 1; i < m.size(); ++i)
    keep[i] = keeps(m[i], rule) ? 1 : 0;
  cv::Mat out(labels.size(), CV_32S);
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    std::int32_t* o = out.ptr<std::int32_t>(y);
    for (int x = 0; x < labels.cols; ++x)
      o[x] = (l[x] > 0 && keep[static_cast<std::size_t>(l[x])]) ? l[x] : 0;
  }
  return out;
}

}  // namespace flowd::nuclei

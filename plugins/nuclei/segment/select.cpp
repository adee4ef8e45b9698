// Object measures (area, convex hull, contrast against a ring) and the
// selection rule built on them.
#include "select.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace flowd::nuclei {

namespace {

struct Pt {
  std::int64_t x, y;
};

std::int64_t cross(const Pt& o, const Pt& a, const Pt& b) {
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

// Area of the convex hull of `pts` (Andrew's monotone chain; pts sorted in place).
double hull_area(std::vector<Pt>& pts) {
  std::sort(pts.begin(), pts.end(), [](const Pt& a, const Pt& b) { return a.x != b.x ? a.x < b.x : a.y < b.y; });
  pts.erase(std::unique(pts.begin(), pts.end(), [](const Pt& a, const Pt& b) { return a.x == b.x && a.y == b.y; }),
            pts.end());
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

// Nearest object (chessboard distance, up to `radius`) of every pixel that
// is in no object: two raster passes, exact for the chessboard metric.
void nearest_object(const cv::Mat& labels, int radius, cv::Mat& dist, cv::Mat& owner) {
  const int rows = labels.rows, cols = labels.cols;
  const std::uint16_t far = static_cast<std::uint16_t>(std::min(radius + 1, 65535));
  dist.create(labels.size(), CV_16U);
  owner.create(labels.size(), CV_32S);
  for (int y = 0; y < rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    std::uint16_t* d = dist.ptr<std::uint16_t>(y);
    std::int32_t* o = owner.ptr<std::int32_t>(y);
    for (int x = 0; x < cols; ++x) {
      d[x] = l[x] > 0 ? 0 : far;
      o[x] = l[x] > 0 ? l[x] : 0;
    }
  }
  auto relax = [&](std::uint16_t& d, std::int32_t& o, int y, int x) {
    const std::uint16_t n = dist.ptr<std::uint16_t>(y)[x];
    if (n + 1 < d) {
      d = static_cast<std::uint16_t>(n + 1);
      o = owner.ptr<std::int32_t>(y)[x];
    }
  };
  for (int y = 0; y < rows; ++y) {
    std::uint16_t* d = dist.ptr<std::uint16_t>(y);
    std::int32_t* o = owner.ptr<std::int32_t>(y);
    for (int x = 0; x < cols; ++x) {
      if (d[x] == 0) continue;
      if (x > 0) relax(d[x], o[x], y, x - 1);
      if (y > 0) {
        if (x > 0) relax(d[x], o[x], y - 1, x - 1);
        relax(d[x], o[x], y - 1, x);
        if (x + 1 < cols) relax(d[x], o[x], y - 1, x + 1);
      }
    }
  }
  for (int y = rows; y-- > 0;) {
    std::uint16_t* d = dist.ptr<std::uint16_t>(y);
    std::int32_t* o = owner.ptr<std::int32_t>(y);
    for (int x = cols; x-- > 0;) {
      if (d[x] == 0) continue;
      if (x + 1 < cols) relax(d[x], o[x], y, x + 1);
      if (y + 1 < rows) {
        if (x + 1 < cols) relax(d[x], o[x], y + 1, x + 1);
        relax(d[x], o[x], y + 1, x);
        if (x > 0) relax(d[x], o[x], y + 1, x - 1);
      }
    }
  }
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
  const int rows = labels.rows, cols = labels.cols;
  std::int32_t top = 0;
  for (int y = 0; y < rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    for (int x = 0; x < cols; ++x)
      top = std::max(top, l[x]);
  }
  const std::size_t n = static_cast<std::size_t>(top) + 1;
  std::vector<ObjectMeasures> m(n);
  std::vector<double> inside(n, 0.0), ring(n, 0.0);
  std::vector<int> ymin(n, std::numeric_limits<int>::max()), ymax(n, -1);
  for (int y = 0; y < rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    const std::uint8_t* h = haem.ptr<std::uint8_t>(y);
    for (int x = 0; x < cols; ++x) {
      if (l[x] <= 0) continue;
      const auto i = static_cast<std::size_t>(l[x]);
      ++m[i].area;
      inside[i] += h[x];
      ymin[i] = std::min(ymin[i], y);
      ymax[i] = y;
    }
  }
  // Row extents of every object: the hull of the extents' pixel corners is
  // the hull of the object's pixel squares.
  std::vector<std::size_t> first(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    first[i + 1] = first[i] + (ymax[i] >= 0 ? static_cast<std::size_t>(ymax[i] - ymin[i] + 1) : 0);
  std::vector<int> xlo(first[n], std::numeric_limits<int>::max()), xhi(first[n], -1);
  for (int y = 0; y < rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    for (int x = 0; x < cols; ++x) {
      if (l[x] <= 0) continue;
      const auto i = static_cast<std::size_t>(l[x]);
      const std::size_t r = first[i] + static_cast<std::size_t>(y - ymin[i]);
      xlo[r] = std::min(xlo[r], x);
      xhi[r] = x;
    }
  }
  std::vector<Pt> pts;
  for (std::size_t i = 1; i < n; ++i) {
    if (m[i].area == 0) continue;
    pts.clear();
    for (std::size_t r = first[i]; r < first[i + 1]; ++r) {
      if (xhi[r] < 0) continue;
      const std::int64_t y = ymin[i] + static_cast<std::int64_t>(r - first[i]);
      pts.push_back({xlo[r], y});
      pts.push_back({xlo[r], y + 1});
      pts.push_back({xhi[r] + 1, y});
      pts.push_back({xhi[r] + 1, y + 1});
    }
    m[i].hull_area = hull_area(pts);
    m[i].inside_mean = inside[i] / static_cast<double>(m[i].area);
  }

  if (ring_radius > 0) {
    cv::Mat dist, owner;
    nearest_object(labels, ring_radius, dist, owner);
    for (int y = 0; y < rows; ++y) {
      const std::uint16_t* d = dist.ptr<std::uint16_t>(y);
      const std::int32_t* o = owner.ptr<std::int32_t>(y);
      const std::uint8_t* h = haem.ptr<std::uint8_t>(y);
      const std::uint8_t* v = valid.ptr<std::uint8_t>(y);
      for (int x = 0; x < cols; ++x) {
        if (d[x] == 0 || d[x] > ring_radius || !v[x] || o[x] <= 0) continue;
        const auto i = static_cast<std::size_t>(o[x]);
        ++m[i].ring_pixels;
        ring[i] += h[x];
      }
    }
  }
  for (std::size_t i = 1; i < n; ++i)
    m[i].ring_mean = m[i].ring_pixels > 0 ? ring[i] / static_cast<double>(m[i].ring_pixels) : 0.0;
  return m;
}

bool keeps(const ObjectMeasures& m, const SelectRule& rule) {
  if (m.area == 0) return false;
  if (m.solidity() < rule.min_solidity) return false;
  if (m.ring_pixels >= rule.min_ring_pixels && m.contrast() < rule.min_contrast) return false;
  return true;
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

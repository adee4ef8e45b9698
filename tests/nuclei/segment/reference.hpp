#pragma once
// Slow, obviously-correct implementations of segment.hpp's definitions.
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include <opencv2/core.hpp>

namespace ref {

inline bool inside(const cv::Mat& m, int y, int x) { return y >= 0 && x >= 0 && y < m.rows && x < m.cols; }

// Iterate J = min(dilate_3x3(J), mask) from min(marker, mask) to a fixpoint.
template <class T> cv::Mat reconstruct(const cv::Mat& marker, const cv::Mat& mask) {
  cv::Mat j;
  cv::min(marker, mask, j);
  bool changed = true;
  while (changed) {
    changed = false;
    cv::Mat next = j.clone();
    for (int y = 0; y < j.rows; ++y)
      for (int x = 0; x < j.cols; ++x) {
        T v = j.at<T>(y, x);
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx)
            if (inside(j, y + dy, x + dx)) v = std::max(v, j.at<T>(y + dy, x + dx));
        v = std::min(v, mask.at<T>(y, x));
        if (v != next.at<T>(y, x)) {
          next.at<T>(y, x) = v;
          changed = true;
        }
      }
    j = next;
  }
  return j;
}

// Flood labelling in raster order of first pixel; conn 4 or 8; pred(y, x) says
// which pixels take part.
template <class P> cv::Mat flood_label(int rows, int cols, int conn, P pred, int* count = nullptr) {
  cv::Mat l(rows, cols, CV_32S, cv::Scalar(0));
  int n = 0;
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x) {
      if (!pred(y, x) || l.at<int>(y, x)) continue;
      ++n;
      std::deque<cv::Point> q{{x, y}};
      l.at<int>(y, x) = n;
      while (!q.empty()) {
        const cv::Point p = q.front();
        q.pop_front();
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            if ((dx == 0 && dy == 0) || (conn == 4 && dx != 0 && dy != 0)) continue;
            const int yy = p.y + dy, xx = p.x + dx;
            if (!inside(l, yy, xx) || l.at<int>(yy, xx) || !pred(yy, xx)) continue;
            l.at<int>(yy, xx) = n;
            q.push_back({xx, yy});
          }
      }
    }
  if (count) *count = n;
  return l;
}

inline cv::Mat label(const cv::Mat& mask, int* count = nullptr) {
  return flood_label(mask.rows, mask.cols, 8, [&](int y, int x) { return mask.at<std::uint8_t>(y, x) != 0; }, count);
}

inline cv::Mat area_threshold(const cv::Mat& mask, int lo, int hi) {
  int n = 0;
  const cv::Mat l = label(mask, &n);
  std::vector<int> area(static_cast<std::size_t>(n) + 1, 0);
  for (int y = 0; y < l.rows; ++y)
    for (int x = 0; x < l.cols; ++x) ++area[static_cast<std::size_t>(l.at<int>(y, x))];
  cv::Mat out(mask.size(), CV_8U, cv::Scalar(0));
  for (int y = 0; y < l.rows; ++y)
    for (int x = 0; x < l.cols; ++x) {
      const int v = l.at<int>(y, x);
      const int a = area[static_cast<std::size_t>(v)];
      if (v && a >= lo && (hi <= 0 || a <= hi)) out.at<std::uint8_t>(y, x) = 255;
    }
  return out;
}

inline cv::Mat fill_holes(const cv::Mat& mask) {
  int n = 0;
  const cv::Mat l = flood_label(mask.rows, mask.cols, 4, [&](int y, int x) { return mask.at<std::uint8_t>(y, x) == 0; }, &n);
  std::vector<bool> border(static_cast<std::size_t>(n) + 1, false);
  for (int y = 0; y < l.rows; ++y)
    for (int x = 0; x < l.cols; ++x)
      if (y == 0 || x == 0 || y == l.rows - 1 || x == l.cols - 1) border[static_cast<std::size_t>(l.at<int>(y, x))] = true;
  cv::Mat out(mask.size(), CV_8U);
  for (int y = 0; y < l.rows; ++y)
    for (int x = 0; x < l.cols; ++x) {
      const int v = l.at<int>(y, x);
      out.at<std::uint8_t>(y, x) = (v && border[static_cast<std::size_t>(v)]) ? 0 : 255;
    }
  return out;
}

inline cv::Mat distance(const cv::Mat& mask) {
  std::vector<cv::Point> zeros;
  for (int y = 0; y < mask.rows; ++y)
    for (int x = 0; x < mask.cols; ++x)
      if (!mask.at<std::uint8_t>(y, x)) zeros.push_back({x, y});
  cv::Mat out(mask.size(), CV_32F);
  for (int y = 0; y < mask.rows; ++y)
    for (int x = 0; x < mask.cols; ++x) {
      long long best = std::numeric_limits<long long>::max();
      for (const auto& z : zeros) best = std::min(best, 1LL * (z.x - x) * (z.x - x) + 1LL * (z.y - y) * (z.y - y));
      out.at<float>(y, x) = zeros.empty() ? std::numeric_limits<float>::infinity() : std::sqrt(static_cast<float>(best));
    }
  return out;
}

inline cv::Mat markers(const cv::Mat& dist, float h) {
  cv::Mat low(dist.size(), CV_32F);
  for (int y = 0; y < dist.rows; ++y)
    for (int x = 0; x < dist.cols; ++x) low.at<float>(y, x) = dist.at<float>(y, x) - h;
  const cv::Mat r = reconstruct<float>(low, dist);
  auto dom = [&](int y, int x) { return dist.at<float>(y, x) > 0; };
  int n = 0;
  // plateaus: 8-connected equal-r zones of the domain
  cv::Mat zone(dist.size(), CV_32S, cv::Scalar(0));
  for (int y = 0; y < dist.rows; ++y)
    for (int x = 0; x < dist.cols; ++x) {
      if (!dom(y, x) || zone.at<int>(y, x)) continue;
      ++n;
      const float v = r.at<float>(y, x);
      std::deque<cv::Point> q{{x, y}};
      zone.at<int>(y, x) = n;
      while (!q.empty()) {
        const cv::Point p = q.front();
        q.pop_front();
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            const int yy = p.y + dy, xx = p.x + dx;
            if (!inside(dist, yy, xx) || !dom(yy, xx) || zone.at<int>(yy, xx) || r.at<float>(yy, xx) != v) continue;
            zone.at<int>(yy, xx) = n;
            q.push_back({xx, yy});
          }
      }
    }
  std::vector<bool> is_max(static_cast<std::size_t>(n) + 1, true);
  for (int y = 0; y < dist.rows; ++y)
    for (int x = 0; x < dist.cols; ++x) {
      if (!dom(y, x)) continue;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int yy = y + dy, xx = x + dx;
          if (inside(dist, yy, xx) && dom(yy, xx) && r.at<float>(yy, xx) > r.at<float>(y, x))
            is_max[static_cast<std::size_t>(zone.at<int>(y, x))] = false;
        }
    }
  return flood_label(dist.rows, dist.cols, 8,
                     [&](int y, int x) { return dom(y, x) && is_max[static_cast<std::size_t>(zone.at<int>(y, x))]; });
}

inline cv::Mat watershed(const cv::Mat& dist, const cv::Mat& mk, const cv::Mat& mask) {
  const int rows = dist.rows, cols = dist.cols;
  cv::Mat g(dist.size(), CV_32F);
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x) g.at<float>(y, x) = mk.at<int>(y, x) > 0 ? dist.at<float>(y, x) : 0.0f;
  const cv::Mat r = reconstruct<float>(g, dist);
  const int dy8[8] = {-1, -1, 0, 1, 1, 1, 0, -1}, dx8[8] = {0, 1, 1, 1, 0, -1, -1, -1};
  auto zone = [&](int y, int x) { return inside(r, y, x) && mask.at<std::uint8_t>(y, x) && mk.at<int>(y, x) <= 0; };
  auto higher = [&](int y, int x) {
    for (int d = 0; d < 8; ++d)
      if (inside(r, y + dy8[d], x + dx8[d]) && r.at<float>(y + dy8[d], x + dx8[d]) > r.at<float>(y, x)) return true;
    return false;
  };
  const int inf = std::numeric_limits<int>::max();
  cv::Mat lc(dist.size(), CV_32S, cv::Scalar(inf));
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x)
      if (zone(y, x) && higher(y, x)) lc.at<int>(y, x) = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (int y = 0; y < rows; ++y)
      for (int x = 0; x < cols; ++x) {
        if (!zone(y, x) || higher(y, x)) continue;
        for (int d = 0; d < 8; ++d) {
          const int yy = y + dy8[d], xx = x + dx8[d];
          if (zone(yy, xx) && r.at<float>(yy, xx) == r.at<float>(y, x) && lc.at<int>(yy, xx) != inf &&
              lc.at<int>(yy, xx) + 1 < lc.at<int>(y, x)) {
            lc.at<int>(y, x) = lc.at<int>(yy, xx) + 1;
            changed = true;
          }
        }
      }
  }
  cv::Mat out(dist.size(), CV_32S, cv::Scalar(0));
  for (int y0 = 0; y0 < rows; ++y0)
    for (int x0 = 0; x0 < cols; ++x0) {
      int y = y0, x = x0;
      int result = 0;
      while (true) {
        if (!mask.at<std::uint8_t>(y, x)) break;
        if (mk.at<int>(y, x) > 0) {
          result = mk.at<int>(y, x);
          break;
        }
        int next = -1;
        float best = r.at<float>(y, x);
        for (int d = 0; d < 8; ++d) {
          const int yy = y + dy8[d], xx = x + dx8[d];
          if (inside(r, yy, xx) && r.at<float>(yy, xx) > best) {
            best = r.at<float>(yy, xx);
            next = d;
          }
        }
        if (next < 0 && lc.at<int>(y, x) != inf)
          for (int d = 0; d < 8; ++d) {
            const int yy = y + dy8[d], xx = x + dx8[d];
            if (zone(yy, xx) && r.at<float>(yy, xx) == r.at<float>(y, x) && lc.at<int>(yy, xx) == lc.at<int>(y, x) - 1) {
              next = d;
              break;
            }
          }
        if (next < 0) break;
        y += dy8[next];
        x += dx8[next];
      }
      out.at<int>(y0, x0) = result;
    }
  return out;
}

}  // namespace ref

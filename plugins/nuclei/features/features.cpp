// Per-nucleus features, CPU variant (definitions in features.hpp). Compiled
// with -ffp-contract=off: the GPU twin evaluates the same expressions
// (feature_math.hpp) without FMA contraction.
#include "features.hpp"
#include "segment/stain.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include <opencv2/imgproc.hpp>

namespace flowd::nuclei::features {

namespace {

constexpr const char* kStatNames[kStatCount] = {"mean", "std", "min", "max", "q1",
                                                "median", "q3", "skewness", "kurtosis", "entropy"};
constexpr const char* kHaralickNames[kHaralickCount] = {
    "asm", "contrast", "correlation", "sum_squares", "idm", "sum_average", "sum_variance",
    "sum_entropy", "entropy", "difference_variance", "difference_entropy", "imc1", "imc2"};

std::vector<std::string> make_names() {
  std::vector<std::string> n(kFeatureCount);
  const char* shape[] = {"area",  "perimeter", "equivalent_diameter", "major_axis", "minor_axis", "eccentricity",
                         "orientation", "solidity", "extent", "circularity"};
  for (int i = 0; i < 10; ++i) n[static_cast<std::size_t>(i)] = shape[i];
  const std::pair<int, const char*> blocks[] = {{kH, "h_"},         {kE, "e_"},          {kGrey, "grey_"},
                                                {kGrad, "grad_"},   {kRingH, "ring_h_"}, {kRingE, "ring_e_"},
                                                {kRingGrey, "ring_grey_"}};
  for (const auto& [at, prefix] : blocks)
    for (int s = 0; s < kStatCount; ++s) n[static_cast<std::size_t>(at + s)] = std::string(prefix) + kStatNames[s];
  n[kCannyFraction] = "canny_fraction";
  for (int f = 0; f < kHaralickCount; ++f) n[static_cast<std::size_t>(kGlcm + f)] = std::string("glcm_") + kHaralickNames[f];
  n[kRingArea] = "ring_area";
  return n;
}

StainTables make_stain_tables() {
  // The segmentation's stain matrix (segment/stain.hpp), in double.
  const StainInverse& inv = he_stain_inverse();
  StainTables t{};
  const double scale = 255.0 / kOdMax;
  for (int s = 0; s < 2; ++s)
    for (int c = 0; c < 3; ++c)
      for (int v = 0; v < 256; ++v) t.t[s][c][v] = -std::log10((v + 1) / 256.0) * inv[static_cast<std::size_t>(c)][static_cast<std::size_t>(s)] * scale;
  return t;
}

inline std::uint8_t quantise(double t) {
  return t <= 0 ? 0 : t >= 255 ? 255 : static_cast<std::uint8_t>(static_cast<int>(t + 0.5));
}

// OpenCV's BORDER_REFLECT_101 for the one-pixel reach of a 3x3 kernel.
inline int reflect101(int p, int n) {
  if (p < 0) return n == 1 ? 0 : -p;
  if (p >= n) return n == 1 ? 0 : 2 * n - 2 - p;
  return p;
}

// gx^2 + gy^2 of the 3x3 Sobel at (r, c).
inline std::uint32_t sobel_m2(const cv::Mat& g, int r, int c) {
  const int ru = reflect101(r - 1, g.rows), rd = reflect101(r + 1, g.rows);
  const int cl = reflect101(c - 1, g.cols), cr = reflect101(c + 1, g.cols);
  const std::uint8_t *u = g.ptr<std::uint8_t>(ru), *m = g.ptr<std::uint8_t>(r), *d = g.ptr<std::uint8_t>(rd);
  const int gx = (u[cr] + 2 * m[cr] + d[cr]) - (u[cl] + 2 * m[cl] + d[cl]);
  const int gy = (d[cl] + 2 * d[c] + d[cr]) - (u[cl] + 2 * u[c] + u[cr]);
  return static_cast<std::uint32_t>(gx * gx + gy * gy);
}

void check_inputs(const cv::Mat& rgb, const cv::Mat& labels) {
  if (rgb.type() != CV_8UC3) throw std::invalid_argument("nuclei features: the image must be CV_8UC3 (RGB)");
  if (labels.type() != CV_32S) throw std::invalid_argument("nuclei features: the labels must be CV_32S");
  if (rgb.size() != labels.size()) throw std::invalid_argument("nuclei features: image and labels differ in size");
}

}  // namespace

int Options::ring_px() const {
  if (!(mpp > 0) || !std::isfinite(mpp)) throw std::invalid_argument("nuclei features: mpp must be a positive number");
  if (!(ring_um >= 0) || !std::isfinite(ring_um)) throw std::invalid_argument("nuclei features: ring must be >= 0");
  if (glcm_levels < kMinLevels || glcm_levels > kMaxLevels)
    throw std::invalid_argument("nuclei features: glcm_levels must be in [" + std::to_string(kMinLevels) + ", " +
                                std::to_string(kMaxLevels) + "]");
  if (min_area < 1) throw std::invalid_argument("nuclei features: min_area must be >= 1");
  const double r = std::round(ring_um / mpp);
  if (r > 1000) throw std::invalid_argument("nuclei features: the ring is wider than 1000 pixels");
  return static_cast<int>(r);
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = make_names();
  return names;
}

const StainTables& stain_tables() {
  static const StainTables t = make_stain_tables();
  return t;
}

Channels derive_channels(const cv::Mat& rgb) {
  if (rgb.type() != CV_8UC3) throw std::invalid_argument("nuclei features: the image must be CV_8UC3 (RGB)");
  const StainTables& st = stain_tables();
  Channels ch;
  ch.grey.create(rgb.size(), CV_8U);
  ch.h.create(rgb.size(), CV_8U);
  ch.e.create(rgb.size(), CV_8U);
  for (int y = 0; y < rgb.rows; ++y) {
    const std::uint8_t* s = rgb.ptr<std::uint8_t>(y);
    std::uint8_t *g = ch.grey.ptr<std::uint8_t>(y), *h = ch.h.ptr<std::uint8_t>(y), *e = ch.e.ptr<std::uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x) {
      const int r = s[3 * x], gg = s[3 * x + 1], b = s[3 * x + 2];
      g[x] = static_cast<std::uint8_t>((9798 * r + 19235 * gg + 3735 * b + 16384) >> 15);
      h[x] = quantise((st.t[0][0][r] + st.t[0][1][gg]) + st.t[0][2][b]);
      e[x] = quantise((st.t[1][0][r] + st.t[1][1][gg]) + st.t[1][2][b]);
    }
  }
  if (!rgb.empty()) cv::Canny(ch.grey, ch.edges, kCannyLow, kCannyHigh, 3, true);
  return ch;
}

std::vector<Nucleus> find_nuclei(const cv::Mat& labels, int min_area) {
  if (labels.type() != CV_32S) throw std::invalid_argument("nuclei features: the labels must be CV_32S");
  struct Acc {
    std::int64_t area = 0, sr = 0, sc = 0;
    int r0 = std::numeric_limits<int>::max(), c0 = r0, r1 = -1, c1 = -1;
  };
  std::int32_t max_label = 0;
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    for (int x = 0; x < labels.cols; ++x) max_label = std::max(max_label, l[x]);
  }
  // Labels are usually 1..n; sparse ones (e.g. global ids) go through a map.
  const bool dense = static_cast<double>(max_label) <= 2.0 * static_cast<double>(labels.total()) + 16;
  std::vector<Acc> by_index(dense ? static_cast<std::size_t>(max_label) + 1 : 0);
  std::unordered_map<std::int32_t, Acc> by_label;
  for (int y = 0; y < labels.rows; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(y);
    for (int x = 0; x < labels.cols; ++x) {
      if (l[x] <= 0) continue;
      Acc& a = dense ? by_index[static_cast<std::size_t>(l[x])] : by_label[l[x]];
      ++a.area;
      a.sr += y, a.sc += x;
      a.r0 = std::min(a.r0, y), a.r1 = std::max(a.r1, y);
      a.c0 = std::min(a.c0, x), a.c1 = std::max(a.c1, x);
    }
  }
  std::vector<Nucleus> out;
  const auto add = [&](std::int32_t label, const Acc& a) {
    if (a.area < min_area || a.area == 0) return;
    Nucleus n;
    n.label = label;
    n.area = a.area;
    n.centroid_row = static_cast<double>(a.sr) / static_cast<double>(a.area);
    n.centroid_col = static_cast<double>(a.sc) / static_cast<double>(a.area);
    n.bbox_row = a.r0, n.bbox_col = a.c0, n.bbox_height = a.r1 - a.r0 + 1, n.bbox_width = a.c1 - a.c0 + 1;
    out.push_back(n);
  };
  if (dense) {
    for (std::size_t l = 1; l < by_index.size(); ++l) add(static_cast<std::int32_t>(l), by_index[l]);
  } else {
    for (const auto& [l, a] : by_label) add(l, a);
    std::sort(out.begin(), out.end(), [](const Nucleus& a, const Nucleus& b) { return a.label < b.label; });
  }
  return out;
}

void contour_shape(const cv::Mat& labels, const Nucleus& n, double* perimeter, double* solidity) {
  // One pixel of background around the box, so no contour touches the edge.
  cv::Mat mask = cv::Mat::zeros(n.bbox_height + 2, n.bbox_width + 2, CV_8U);
  for (int y = 0; y < n.bbox_height; ++y) {
    const std::int32_t* l = labels.ptr<std::int32_t>(n.bbox_row + y) + n.bbox_col;
    std::uint8_t* m = mask.ptr<std::uint8_t>(y + 1) + 1;
    for (int x = 0; x < n.bbox_width; ++x) m[x] = l[x] == n.label ? 255 : 0;
  }
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(mask, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_NONE);
  double length = 0;
  std::vector<cv::Point> corners;
  for (const auto& c : contours) {
    length += cv::arcLength(c, true);
    for (const cv::Point& p : c) {
      corners.emplace_back(p.x, p.y);
      corners.emplace_back(p.x + 1, p.y);
      corners.emplace_back(p.x, p.y + 1);
      corners.emplace_back(p.x + 1, p.y + 1);
    }
  }
  *perimeter = length;
  double hull_area = 0;
  if (!corners.empty()) {
    std::vector<cv::Point> hull;
    cv::convexHull(corners, hull);
    hull_area = cv::contourArea(hull);
  }
  *solidity = hull_area > 0 ? static_cast<double>(n.area) / hull_area : 0;
}

std::vector<int> disc_half_widths(int radius) {
  std::vector<int> w(2 * static_cast<std::size_t>(radius) + 1);
  for (int dy = -radius; dy <= radius; ++dy) {
    int x = 0;
    while ((x + 1) * (x + 1) + dy * dy <= radius * radius) ++x;
    w[static_cast<std::size_t>(dy + radius)] = x;
  }
  return w;
}

Result compute(const cv::Mat& rgb, const cv::Mat& labels, const Options& options) {
  check_inputs(rgb, labels);
  const int R = options.ring_px(), L = options.glcm_levels;
  Result res;
  res.nuclei = find_nuclei(labels, options.min_area);
  if (res.nuclei.empty()) return res;
  const Channels ch = derive_channels(rgb);

  const std::vector<int> disc_w = disc_half_widths(R);

  const std::size_t N = res.nuclei.size(), LL = static_cast<std::size_t>(L) * static_cast<std::size_t>(L);
  res.values.assign(N * kFeatureCount, 0.0);
  std::vector<std::uint32_t> hist(kHistCount * kBins), grad(kGradBins), glcm(kDirections * LL);
  std::vector<int> prefix;  // per box row: nucleus pixels left of each halo column
  for (std::size_t i = 0; i < N; ++i) {
    const Nucleus& n = res.nuclei[i];
    std::fill(hist.begin(), hist.end(), 0u);
    std::fill(grad.begin(), grad.end(), 0u);
    std::fill(glcm.begin(), glcm.end(), 0u);
    NucleusSums s{};
    s.box_height = n.bbox_height;
    s.box_width = n.bbox_width;
    s.grad_min2 = std::numeric_limits<std::uint32_t>::max();
    double gsum = 0;
    const int r0 = n.bbox_row, r1 = n.bbox_row + n.bbox_height, c0 = n.bbox_col, c1 = n.bbox_col + n.bbox_width;
    for (int r = r0; r < r1; ++r) {
      const std::int32_t* l = labels.ptr<std::int32_t>(r);
      const std::uint8_t *g = ch.grey.ptr<std::uint8_t>(r), *h = ch.h.ptr<std::uint8_t>(r), *e = ch.e.ptr<std::uint8_t>(r);
      const std::uint8_t* ed = ch.edges.ptr<std::uint8_t>(r);
      for (int c = c0; c < c1; ++c) {
        if (l[c] != n.label) continue;
        const std::uint64_t y = static_cast<std::uint64_t>(r - r0), x = static_cast<std::uint64_t>(c - c0);
        ++s.area;
        s.sr += y, s.sc += x, s.srr += y * y, s.scc += x * x, s.src += y * x;
        s.edges += ed[c] != 0;
        ++hist[kHistH * kBins + h[c]];
        ++hist[kHistE * kBins + e[c]];
        ++hist[kHistGrey * kBins + g[c]];
        const std::uint32_t m2 = sobel_m2(ch.grey, r, c);
        s.grad_min2 = std::min(s.grad_min2, m2);
        s.grad_max2 = std::max(s.grad_max2, m2);
        const double G = std::sqrt(static_cast<double>(m2));
        gsum += G;
        ++grad[static_cast<std::size_t>(G)];
        const std::size_t q = static_cast<std::size_t>((g[c] * L) >> 8);
        for (int d = 0; d < kDirections; ++d) {
          const int rr = r + dir_row(d), cc = c + dir_col(d);
          if (rr < 0 || rr >= labels.rows || cc < 0 || cc >= labels.cols) continue;
          if (labels.at<std::int32_t>(rr, cc) != n.label) continue;
          const std::size_t q2 = static_cast<std::size_t>((ch.grey.at<std::uint8_t>(rr, cc) * L) >> 8);
          ++glcm[static_cast<std::size_t>(d) * LL + q * static_cast<std::size_t>(L) + q2];
        }
      }
    }
    s.grad_mean = gsum / static_cast<double>(s.area);
    for (int r = r0; r < r1; ++r) {
      const std::int32_t* l = labels.ptr<std::int32_t>(r);
      for (int c = c0; c < c1; ++c) {
        if (l[c] != n.label) continue;
        const double d = std::sqrt(static_cast<double>(sobel_m2(ch.grey, r, c))) - s.grad_mean, d2 = d * d;
        s.grad_m2 += d2;
        s.grad_m3 += d2 * d;
        s.grad_m4 += d2 * d2;
      }
    }
    if (R > 0) {
      // Dilation by the disc, row by row: a background pixel is in the ring
      // if some box row dy away has a nucleus pixel within the disc's
      // half-width w(dy) of its column, an O(1) test on that row's prefix
      // counts. (cv::dilate with the disc kernel gives the same set, 5x slower.)
      const int hr0 = std::max(0, r0 - R), hc0 = std::max(0, c0 - R);
      const int hr1 = std::min(labels.rows, r1 + R), hc1 = std::min(labels.cols, c1 + R);
      const int hw = hc1 - hc0;
      const std::size_t stride = static_cast<std::size_t>(hw) + 1;
      prefix.assign(static_cast<std::size_t>(r1 - r0) * stride, 0);
      for (int r = r0; r < r1; ++r) {
        const std::int32_t* l = labels.ptr<std::int32_t>(r);
        int* p = prefix.data() + static_cast<std::size_t>(r - r0) * stride;
        for (int x = 0; x < hw; ++x) p[x + 1] = p[x] + (l[hc0 + x] == n.label);
      }
      for (int r = hr0; r < hr1; ++r) {
        const std::int32_t* l = labels.ptr<std::int32_t>(r);
        const std::uint8_t *g = ch.grey.ptr<std::uint8_t>(r), *h = ch.h.ptr<std::uint8_t>(r), *e = ch.e.ptr<std::uint8_t>(r);
        const int dy0 = std::max(-R, r0 - r), dy1 = std::min(R, r1 - 1 - r);
        for (int c = hc0; c < hc1; ++c) {
          if (l[c] > 0) continue;
          bool near = false;
          const int x = c - hc0;
          for (int dy = dy0; dy <= dy1 && !near; ++dy) {
            const int w = disc_w[static_cast<std::size_t>(dy + R)];
            const int* p = prefix.data() + static_cast<std::size_t>(r + dy - r0) * stride;
            near = p[std::min(hw, x + w + 1)] > p[std::max(0, x - w)];
          }
          if (!near) continue;
          ++s.ring_area;
          ++hist[kHistRingH * kBins + h[c]];
          ++hist[kHistRingE * kBins + e[c]];
          ++hist[kHistRingGrey * kBins + g[c]];
        }
      }
    }
    Counts hc[kHistCount];
    for (int k = 0; k < kHistCount; ++k) hc[k] = Counts{hist.data() + k * kBins, 1};
    double* row = res.values.data() + i * kFeatureCount;
    finish_nucleus(s, hc, Counts{grad.data(), 1}, Counts{glcm.data(), 1}, L, row);
    contour_shape(labels, n, &row[kPerimeter], &row[kSolidity]);
    row[kCircularity] = circularity(row[kArea], row[kPerimeter]);
  }
  return res;
}

}  // namespace flowd::nuclei::features

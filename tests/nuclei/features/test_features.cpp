// nuclei features, CPU variant: shapes against analytic values, statistics
// against direct computations on the pixels, Haralick features against the
// classic 4x4 example, the cytoplasm ring against a brute-force definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "features/features.hpp"
#include "features_test_util.hpp"

namespace ft = flowd::nuclei::features;
using ft::ftest::neutral;

namespace {

constexpr double kPi = 3.14159265358979323846;

ft::Result one(const cv::Mat& rgb, const cv::Mat& labels, ft::Options o = {}) {
  return ft::compute(rgb, labels, o);
}

// Direct statistics of a list of values, as features.hpp defines them.
struct Direct {
  double mean = 0, sd = 0, min = 0, max = 0, q[3] = {0, 0, 0}, skew = 0, kurt = 0;
};
Direct direct(std::vector<double> v) {
  Direct d;
  const double n = static_cast<double>(v.size());
  std::sort(v.begin(), v.end());
  for (double x : v) d.mean += x;
  d.mean /= n;
  double m2 = 0, m3 = 0, m4 = 0;
  for (double x : v) m2 += (x - d.mean) * (x - d.mean), m3 += std::pow(x - d.mean, 3), m4 += std::pow(x - d.mean, 4);
  m2 /= n, m3 /= n, m4 /= n;
  d.sd = std::sqrt(m2);
  d.min = v.front(), d.max = v.back();
  for (int k = 1; k <= 3; ++k) d.q[k - 1] = v[static_cast<std::size_t>(std::ceil(k * n / 4.0)) - 1];
  d.skew = m2 > 0 ? m3 / std::pow(m2, 1.5) : 0;
  d.kurt = m2 > 0 ? m4 / (m2 * m2) - 3 : 0;
  return d;
}

double entropy_bits(const std::vector<int>& values) {
  std::map<int, int> h;
  for (int v : values) ++h[v];
  double e = 0;
  for (const auto& [v, c] : h) {
    const double p = static_cast<double>(c) / static_cast<double>(values.size());
    e -= p * std::log2(p);
  }
  return e;
}

void expect_stats(const ft::Result& r, std::size_t i, int block, const std::vector<int>& values, const char* what) {
  std::vector<double> v(values.begin(), values.end());
  const Direct d = direct(v);
  const double tol = 1e-9;
  EXPECT_NEAR(r.at(i, block + ft::kMean), d.mean, tol) << what;
  EXPECT_NEAR(r.at(i, block + ft::kStd), d.sd, tol) << what;
  EXPECT_EQ(r.at(i, block + ft::kMin), d.min) << what;
  EXPECT_EQ(r.at(i, block + ft::kMax), d.max) << what;
  EXPECT_EQ(r.at(i, block + ft::kQ1), d.q[0]) << what;
  EXPECT_EQ(r.at(i, block + ft::kMedian), d.q[1]) << what;
  EXPECT_EQ(r.at(i, block + ft::kQ3), d.q[2]) << what;
  EXPECT_NEAR(r.at(i, block + ft::kSkewness), d.skew, 1e-9) << what;
  EXPECT_NEAR(r.at(i, block + ft::kKurtosis), d.kurt, 1e-9) << what;
  EXPECT_NEAR(r.at(i, block + ft::kEntropy), entropy_bits(values), 1e-9) << what;
}

}  // namespace

TEST(NucleiFeatures, NamesAreUniqueAndComplete) {
  const auto& names = ft::feature_names();
  ASSERT_EQ(names.size(), static_cast<std::size_t>(ft::kFeatureCount));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(names[ft::kArea], "area");
  EXPECT_EQ(names[ft::kH + ft::kMean], "h_mean");
  EXPECT_EQ(names[ft::kGlcm + ft::kContrast], "glcm_contrast");
  EXPECT_EQ(names[ft::kRingGrey + ft::kEntropy], "ring_grey_entropy");
  EXPECT_EQ(names[ft::kCannyFraction], "canny_fraction");
  EXPECT_EQ(names[ft::kRingArea], "ring_area");
}

// A digital disc of radius 20: area within 1% of pi r^2; axes 2r within 1%
// (the 1/12 term makes regionprops' axes unbiased for discs); eccentricity
// and orientation exactly 0 (the pixel set is symmetric); perimeter (through
// pixel centres, 8-chain) within 5% of 2 pi r; solidity in [0.95, 1].
TEST(NucleiFeatures, DiscShape) {
  const int r = 20;
  cv::Mat labels = cv::Mat::zeros(64, 64, CV_32S);
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x)
      if ((y - 32) * (y - 32) + (x - 30) * (x - 30) <= r * r) labels.at<int>(y, x) = 7;
  const ft::Result res = one(neutral(64, 64, 128), labels);
  ASSERT_EQ(res.nuclei.size(), 1u);
  EXPECT_EQ(res.nuclei[0].label, 7);
  EXPECT_DOUBLE_EQ(res.nuclei[0].centroid_row, 32);
  EXPECT_DOUBLE_EQ(res.nuclei[0].centroid_col, 30);
  EXPECT_EQ(res.nuclei[0].bbox_row, 12);
  EXPECT_EQ(res.nuclei[0].bbox_height, 41);
  const double area = res.at(0, ft::kArea);
  EXPECT_EQ(area, static_cast<double>(cv::countNonZero(labels)));
  EXPECT_NEAR(area, kPi * r * r, 0.01 * kPi * r * r);
  EXPECT_NEAR(res.at(0, ft::kEquivDiameter), 2 * r, 0.01 * 2 * r);
  EXPECT_NEAR(res.at(0, ft::kMajorAxis), 2 * r, 0.01 * 2 * r);
  EXPECT_NEAR(res.at(0, ft::kMinorAxis), 2 * r, 0.01 * 2 * r);
  EXPECT_DOUBLE_EQ(res.at(0, ft::kMajorAxis), res.at(0, ft::kMinorAxis));
  EXPECT_EQ(res.at(0, ft::kEccentricity), 0);
  EXPECT_EQ(res.at(0, ft::kOrientation), 0);
  EXPECT_NEAR(res.at(0, ft::kPerimeter), 2 * kPi * r, 0.05 * 2 * kPi * r);
  EXPECT_GE(res.at(0, ft::kSolidity), 0.95);
  EXPECT_LE(res.at(0, ft::kSolidity), 1.0);
  EXPECT_DOUBLE_EQ(res.at(0, ft::kExtent), area / (41.0 * 41.0));
  EXPECT_NEAR(res.at(0, ft::kCircularity), 1.0, 0.1);
}

// An ellipse with semi-axes 30 and 12 rotated 30 degrees counter-clockwise
// (rows grow downwards): axes within 1.5%, eccentricity within 1%,
// orientation within 1 degree, perimeter within 5% of Ramanujan's value.
TEST(NucleiFeatures, EllipseShape) {
  const double a = 30, b = 12, theta = 30 * kPi / 180;
  cv::Mat labels = cv::Mat::zeros(100, 100, CV_32S);
  for (int row = 0; row < 100; ++row)
    for (int col = 0; col < 100; ++col) {
      const double x = col - 50.0, y = -(row - 50.0);
      const double u = x * std::cos(theta) + y * std::sin(theta), v = -x * std::sin(theta) + y * std::cos(theta);
      if ((u / a) * (u / a) + (v / b) * (v / b) <= 1) labels.at<int>(row, col) = 1;
    }
  const ft::Result res = one(neutral(100, 100, 100), labels);
  ASSERT_EQ(res.nuclei.size(), 1u);
  EXPECT_NEAR(res.at(0, ft::kArea), kPi * a * b, 0.01 * kPi * a * b);
  EXPECT_NEAR(res.at(0, ft::kMajorAxis), 2 * a, 0.015 * 2 * a);
  EXPECT_NEAR(res.at(0, ft::kMinorAxis), 2 * b, 0.015 * 2 * b);
  const double ecc = std::sqrt(1 - b * b / (a * a));
  EXPECT_NEAR(res.at(0, ft::kEccentricity), ecc, 0.01 * ecc);
  EXPECT_NEAR(res.at(0, ft::kOrientation), 30, 1);
  const double h = (a - b) * (a - b) / ((a + b) * (a + b));
  const double ramanujan = kPi * (a + b) * (1 + 3 * h / (10 + std::sqrt(4 - 3 * h)));
  EXPECT_NEAR(res.at(0, ft::kPerimeter), ramanujan, 0.05 * ramanujan);
  EXPECT_GT(res.at(0, ft::kSolidity), 0.95);
  EXPECT_LE(res.at(0, ft::kSolidity), 1.0);

  // Mirrored (rows flipped), the orientation changes sign.
  cv::Mat flipped;
  cv::flip(labels, flipped, 0);
  const ft::Result mirrored = one(neutral(100, 100, 100), flipped);
  EXPECT_NEAR(mirrored.at(0, ft::kOrientation), -res.at(0, ft::kOrientation), 1e-9);
}

// Exact values for a rectangle: solidity and extent 1, perimeter
// 2 (w - 1) + 2 (h - 1) through the pixel centres, orientation 0 for a wide
// one and 90 for a tall one; a single pixel has perimeter and circularity 0.
TEST(NucleiFeatures, RectangleAndPixel) {
  cv::Mat labels = cv::Mat::zeros(40, 40, CV_32S);
  labels(cv::Rect(5, 4, 20, 8)).setTo(1);   // 20 wide, 8 tall
  labels(cv::Rect(30, 10, 4, 25)).setTo(2);  // 4 wide, 25 tall
  labels.at<int>(38, 1) = 3;
  const ft::Result res = one(neutral(40, 40, 90), labels);
  ASSERT_EQ(res.nuclei.size(), 3u);
  EXPECT_DOUBLE_EQ(res.at(0, ft::kSolidity), 1);
  EXPECT_DOUBLE_EQ(res.at(0, ft::kExtent), 1);
  EXPECT_NEAR(res.at(0, ft::kPerimeter), 2 * 19 + 2 * 7, 1e-12);
  EXPECT_EQ(res.at(0, ft::kOrientation), 0);
  EXPECT_NEAR(res.at(1, ft::kOrientation), 90, 1e-12);
  // A w x h rectangle: variance + 1/12 = w^2 / 12 along a side, so the axes
  // of the ellipse with the same moments are 4 w / sqrt(12) and 4 h / sqrt(12).
  EXPECT_NEAR(res.at(0, ft::kMajorAxis), 4 * 20 / std::sqrt(12.0), 1e-9);
  EXPECT_NEAR(res.at(0, ft::kMinorAxis), 4 * 8 / std::sqrt(12.0), 1e-9);
  EXPECT_EQ(res.at(2, ft::kArea), 1);
  EXPECT_EQ(res.at(2, ft::kPerimeter), 0);
  EXPECT_EQ(res.at(2, ft::kCircularity), 0);
  EXPECT_DOUBLE_EQ(res.at(2, ft::kSolidity), 1);
  for (int f = 0; f < ft::kHaralickCount; ++f) EXPECT_EQ(res.at(2, ft::kGlcm + f), 0) << f;
}

// Grey is OpenCV's RGB2GRAY, the gradient OpenCV's Sobel with the default
// (mirrored) border, the edges OpenCV's Canny.
TEST(NucleiFeatures, DerivedChannelsMatchOpenCV) {
  const cv::Mat rgb = ft::ftest::random_tissue(37, 53, 3);
  const ft::Channels ch = ft::derive_channels(rgb);
  cv::Mat grey;
  cv::cvtColor(rgb, grey, cv::COLOR_RGB2GRAY);
  EXPECT_EQ(cv::countNonZero(grey != ch.grey), 0);
  cv::Mat edges;
  cv::Canny(grey, edges, ft::kCannyLow, ft::kCannyHigh, 3, true);
  EXPECT_EQ(cv::countNonZero(edges != ch.edges), 0);
}

// A pixel of pure haematoxylin colour is all H, and pure eosin all E.
TEST(NucleiFeatures, DeconvolutionSeparatesStains) {
  const auto pixel = [](double r, double g, double b, double c) {
    const double n = std::sqrt(r * r + g * g + b * b);
    const auto v = [&](double od) { return cv::saturate_cast<std::uint8_t>(256 * std::pow(10.0, -c * od / n) - 1); };
    return cv::Vec3b(v(r), v(g), v(b));
  };
  cv::Mat rgb(1, 2, CV_8UC3);
  rgb.at<cv::Vec3b>(0, 0) = pixel(0.644211, 0.716556, 0.266844, 1.0);
  rgb.at<cv::Vec3b>(0, 1) = pixel(0.092789, 0.954111, 0.283111, 1.0);
  const ft::Channels ch = ft::derive_channels(rgb);
  const int one = static_cast<int>(std::lround(255 / ft::kOdMax));
  EXPECT_NEAR(ch.h.at<std::uint8_t>(0, 0), one, 3);
  EXPECT_LE(ch.e.at<std::uint8_t>(0, 0), 3);
  EXPECT_NEAR(ch.e.at<std::uint8_t>(0, 1), one, 3);
  EXPECT_LE(ch.h.at<std::uint8_t>(0, 1), 3);
}

// Every intensity statistic against a direct computation on the pixels of
// each nucleus and of its ring.
TEST(NucleiFeatures, IntensityStatisticsMatchDirectComputation) {
  const cv::Mat rgb = ft::ftest::random_tissue(120, 140, 11);
  const cv::Mat labels = ft::ftest::random_labels(120, 140, 12, 25, 21);
  ft::Options o;
  o.ring_um = 1.5;  // 6 px
  const ft::Result res = ft::compute(rgb, labels, o);
  ASSERT_GE(res.nuclei.size(), 5u);
  const ft::Channels ch = ft::derive_channels(rgb);
  cv::Mat grey = ch.grey, gx, gy;
  cv::Sobel(grey, gx, CV_16S, 1, 0, 3);
  cv::Sobel(grey, gy, CV_16S, 0, 1, 3);
  const int R = 6;
  for (std::size_t i = 0; i < res.nuclei.size(); ++i) {
    const auto& n = res.nuclei[i];
    std::vector<int> h, e, g, rh, re, rg, gfloor;
    std::vector<double> G;
    std::int64_t edges = 0;
    for (int y = 0; y < labels.rows; ++y)
      for (int x = 0; x < labels.cols; ++x) {
        if (labels.at<int>(y, x) == n.label) {
          h.push_back(ch.h.at<std::uint8_t>(y, x));
          e.push_back(ch.e.at<std::uint8_t>(y, x));
          g.push_back(grey.at<std::uint8_t>(y, x));
          const double gxv = gx.at<short>(y, x), gyv = gy.at<short>(y, x);
          G.push_back(std::sqrt(gxv * gxv + gyv * gyv));
          gfloor.push_back(static_cast<int>(G.back()));
          edges += ch.edges.at<std::uint8_t>(y, x) != 0;
        } else if (labels.at<int>(y, x) == 0) {
          bool near = false;
          for (int dy = -R; dy <= R && !near; ++dy)
            for (int dx = -R; dx <= R && !near; ++dx) {
              const int yy = y + dy, xx = x + dx;
              near = dy * dy + dx * dx <= R * R && yy >= 0 && yy < labels.rows && xx >= 0 && xx < labels.cols &&
                     labels.at<int>(yy, xx) == n.label;
            }
          if (!near) continue;
          rh.push_back(ch.h.at<std::uint8_t>(y, x));
          re.push_back(ch.e.at<std::uint8_t>(y, x));
          rg.push_back(grey.at<std::uint8_t>(y, x));
        }
      }
    SCOPED_TRACE("label " + std::to_string(n.label));
    expect_stats(res, i, ft::kH, h, "h");
    expect_stats(res, i, ft::kE, e, "e");
    expect_stats(res, i, ft::kGrey, g, "grey");
    ASSERT_FALSE(rg.empty());
    EXPECT_EQ(res.at(i, ft::kRingArea), static_cast<double>(rg.size()));
    expect_stats(res, i, ft::kRingH, rh, "ring h");
    expect_stats(res, i, ft::kRingE, re, "ring e");
    expect_stats(res, i, ft::kRingGrey, rg, "ring grey");
    const Direct d = direct(G);
    EXPECT_NEAR(res.at(i, ft::kGrad + ft::kMean), d.mean, 1e-9 * d.mean);
    EXPECT_NEAR(res.at(i, ft::kGrad + ft::kStd), d.sd, 1e-9 * d.sd);
    EXPECT_DOUBLE_EQ(res.at(i, ft::kGrad + ft::kMin), d.min);
    EXPECT_DOUBLE_EQ(res.at(i, ft::kGrad + ft::kMax), d.max);
    EXPECT_NEAR(res.at(i, ft::kGrad + ft::kSkewness), d.skew, 1e-8);
    EXPECT_NEAR(res.at(i, ft::kGrad + ft::kKurtosis), d.kurt, 1e-8);
    const Direct df = direct(std::vector<double>(gfloor.begin(), gfloor.end()));
    EXPECT_EQ(res.at(i, ft::kGrad + ft::kQ1), df.q[0]);
    EXPECT_EQ(res.at(i, ft::kGrad + ft::kMedian), df.q[1]);
    EXPECT_EQ(res.at(i, ft::kGrad + ft::kQ3), df.q[2]);
    EXPECT_NEAR(res.at(i, ft::kGrad + ft::kEntropy), entropy_bits(gfloor), 1e-9);
    EXPECT_DOUBLE_EQ(res.at(i, ft::kCannyFraction), static_cast<double>(edges) / static_cast<double>(h.size()));
  }
}

// The classic 4x4 example (Haralick 1973; Hall-Beyer's GLCM tutorial): the
// horizontal symmetric matrix is [[4,2,1,0],[2,4,0,0],[1,0,6,1],[0,0,1,2]] / 24,
// so its contrast is 14/24 and its ASM 84/576. The averages over the four
// directions were computed by hand-written code (no library) from the same
// definitions, HXY2 from the full double sum rather than HX + HY.
TEST(NucleiFeatures, HaralickClassicExample) {
  const int levels[4][4] = {{0, 0, 1, 1}, {0, 0, 1, 1}, {0, 2, 2, 2}, {2, 2, 3, 3}};
  cv::Mat rgb(4, 4, CV_8UC3);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) {
      const auto v = static_cast<std::uint8_t>(levels[y][x] * 64 + 10);  // grey = v, level = floor(v * 4 / 256)
      rgb.at<cv::Vec3b>(y, x) = cv::Vec3b(v, v, v);
    }
  const cv::Mat labels(4, 4, CV_32S, cv::Scalar(1));
  ft::Options o;
  o.glcm_levels = 4;
  const ft::Result res = ft::compute(rgb, labels, o);
  ASSERT_EQ(res.nuclei.size(), 1u);

  // One direction alone, through haralick() on counts.
  std::vector<std::uint32_t> counts(4 * 16, 0);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x + 1 < 4; ++x) ++counts[static_cast<std::size_t>(levels[y][x] * 4 + levels[y][x + 1])];
  double one_dir[ft::kHaralickCount];
  ft::haralick(ft::Counts{counts.data(), 1}, 4, one_dir);
  EXPECT_NEAR(one_dir[ft::kContrast], 14.0 / 24, 1e-12);
  EXPECT_NEAR(one_dir[ft::kAsm], 84.0 / 576, 1e-12);

  const double expected[ft::kHaralickCount] = {
      0.13753858024691357, 0.9513888888888888, 0.5258329138232135, 0.9783468364197532, 0.6993055555555556,
      4.451388888888888,   2.9619984567901234, 1.595961335667993,  2.11218805342292,   0.43885030864197533,
      0.8957955012409446,  -0.3649013827463317, 0.7792142219202038};
  for (int f = 0; f < ft::kHaralickCount; ++f)
    EXPECT_NEAR(res.at(0, ft::kGlcm + f), expected[f], 1e-12) << ft::feature_names()[static_cast<std::size_t>(ft::kGlcm + f)];
}

// A constant nucleus: correlation 1 by convention, entropies and IMC 0.
TEST(NucleiFeatures, HaralickConstantRegion) {
  const cv::Mat labels(6, 6, CV_32S, cv::Scalar(1));
  const ft::Result res = ft::compute(neutral(6, 6, 77), labels, {});
  EXPECT_EQ(res.at(0, ft::kGlcm + ft::kCorrelation), 1);
  EXPECT_DOUBLE_EQ(res.at(0, ft::kGlcm + ft::kAsm), 1);
  EXPECT_EQ(res.at(0, ft::kGlcm + ft::kGlcmEntropy), 0);
  EXPECT_EQ(res.at(0, ft::kGlcm + ft::kImc1), 0);
  EXPECT_EQ(res.at(0, ft::kGlcm + ft::kImc2), 0);
  EXPECT_EQ(res.at(0, ft::kGrey + ft::kStd), 0);
  EXPECT_EQ(res.at(0, ft::kGrey + ft::kSkewness), 0);
  EXPECT_EQ(res.at(0, ft::kRingArea), 0);  // the whole tile is nucleus
}

// The ring holds only background: a neighbour inside the ring's reach takes
// its pixels away, and the ring's intensities are the background's.
TEST(NucleiFeatures, RingExcludesOtherNuclei) {
  cv::Mat labels = cv::Mat::zeros(60, 60, CV_32S);
  labels(cv::Rect(20, 20, 10, 10)).setTo(1);
  cv::Mat rgb = neutral(60, 60, 200);
  rgb.setTo(cv::Vec3b(40, 40, 40), labels == 1);
  ft::Options o;  // ring 2 um / 0.25 mpp = 8 px
  const ft::Result alone = ft::compute(rgb, labels, o);
  labels(cv::Rect(33, 18, 6, 14)).setTo(2);  // 3 px right of nucleus 1
  rgb.setTo(cv::Vec3b(90, 90, 90), labels == 2);
  const ft::Result both = ft::compute(rgb, labels, o);
  ASSERT_EQ(both.nuclei.size(), 2u);
  // Brute force: background pixels within 8 px of nucleus 1.
  int expected = 0, overlap = 0;
  for (int y = 0; y < 60; ++y)
    for (int x = 0; x < 60; ++x) {
      bool near = false;
      for (int yy = 20; yy < 30; ++yy)
        for (int xx = 20; xx < 30; ++xx) near |= (y - yy) * (y - yy) + (x - xx) * (x - xx) <= 64;
      if (!near || labels.at<int>(y, x) == 1) continue;
      if (labels.at<int>(y, x) == 2) ++overlap;
      else ++expected;
    }
  EXPECT_GT(overlap, 0);
  EXPECT_EQ(both.at(0, ft::kRingArea), expected);
  EXPECT_EQ(alone.at(0, ft::kRingArea), expected + overlap);
  EXPECT_EQ(both.at(0, ft::kRingGrey + ft::kMin), 200);
  EXPECT_EQ(both.at(0, ft::kRingGrey + ft::kMax), 200);
  EXPECT_EQ(both.at(0, ft::kGrey + ft::kMean), 40);

  o.ring_um = 0;
  EXPECT_EQ(ft::compute(rgb, labels, o).at(0, ft::kRingArea), 0);
}

TEST(NucleiFeatures, LabelsFilteredAndSparse) {
  cv::Mat labels = cv::Mat::zeros(30, 30, CV_32S);
  labels(cv::Rect(2, 2, 5, 5)).setTo(1000000000);
  labels(cv::Rect(20, 20, 2, 2)).setTo(5);
  labels(cv::Rect(10, 10, 3, 3)).setTo(-4);  // negative: background
  ft::Options o;
  o.min_area = 5;
  const ft::Result res = ft::compute(neutral(30, 30, 50), labels, o);
  ASSERT_EQ(res.nuclei.size(), 1u);
  EXPECT_EQ(res.nuclei[0].label, 1000000000);
  EXPECT_EQ(res.at(0, ft::kArea), 25);
  EXPECT_TRUE(ft::compute(neutral(30, 30, 50), cv::Mat::zeros(30, 30, CV_32S), o).nuclei.empty());
}

TEST(NucleiFeatures, RejectsBadInput) {
  const cv::Mat labels = cv::Mat::zeros(8, 8, CV_32S);
  EXPECT_THROW(ft::compute(neutral(8, 9, 1), labels, {}), std::invalid_argument);
  EXPECT_THROW(ft::compute(cv::Mat::zeros(8, 8, CV_8U), labels, {}), std::invalid_argument);
  ft::Options o;
  o.glcm_levels = ft::kMaxLevels + 1;
  EXPECT_THROW(ft::compute(neutral(8, 8, 1), labels, o), std::invalid_argument);
  o = {};
  o.mpp = 0;
  EXPECT_THROW(ft::compute(neutral(8, 8, 1), labels, o), std::invalid_argument);
}

// Boxes cut by the tile's edge: the Sobel mirror and the GLCM's neighbours
// stay inside the tile (compared with the same nucleus padded by background).
TEST(NucleiFeatures, NucleusAtTileEdge) {
  cv::Mat labels = cv::Mat::zeros(20, 20, CV_32S);
  labels(cv::Rect(0, 0, 6, 5)).setTo(3);
  const cv::Mat rgb = ft::ftest::random_tissue(20, 20, 5);
  const ft::Result res = ft::compute(rgb, labels, {});
  ASSERT_EQ(res.nuclei.size(), 1u);
  EXPECT_EQ(res.at(0, ft::kArea), 30);
  EXPECT_DOUBLE_EQ(res.at(0, ft::kSolidity), 1);
  EXPECT_GT(res.at(0, ft::kRingArea), 0);
}

// The GPU stores counts bin-major across nuclei (Counts with a stride); the
// shared arithmetic must read them as the CPU's contiguous arrays.
TEST(NucleiFeatures, StridedCountsReadLikeContiguous) {
  std::mt19937 rng(3);
  const int L = 5, words = ft::kDirections * L * L;
  std::vector<std::uint32_t> a(static_cast<std::size_t>(words)), b(a.size()), both(2 * a.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    a[k] = rng() % 7, b[k] = rng() % 3;
    both[2 * k] = a[k], both[2 * k + 1] = b[k];
  }
  double ca[ft::kHaralickCount], cb[ft::kHaralickCount], sa[ft::kHaralickCount], sb[ft::kHaralickCount];
  ft::haralick(ft::Counts{a.data(), 1}, L, ca);
  ft::haralick(ft::Counts{b.data(), 1}, L, cb);
  ft::haralick(ft::Counts{both.data(), 2}, L, sa);
  ft::haralick(ft::Counts{both.data() + 1, 2}, L, sb);
  for (int f = 0; f < ft::kHaralickCount; ++f) {
    EXPECT_EQ(ca[f], sa[f]) << f;
    EXPECT_EQ(cb[f], sb[f]) << f;
  }
}

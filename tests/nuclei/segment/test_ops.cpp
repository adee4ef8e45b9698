// Each segmentation operation against its definition (reference.hpp) and,
// where OpenCV computes the same thing, against OpenCV.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <opencv2/imgproc.hpp>

#include "reference.hpp"
#include "segment/segment.hpp"
#include "same_mat.hpp"

namespace fn = flowd::nuclei;

using flowd::nuclei::test::same;

namespace {

// A mask of random overlapping discs plus salt noise.
cv::Mat random_mask(std::mt19937& rng, int rows, int cols, int discs, double salt = 0.02) {
  cv::Mat m(rows, cols, CV_8U, cv::Scalar(0));
  std::uniform_int_distribution<int> ry(0, rows - 1), rx(0, cols - 1), rr(1, std::max(1, std::min(rows, cols) / 4));
  for (int i = 0; i < discs; ++i) cv::circle(m, {rx(rng), ry(rng)}, rr(rng), cv::Scalar(255), cv::FILLED);
  std::bernoulli_distribution s(salt);
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x)
      if (s(rng)) m.at<std::uint8_t>(y, x) ^= 255;
  return m;
}

cv::Mat random_grey(std::mt19937& rng, int rows, int cols, int levels = 256) {
  cv::Mat m(rows, cols, CV_8U);
  std::uniform_int_distribution<int> v(0, levels - 1);
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x) m.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(v(rng) * 255 / std::max(1, levels - 1));
  return m;
}

cv::Mat random_rgb(std::mt19937& rng, int rows, int cols) {
  cv::Mat m(rows, cols, CV_8UC3);
  cv::randu(m, cv::Scalar::all(0), cv::Scalar::all(256));
  (void)rng;
  return m;
}

const cv::Size sizes[] = {{1, 1}, {7, 1}, {1, 9}, {13, 11}, {32, 17}, {40, 40}};

}  // namespace

TEST(NucleiSegment, TissueAndRbcMatchDefinition) {
  std::mt19937 rng(1);
  cv::theRNG().state = 7;
  const cv::Mat rgb = random_rgb(rng, 31, 29);
  const cv::Mat t = fn::tissue_mask(rgb, 200), r = fn::rbc_mask(rgb, 400, 300, 200);
  for (int y = 0; y < rgb.rows; ++y)
    for (int x = 0; x < rgb.cols; ++x) {
      const auto p = rgb.at<cv::Vec3b>(y, x);
      const int R = p[0], G = p[1], B = p[2];
      EXPECT_EQ(t.at<std::uint8_t>(y, x), R + G + B < 600 ? 255 : 0);
      EXPECT_EQ(r.at<std::uint8_t>(y, x), (256 * R >= 400 * G && 256 * R >= 300 * B && R + G + B < 600) ? 255 : 0);
    }
}

TEST(NucleiSegment, StainWeightsInvertTheStainMatrix) {
  // Pure haematoxylin OD (its normalised vector) must give concentration 1
  // of haematoxylin and 0 of eosin.
  const double h[3] = {0.644211, 0.716556, 0.266844};
  const double n = std::sqrt(h[0] * h[0] + h[1] * h[1] + h[2] * h[2]);
  const auto H = fn::stain_weights(0, 1.0), E = fn::stain_weights(1, 1.0);
  double ch = 0, ce = 0;
  for (int c = 0; c < 3; ++c) {
    ch += H.w[static_cast<std::size_t>(c)] * h[c] / n;
    ce += E.w[static_cast<std::size_t>(c)] * h[c] / n;
  }
  EXPECT_NEAR(ch, 1.0, 1e-5);
  EXPECT_NEAR(ce, 0.0, 1e-5);
  EXPECT_FLOAT_EQ(H.scale, 255.0f);
  EXPECT_EQ(H.lut[255], 0.0f);
  EXPECT_EQ(H.lut[0], static_cast<float>(-std::log10(1 / 256.0)));
}

TEST(NucleiSegment, DeconvolveMatchesFormula) {
  std::mt19937 rng(2);
  cv::theRNG().state = 3;
  const cv::Mat big = random_rgb(rng, 40, 50);
  const cv::Mat rgb = big(cv::Rect(3, 5, 37, 21));  // non-contiguous ROI
  for (int stain = 0; stain < 2; ++stain) {
    const auto sw = fn::stain_weights(stain, 1.7);
    const cv::Mat out = fn::deconvolve(rgb, sw);
    for (int y = 0; y < rgb.rows; ++y)
      for (int x = 0; x < rgb.cols; ++x) {
        const auto p = rgb.at<cv::Vec3b>(y, x);
        volatile float a = sw.w[0] * sw.lut[p[0]];
        volatile float b = sw.w[1] * sw.lut[p[1]];
        volatile float c = sw.w[2] * sw.lut[p[2]];
        volatile float s = a + b;
        s = s + c;
        volatile float q = s * sw.scale;
        const int expect = q <= 0 ? 0 : q >= 255 ? 255 : static_cast<int>(q + 0.5f);
        ASSERT_EQ(out.at<std::uint8_t>(y, x), expect) << y << "," << x;
      }
  }
}

TEST(NucleiSegment, DiskHalfWidthsDescribeOpenCVsEllipse) {
  for (int r = 0; r <= 25; ++r) {
    const auto half = fn::disk_half_widths(r);
    const cv::Mat se = cv::getStructuringElement(cv::MORPH_ELLIPSE, {2 * r + 1, 2 * r + 1});
    ASSERT_EQ(half.size(), static_cast<std::size_t>(2 * r + 1));
    for (int y = 0; y <= 2 * r; ++y)
      for (int x = 0; x <= 2 * r; ++x)
        EXPECT_EQ(se.at<std::uint8_t>(y, x) != 0, std::abs(x - r) <= half[static_cast<std::size_t>(y)]);
  }
}

TEST(NucleiSegment, OpenMatchesOpenCV) {
  std::mt19937 rng(3);
  for (const int r : {0, 1, 2, 3, 5, 8, 13}) {
    for (const auto sz : sizes) {
      const cv::Mat g = random_grey(rng, sz.height, sz.width);
      cv::Mat expect;
      cv::morphologyEx(g, expect, cv::MORPH_OPEN, cv::getStructuringElement(cv::MORPH_ELLIPSE, {2 * r + 1, 2 * r + 1}));
      EXPECT_TRUE(same(fn::open(g, r), expect)) << "r=" << r << " size=" << sz;
    }
  }
  const cv::Mat big = random_grey(rng, 60, 70);
  const cv::Mat roi = big(cv::Rect(5, 7, 50, 40));
  cv::Mat expect;
  // OpenCV reads a ROI's surroundings as its border; the definition ignores them.
  cv::morphologyEx(roi.clone(), expect, cv::MORPH_OPEN, cv::getStructuringElement(cv::MORPH_ELLIPSE, {9, 9}));
  EXPECT_TRUE(same(fn::open(roi, 4), expect));
  EXPECT_TRUE(fn::open(cv::Mat(0, 0, CV_8U), 3).empty());
}

TEST(NucleiSegment, ReconstructMatchesIteration) {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 30; ++trial) {
    const auto sz = sizes[static_cast<std::size_t>(trial) % std::size(sizes)];
    const int levels = trial % 3 == 0 ? 4 : 256;  // few levels: many plateaus and ties
    const cv::Mat mask = random_grey(rng, sz.height, sz.width, levels);
    const cv::Mat marker = random_grey(rng, sz.height, sz.width, levels) / 3;
    EXPECT_TRUE(same(fn::reconstruct(marker, mask), ref::reconstruct<std::uint8_t>(marker, mask))) << trial;
    cv::Mat fm, fk;
    marker.convertTo(fm, CV_32F, 0.37, -4);
    mask.convertTo(fk, CV_32F, 0.41, -2);
    EXPECT_TRUE(same(fn::reconstruct(fm, fk), ref::reconstruct<float>(fm, fk))) << trial;
  }
  // Binary: reconstruction of seed pixels keeps exactly the touched components.
  const cv::Mat m = random_mask(rng, 50, 60, 8);
  cv::Mat seeds(m.size(), CV_8U, cv::Scalar(0));
  seeds.at<std::uint8_t>(25, 30) = 255;
  seeds.at<std::uint8_t>(3, 3) = 255;
  EXPECT_TRUE(same(fn::reconstruct(seeds, m), ref::reconstruct<std::uint8_t>(seeds, m)));
  // ROI inputs and a marker above the mask.
  const cv::Mat big = random_grey(rng, 40, 40);
  const cv::Mat a = big(cv::Rect(1, 2, 30, 20)), b = big(cv::Rect(5, 9, 30, 20));
  EXPECT_TRUE(same(fn::reconstruct(a, b), ref::reconstruct<std::uint8_t>(a, b)));
  EXPECT_TRUE(fn::reconstruct(cv::Mat(0, 0, CV_8U), cv::Mat(0, 0, CV_8U)).empty());
}

TEST(NucleiSegment, AreaThresholdAndLabelMatchDefinition) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const auto sz = sizes[static_cast<std::size_t>(trial) % std::size(sizes)];
    const cv::Mat m = random_mask(rng, sz.height, sz.width, 4, 0.2);
    int n = -1, rn = -2;
    const cv::Mat l = fn::label(m, &n), rl = ref::label(m, &rn);
    EXPECT_EQ(n, rn);
    EXPECT_TRUE(same(l, rl)) << trial;
    for (const auto& [lo, hi] : {std::pair{1, 0}, {3, 0}, {2, 10}, {5, 5}, {50, 0}})
      EXPECT_TRUE(same(fn::area_threshold(m, lo, hi), ref::area_threshold(m, lo, hi))) << trial << " " << lo << " " << hi;
  }
  const cv::Mat all(5, 7, CV_8U, cv::Scalar(255));
  int n = 0;
  EXPECT_TRUE(same(fn::label(all, &n), cv::Mat(5, 7, CV_32S, cv::Scalar(1))));
  EXPECT_EQ(n, 1);
  EXPECT_EQ(cv::countNonZero(fn::label(cv::Mat(4, 4, CV_8U, cv::Scalar(0)), &n)), 0);
  EXPECT_EQ(n, 0);
  EXPECT_TRUE(fn::label(cv::Mat(0, 0, CV_8U), &n).empty());
}

TEST(NucleiSegment, FillHolesMatchesDefinition) {
  std::mt19937 rng(6);
  for (int trial = 0; trial < 20; ++trial) {
    const auto sz = sizes[static_cast<std::size_t>(trial) % std::size(sizes)];
    const cv::Mat m = random_mask(rng, sz.height, sz.width, 6, 0.3);
    EXPECT_TRUE(same(fn::fill_holes(m), ref::fill_holes(m))) << trial;
  }
  // A diagonal gap does not connect a hole to the outside (4-connected background).
  cv::Mat ring(5, 5, CV_8U, cv::Scalar(0));
  cv::rectangle(ring, {1, 1}, {3, 3}, cv::Scalar(255));
  ring.at<std::uint8_t>(1, 1) = 0;  // corner missing: the hole touches it only diagonally
  EXPECT_EQ(fn::fill_holes(ring).at<std::uint8_t>(2, 2), 255);
  EXPECT_TRUE(fn::fill_holes(cv::Mat(0, 3, CV_8U)).empty());
}

TEST(NucleiSegment, DistanceMatchesBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const auto sz = sizes[static_cast<std::size_t>(trial) % std::size(sizes)];
    const cv::Mat m = random_mask(rng, sz.height, sz.width, 3, 0.01);
    EXPECT_TRUE(same(fn::distance_transform(m), ref::distance(m))) << trial;
  }
  const cv::Mat all(6, 9, CV_8U, cv::Scalar(255));
  const cv::Mat d = fn::distance_transform(all);
  EXPECT_TRUE(std::isinf(d.at<float>(3, 4)));
  cv::Mat one(1, 9, CV_8U, cv::Scalar(255));
  one.at<std::uint8_t>(0, 2) = 0;
  EXPECT_TRUE(same(fn::distance_transform(one), ref::distance(one)));
  // Against OpenCV's exact (DIST_MASK_PRECISE) transform on a larger mask.
  const cv::Mat big = random_mask(rng, 120, 90, 12, 0.001);
  cv::Mat cvd;
  cv::distanceTransform(big, cvd, cv::DIST_L2, cv::DIST_MASK_PRECISE);
  EXPECT_LT(cv::norm(fn::distance_transform(big), cvd, cv::NORM_INF), 1e-3);
}

TEST(NucleiSegment, MarkersMatchDefinition) {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 20; ++trial) {
    const auto sz = sizes[static_cast<std::size_t>(trial) % std::size(sizes)];
    const cv::Mat m = random_mask(rng, sz.height, sz.width, 5, 0.0);
    const cv::Mat d = fn::distance_transform(m);
    for (const float h : {0.5f, 1.0f, 2.5f}) {
      const cv::Mat mk = fn::watershed_markers(d, h);
      EXPECT_TRUE(same(mk, ref::markers(d, h))) << trial << " h=" << h;
      // Every component of the foreground gets a marker.
      int n = 0;
      const cv::Mat comp = fn::label(m, &n);
      std::vector<bool> has(static_cast<std::size_t>(n) + 1, false);
      for (int y = 0; y < m.rows; ++y)
        for (int x = 0; x < m.cols; ++x)
          if (mk.at<int>(y, x) > 0) has[static_cast<std::size_t>(comp.at<int>(y, x))] = true;
      for (int i = 1; i <= n; ++i) EXPECT_TRUE(has[static_cast<std::size_t>(i)]) << trial;
    }
  }
}

TEST(NucleiSegment, WatershedMatchesDefinition) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 30; ++trial) {
    const auto sz = sizes[static_cast<std::size_t>(trial) % std::size(sizes)];
    const cv::Mat m = random_mask(rng, sz.height, sz.width, 6, 0.0);
    const cv::Mat d = fn::distance_transform(m);
    const cv::Mat mk = fn::watershed_markers(d, trial % 2 ? 0.5f : 1.5f);
    EXPECT_TRUE(same(fn::watershed(d, mk, m), ref::watershed(d, mk, m))) << trial;
  }
  // Quantised values make plateaus the lower-complete rule must resolve.
  for (int trial = 0; trial < 20; ++trial) {
    cv::Mat g = random_grey(rng, 15, 18, 3), d;
    g.convertTo(d, CV_32F);
    const cv::Mat mask = random_mask(rng, 15, 18, 4, 0.1);
    cv::Mat mk(d.size(), CV_32S, cv::Scalar(0));
    std::uniform_int_distribution<int> py(0, 14), px(0, 17);
    for (int i = 1; i <= 4; ++i) mk.at<int>(py(rng), px(rng)) = i;
    EXPECT_TRUE(same(fn::watershed(d, mk, mask), ref::watershed(d, mk, mask))) << "plateau " << trial;
  }
}

TEST(NucleiSegment, WatershedSplitsTouchingDiscs) {
  cv::Mat m(60, 90, CV_8U, cv::Scalar(0));
  cv::circle(m, {30, 30}, 16, cv::Scalar(255), cv::FILLED);
  cv::circle(m, {56, 30}, 16, cv::Scalar(255), cv::FILLED);
  const cv::Mat d = fn::distance_transform(m);
  const cv::Mat mk = fn::watershed_markers(d, 2.0f);
  double top = 0;
  cv::minMaxLoc(mk, nullptr, &top);
  EXPECT_EQ(top, 2);
  const cv::Mat ws = fn::watershed(d, mk, m);
  EXPECT_NE(ws.at<int>(30, 30), ws.at<int>(30, 56));
  EXPECT_GT(ws.at<int>(30, 30), 0);
  EXPECT_GT(ws.at<int>(30, 56), 0);
  for (int y = 0; y < m.rows; ++y)
    for (int x = 0; x < m.cols; ++x) {
      EXPECT_EQ(ws.at<int>(y, x) > 0, m.at<std::uint8_t>(y, x) > 0);
      if (ws.at<int>(y, x) > 0) {
        EXPECT_EQ(ws.at<int>(y, x), x < 43 ? ws.at<int>(30, 30) : ws.at<int>(30, 56)) << y << "," << x;
      }
    }
  EXPECT_TRUE(same(ws, ref::watershed(d, mk, m)));
}

TEST(NucleiSegment, EdgeCases) {
  const cv::Mat empty8(0, 0, CV_8U), emptyf(0, 0, CV_32F), empty32(0, 0, CV_32S);
  EXPECT_TRUE(fn::area_threshold(empty8, 1, 0).empty());
  EXPECT_TRUE(fn::distance_transform(empty8).empty());
  EXPECT_TRUE(fn::watershed_markers(emptyf, 1).empty());
  EXPECT_TRUE(fn::watershed(emptyf, empty32, empty8).empty());
  EXPECT_TRUE(fn::tissue_mask(cv::Mat(0, 0, CV_8UC3), 200).empty());
  // All foreground: distance is +inf, one marker covering everything, one region.
  const cv::Mat all(4, 6, CV_8U, cv::Scalar(255));
  const cv::Mat d = fn::distance_transform(all);
  const cv::Mat mk = fn::watershed_markers(d, 1);
  EXPECT_EQ(cv::countNonZero(mk), 24);
  EXPECT_TRUE(same(fn::watershed(d, mk, all), cv::Mat(4, 6, CV_32S, cv::Scalar(1))));
  EXPECT_TRUE(same(fn::fill_holes(all), all));
  // One-row images.
  cv::Mat row(1, 12, CV_8U, cv::Scalar(0));
  row.colRange(2, 5).setTo(255);
  row.colRange(7, 12).setTo(255);
  EXPECT_TRUE(same(fn::fill_holes(row), row));
  const cv::Mat rd = fn::distance_transform(row);
  EXPECT_TRUE(same(rd, ref::distance(row)));
  EXPECT_TRUE(same(fn::watershed_markers(rd, 0.5f), ref::markers(rd, 0.5f)));
  int n = 0;
  fn::label(row, &n);
  EXPECT_EQ(n, 2);
  // Non-contiguous ROI through every mask operation.
  std::mt19937 rng(10);
  const cv::Mat big = random_mask(rng, 50, 60, 6, 0.05);
  const cv::Mat roi = big(cv::Rect(4, 6, 40, 30));
  const cv::Mat copy = roi.clone();
  EXPECT_TRUE(same(fn::fill_holes(roi), fn::fill_holes(copy)));
  EXPECT_TRUE(same(fn::label(roi), fn::label(copy)));
  EXPECT_TRUE(same(fn::area_threshold(roi, 3, 0), fn::area_threshold(copy, 3, 0)));
  EXPECT_TRUE(same(fn::distance_transform(roi), fn::distance_transform(copy)));
  const cv::Mat dd = fn::distance_transform(copy);
  const cv::Mat bigd = cv::Mat::zeros(50, 60, CV_32F);
  dd.copyTo(bigd(cv::Rect(4, 6, 40, 30)));
  const cv::Mat droi = bigd(cv::Rect(4, 6, 40, 30));
  const cv::Mat mk2 = fn::watershed_markers(droi, 1);
  EXPECT_TRUE(same(mk2, fn::watershed_markers(dd, 1)));
  EXPECT_TRUE(same(fn::watershed(droi, mk2, roi), fn::watershed(dd, mk2, copy)));
}

// Object selection: the measures (area, convex hull, ring contrast) against
// hand-computed values, and the rule keeping compact objects darker than
// their surroundings while dropping faint or ragged ones.
#include <opencv2/imgproc.hpp>

#include <gtest/gtest.h>

#include "segment/pipeline.hpp"
#include "segment/select.hpp"

namespace fn = flowd::nuclei;

namespace {

cv::Mat labels_of(int rows, int cols) { return cv::Mat::zeros(rows, cols, CV_32S); }

void disc(cv::Mat& labels, cv::Mat& haem, cv::Point c, int r, int label, int level) {
  cv::circle(labels, c, r, cv::Scalar(label), cv::FILLED, cv::LINE_8);
  cv::circle(haem, c, r, cv::Scalar(level), cv::FILLED, cv::LINE_8);
}

}  // namespace

TEST(NucleiSelect, RectangleIsFullySolidAndItsRingIsMeasured) {
  cv::Mat labels = labels_of(40, 40), haem(40, 40, CV_8U, cv::Scalar(50));
  cv::rectangle(labels, cv::Rect(10, 12, 8, 5), cv::Scalar(1), cv::FILLED);
  cv::rectangle(haem, cv::Rect(10, 12, 8, 5), cv::Scalar(200), cv::FILLED);
  const cv::Mat valid(40, 40, CV_8U, cv::Scalar(255));
  const auto m = fn::measure_objects(labels, haem, valid, 2);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].area, 40);
  EXPECT_DOUBLE_EQ(m[1].hull_area, 40.0);
  EXPECT_DOUBLE_EQ(m[1].solidity(), 1.0);
  EXPECT_DOUBLE_EQ(m[1].inside_mean, 200.0);
  // Chessboard ring of width 2 around an 8x5 box: (12 x 9) - 40 pixels.
  EXPECT_EQ(m[1].ring_pixels, 12 * 9 - 40);
  EXPECT_DOUBLE_EQ(m[1].ring_mean, 50.0);
  EXPECT_DOUBLE_EQ(m[1].contrast(), 150.0);
}

TEST(NucleiSelect, RingSkipsInvalidPixelsAndOtherObjects) {
  cv::Mat labels = labels_of(30, 60), haem(30, 60, CV_8U, cv::Scalar(40));
  cv::rectangle(labels, cv::Rect(5, 5, 10, 10), cv::Scalar(1), cv::FILLED);
  cv::rectangle(labels, cv::Rect(16, 5, 10, 10), cv::Scalar(2), cv::FILLED);  // one pixel gap
  cv::Mat valid(30, 60, CV_8U, cv::Scalar(255));
  valid.colRange(0, 5).setTo(0);  // glass left of object 1: not part of its ring
  haem.colRange(0, 5).setTo(0);
  const auto m = fn::measure_objects(labels, haem, valid, 3);
  EXPECT_DOUBLE_EQ(m[1].ring_mean, 40.0);
  EXPECT_DOUBLE_EQ(m[2].ring_mean, 40.0);
  // Object 1's ring: the 16x16 box around it, minus itself, minus the glass
  // columns (x < 5), minus object 2's pixels; the pixels near both objects
  // are in both rings.
  EXPECT_EQ(m[1].ring_pixels, 16 * 16 - 100 - 3 * 16 - 2 * 10);
  EXPECT_EQ(m[2].ring_pixels, 16 * 16 - 100 - 2 * 10);  // x 13..28: no glass, object 1 at x 13-14
}

TEST(NucleiSelect, KeepsDarkCompactObjectsAndDropsFaintOrRaggedOnes) {
  cv::Mat labels = labels_of(120, 200), haem(120, 200, CV_8U, cv::Scalar(60));
  disc(labels, haem, {30, 30}, 10, 1, 180);  // a nucleus
  disc(labels, haem, {80, 30}, 10, 2, 75);   // a faint patch of background
  // A ragged fragment: a thin cross (solidity well below 0.7).
  cv::rectangle(labels, cv::Rect(120, 10, 40, 3), cv::Scalar(3), cv::FILLED);
  cv::rectangle(labels, cv::Rect(138, 0, 3, 40), cv::Scalar(3), cv::FILLED);
  cv::rectangle(haem, cv::Rect(120, 10, 40, 3), cv::Scalar(180), cv::FILLED);
  cv::rectangle(haem, cv::Rect(138, 0, 3, 40), cv::Scalar(180), cv::FILLED);
  // A nucleus buried in a cluster: its ring is all other objects.
  cv::rectangle(labels, cv::Rect(40, 60, 60, 60), cv::Scalar(5), cv::FILLED);
  cv::rectangle(haem, cv::Rect(40, 60, 60, 60), cv::Scalar(180), cv::FILLED);
  disc(labels, haem, {70, 90}, 8, 4, 90);
  const cv::Mat valid(120, 200, CV_8U, cv::Scalar(255));
  const fn::SelectRule rule{.ring_radius = 4, .min_contrast = 40, .min_ring_pixels = 8, .min_solidity = 0.7};
  const cv::Mat out = fn::select_objects(labels, haem, valid, rule);
  auto kept = [&](int label) { return cv::countNonZero(out == label) > 0; };
  EXPECT_TRUE(kept(1));
  EXPECT_FALSE(kept(2));
  EXPECT_FALSE(kept(3));
  EXPECT_TRUE(kept(4));
  EXPECT_TRUE(kept(5));
  // Kept objects keep their labels and pixels.
  EXPECT_EQ(cv::countNonZero(out == 1), cv::countNonZero(labels == 1));
}

TEST(NucleiSelect, RefusesMismatchedInputs) {
  const cv::Mat labels = labels_of(10, 10), haem(10, 12, CV_8U, cv::Scalar(0)), valid(10, 10, CV_8U, cv::Scalar(255));
  EXPECT_THROW(fn::measure_objects(labels, haem, valid, 2), std::invalid_argument);
  EXPECT_THROW(fn::measure_objects(cv::Mat(10, 10, CV_8U), valid, valid, 2), std::invalid_argument);
}

TEST(NucleiSelect, HullAreaMatchesOpenCVOnRandomBlobs) {
  cv::RNG rng(7);
  cv::Mat labels = labels_of(200, 200), haem(200, 200, CV_8U, cv::Scalar(10));
  for (int i = 1; i <= 12; ++i) {
    const cv::Point c{rng.uniform(20, 180), rng.uniform(20, 180)};
    // Unions of random ellipses and bars: convex and non-convex shapes.
    cv::Mat one = cv::Mat::zeros(200, 200, CV_8U);
    for (int k = 0; k < 3; ++k)
      cv::ellipse(one, c + cv::Point(rng.uniform(-8, 9), rng.uniform(-8, 9)), {rng.uniform(2, 12), rng.uniform(2, 12)},
                  rng.uniform(0, 180), 0, 360, cv::Scalar(255), cv::FILLED);
    labels.setTo(cv::Scalar(i), one);
  }
  const cv::Mat valid(200, 200, CV_8U, cv::Scalar(255));
  const auto m = fn::measure_objects(labels, haem, valid, 3);
  int checked = 0;
  for (std::size_t i = 1; i < m.size(); ++i) {
    std::vector<cv::Point> corners;
    for (int y = 0; y < labels.rows; ++y)
      for (int x = 0; x < labels.cols; ++x)
        if (labels.at<std::int32_t>(y, x) == static_cast<int>(i))
          for (const cv::Point d : {cv::Point(0, 0), cv::Point(1, 0), cv::Point(0, 1), cv::Point(1, 1)})
            corners.push_back(cv::Point(x, y) + d);
    if (corners.empty()) continue;
    std::vector<cv::Point> hull;
    cv::convexHull(corners, hull);
    EXPECT_DOUBLE_EQ(m[i].hull_area, cv::contourArea(hull)) << "object " << i;
    EXPECT_EQ(m[i].area, static_cast<std::int64_t>(corners.size() / 4)) << "object " << i;
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(NucleiSelect, RatioDropsObjectsOnlyAFewTimesDarkerThanTheirRing) {
  // The same contrast (60 levels) on a pale ring and on a haematoxylin-tinted one.
  cv::Mat labels = labels_of(60, 120), haem(60, 120, CV_8U, cv::Scalar(10));
  haem.colRange(60, 120).setTo(60);
  disc(labels, haem, {30, 30}, 10, 1, 70);   // 7x its ring
  disc(labels, haem, {90, 30}, 10, 2, 120);  // 2x its ring: a dark patch of neuropil
  const cv::Mat valid(60, 120, CV_8U, cv::Scalar(255));
  fn::SelectRule rule{.ring_radius = 4, .min_contrast = 40, .min_ring_pixels = 8, .min_solidity = 0.7};
  cv::Mat out = fn::select_objects(labels, haem, valid, rule);
  EXPECT_EQ(cv::countNonZero(out == 2), cv::countNonZero(labels == 2));  // no ratio asked
  rule.min_ratio = 2.5;
  out = fn::select_objects(labels, haem, valid, rule);
  EXPECT_EQ(cv::countNonZero(out == 1), cv::countNonZero(labels == 1));
  EXPECT_EQ(cv::countNonZero(out == 2), 0);
}

TEST(NucleiSelect, SelectAndRelabelIsRelabelOfSelect) {
  cv::Mat labels = labels_of(100, 160), haem(100, 160, CV_8U, cv::Scalar(30));
  disc(labels, haem, {120, 20}, 9, 1, 200);  // kept, numbered first by raster order of its first pixel
  disc(labels, haem, {20, 20}, 9, 2, 40);    // dropped: faint
  disc(labels, haem, {60, 60}, 3, 3, 200);   // dropped: below min_area
  disc(labels, haem, {20, 70}, 12, 7, 220);  // kept
  const cv::Mat valid(100, 160, CV_8U, cv::Scalar(255));
  const fn::SelectRule rule{
      .ring_radius = 4, .min_contrast = 40, .min_ring_pixels = 8, .min_solidity = 0.7, .min_ratio = 2.5};
  int n_fused = 0, n_steps = 0;
  const cv::Mat fused = fn::select_and_relabel(labels, haem, valid, rule, 60, &n_fused);
  const cv::Mat steps = fn::relabel(fn::select_objects(labels, haem, valid, rule), 60, &n_steps);
  EXPECT_EQ(n_fused, 2);
  EXPECT_EQ(n_fused, n_steps);
  EXPECT_EQ(cv::countNonZero(fused != steps), 0);
}

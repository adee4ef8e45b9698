// The pipeline on a drawn H&E-like image: it finds the drawn nuclei, and the
// operations run one by one with derive()'s parameters give segment()'s result.
#include <random>

#include <opencv2/imgproc.hpp>

#include <gtest/gtest.h>

#include "segment/pipeline.hpp"
#include "segment/select.hpp"
#include "same_mat.hpp"

namespace fn = flowd::nuclei;

using flowd::nuclei::test::same;

namespace {

// Pink tissue with purple discs (radius ~3 µm at 0.25 µm/px), some pairs
// touching, a glass corner, blur and noise.
cv::Mat drawn_tile(int size, std::uint64_t seed, int* count) {
  cv::Mat rgb(size, size, CV_8UC3, cv::Scalar(235, 165, 205));
  cv::rectangle(rgb, {0, 0}, {size / 6, size / 6}, cv::Scalar(245, 245, 245), cv::FILLED);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pos(size / 6 + 20, size - 20), rad(9, 15);
  *count = 0;
  for (int i = 0; i < size * size / 3000; ++i) {
    const cv::Point c{pos(rng), pos(rng)};
    const int r = rad(rng);
    cv::circle(rgb, c, r, cv::Scalar(110, 70, 160), cv::FILLED);
    ++*count;
  }
  cv::GaussianBlur(rgb, rgb, {0, 0}, 1.0);
  cv::Mat noise(rgb.size(), CV_16SC3), out;
  cv::theRNG().state = seed;
  cv::randn(noise, cv::Scalar::all(0), cv::Scalar::all(4));
  rgb.convertTo(out, CV_16SC3);
  out += noise;
  out.convertTo(out, CV_8UC3);
  return out;
}

}  // namespace

TEST(NucleiPipeline, FindsDrawnNuclei) {
  int drawn = 0;
  const cv::Mat rgb = drawn_tile(512, 1, &drawn);
  fn::SegmentParams p;
  p.mpp = 0.25;
  int n = 0;
  const cv::Mat labels = fn::segment(rgb, p);
  double top = 0;
  cv::minMaxLoc(labels, nullptr, &top);
  n = static_cast<int>(top);
  // Overlapping discs merge in the drawing, so fewer objects than draws.
  EXPECT_GT(n, drawn / 2);
  EXPECT_LT(n, drawn * 3 / 2);
}

TEST(NucleiPipeline, StepsEqualSegment) {
  int drawn = 0;
  const cv::Mat rgb = drawn_tile(384, 2, &drawn);
  for (const double mpp : {0.0, 0.25, 0.5}) {
    fn::SegmentParams p;
    p.mpp = mpp;
    fn::Stages s;
    const cv::Mat labels = fn::segment(rgb, p, &s);
    const fn::Derived d = fn::derive(rgb, p);
    const cv::Mat tissue = fn::tissue_mask(rgb, d.tissue_level);
    const cv::Mat rbc = fn::rbc_mask(rgb, d.rbc_rg_q8, d.rbc_rb_q8, d.tissue_level);
    const cv::Mat haem = fn::mask_haem(fn::deconvolve(rgb, fn::stain_weights(0, d.od_max)), tissue, rbc);
    const cv::Mat recon = fn::reconstruct(fn::open(haem, d.open_radius), haem);
    const cv::Mat area = fn::area_threshold(fn::threshold_mask(recon, d.threshold), d.min_area, 0);
    const cv::Mat filled = fn::fill_small_holes(area, d.max_hole_area);
    const cv::Mat dist = fn::distance_transform(filled);
    const cv::Mat ws = fn::watershed(dist, fn::watershed_markers(dist, d.h), filled);
    const cv::Mat selected = fn::select_objects(ws, haem, fn::valid_tissue(tissue, rbc),
                                                {.ring_radius = d.ring_radius,
                                                 .min_contrast = d.min_contrast,
                                                 .min_solidity = d.min_solidity,
                                                 .min_ratio = d.min_ratio});
    EXPECT_TRUE(same(fn::relabel(selected, d.min_area), labels)) << mpp;
    EXPECT_TRUE(same(s.tissue, tissue));
    EXPECT_TRUE(same(s.rbc, rbc));
    EXPECT_TRUE(same(s.haem, haem));
    EXPECT_TRUE(same(s.filled, filled));
    EXPECT_TRUE(same(s.labels, labels));
  }
}

TEST(NucleiPipeline, EstimatesResolution) {
  int drawn = 0;
  const cv::Mat rgb = drawn_tile(1024, 3, &drawn);
  EXPECT_DOUBLE_EQ(fn::estimate_mpp(rgb), 0.25);
  cv::Mat half;
  cv::resize(rgb, half, {}, 0.5, 0.5, cv::INTER_AREA);
  EXPECT_DOUBLE_EQ(fn::estimate_mpp(half), 0.5);
}

TEST(NucleiPipeline, BlankAndTinyInputs) {
  fn::SegmentParams p;
  p.mpp = 0.25;
  const cv::Mat glass(64, 64, CV_8UC3, cv::Scalar(250, 250, 250));
  EXPECT_EQ(cv::countNonZero(fn::segment(glass, p)), 0);
  const cv::Mat pink(64, 64, CV_8UC3, cv::Scalar(235, 165, 205));
  EXPECT_EQ(cv::countNonZero(fn::segment(pink, p)), 0);
  EXPECT_TRUE(fn::segment(cv::Mat(0, 0, CV_8UC3), p).empty());
  const cv::Mat row(1, 50, CV_8UC3, cv::Scalar(110, 70, 160));
  EXPECT_EQ(fn::segment(row, p).size(), row.size());
}

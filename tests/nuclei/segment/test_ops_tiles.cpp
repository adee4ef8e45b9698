// The segmentation operations on realistic inputs (generated H&E tiles at 40x
// and 20x, several seeds, and large random images with plateaus and ties)
// against their frozen pre-speed-up versions (frozen/frozen.hpp), pixel for
// pixel. The small-image tests of test_ops.cpp check the definitions; these
// catch a fast path that only goes wrong on the shapes real tiles have.
#include <random>
#include <string>

#include <opencv2/imgproc.hpp>

#include <gtest/gtest.h>

#include "frozen/frozen.hpp"
#include "hne/generate.hpp"
#include "segment/pipeline.hpp"

namespace fn = flowd::nuclei;
namespace fz = flowd::nuclei::frozen;

namespace {

// First differing pixel, or "" when a and b are identical (type, size, bits).
std::string diff(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return "size or type differs";
  for (int y = 0; y < a.rows; ++y) {
    const auto* pa = a.ptr<std::uint8_t>(y);
    const auto* pb = b.ptr<std::uint8_t>(y);
    const std::size_t n = static_cast<std::size_t>(a.cols) * a.elemSize();
    for (std::size_t i = 0; i < n; ++i)
      if (pa[i] != pb[i])
        return "first difference at row " + std::to_string(y) + ", column " + std::to_string(i / a.elemSize());
  }
  return "";
}

// fill_small_holes as it was defined before its one-pass version: the holes
// (fill_holes minus the mask), their 8-connected components of at most
// max_hole_area pixels added to the mask.
cv::Mat small_holes_reference(const cv::Mat& mask, int max_hole_area) {
  const cv::Mat bin = mask != 0;
  if (max_hole_area <= 0) return bin;
  const cv::Mat holes = fz::fill_holes(bin) & ~bin;
  return bin | fz::area_threshold(holes, 1, max_hole_area);
}

// The inputs each operation receives inside segment(), computed step by step.
struct Chain {
  fn::Derived d;
  cv::Mat haem, opened, recon, candidates, area, filled, dist, markers, coarse;
};

Chain chain_of(const cv::Mat& rgb) {
  Chain c;
  c.d = fn::derive(rgb, {});
  const cv::Mat tissue = fn::tissue_mask(rgb, c.d.tissue_level);
  const cv::Mat rbc = fn::rbc_mask(rgb, c.d.rbc_rg_q8, c.d.rbc_rb_q8, c.d.tissue_level);
  c.haem = fn::mask_haem(fn::deconvolve(rgb, fn::stain_weights(0, c.d.od_max)), tissue, rbc);
  c.opened = fn::open(c.haem, c.d.open_radius);
  c.recon = fz::reconstruct(c.opened, c.haem);
  c.candidates = fn::threshold_mask(c.recon, c.d.threshold);
  c.area = fz::area_threshold(c.candidates, c.d.min_area, 0);
  c.filled = fz::fill_holes(c.area);
  c.dist = fz::distance_transform(c.filled);
  c.markers = fz::watershed_markers(c.dist, c.d.h);
  // estimate_mpp's mask: the raw channel at a low level, full of specks.
  c.coarse = fn::threshold_mask(c.haem, std::max(1, c.d.threshold / 2));
  return c;
}

cv::Mat tile(double mpp, std::uint64_t seed, int size = 512) {
  flowd::hne::Params p;
  p.width = p.height = size;
  p.mpp = mpp;
  p.seed = seed;
  return flowd::hne::generate(p).rgb;
}

cv::Mat random_levels(std::mt19937& rng, int rows, int cols, int levels) {
  cv::Mat m(rows, cols, CV_8U);
  std::uniform_int_distribution<int> v(0, levels - 1);
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x)
      m.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(v(rng) * 255 / (levels - 1));
  return m;
}

// Blobs of random radius and level, smoothed: broad plateaus and ramps.
cv::Mat random_blobs(std::mt19937& rng, int rows, int cols, int blobs, int levels) {
  cv::Mat m(rows, cols, CV_8U, cv::Scalar(0));
  std::uniform_int_distribution<int> ry(0, rows - 1), rx(0, cols - 1), rr(2, 30), rv(1, levels - 1);
  for (int i = 0; i < blobs; ++i)
    cv::circle(m, {rx(rng), ry(rng)}, rr(rng), cv::Scalar(rv(rng) * 255 / (levels - 1)), cv::FILLED);
  return m;
}

void expect_ops_match(const cv::Mat& rgb, const std::string& what) {
  const Chain c = chain_of(rgb);
  EXPECT_EQ(diff(fn::reconstruct(c.opened, c.haem), c.recon), "") << what << ": reconstruct u8";
  EXPECT_EQ(diff(fn::area_threshold(c.candidates, c.d.min_area, 0), c.area), "") << what << ": area_threshold";
  for (const auto& [lo, hi] : {std::pair{1, 40}, {3, 3}, {2, 0}})
    EXPECT_EQ(diff(fn::area_threshold(c.coarse, lo, hi), fz::area_threshold(c.coarse, lo, hi)), "")
        << what << ": area_threshold " << lo << ".." << hi;
  EXPECT_EQ(diff(fn::fill_holes(c.area), c.filled), "") << what << ": fill_holes";
  EXPECT_EQ(diff(fn::fill_holes(c.coarse), fz::fill_holes(c.coarse)), "") << what << ": fill_holes (coarse)";
  EXPECT_EQ(diff(fn::fill_small_holes(c.area, c.d.max_hole_area), small_holes_reference(c.area, c.d.max_hole_area)), "")
      << what << ": fill_small_holes";
  for (const int max : {0, 1, 4, 50, 400})
    EXPECT_EQ(diff(fn::fill_small_holes(c.coarse, max), small_holes_reference(c.coarse, max)), "")
        << what << ": fill_small_holes (coarse) " << max;
  EXPECT_EQ(diff(fn::distance_transform(c.filled), c.dist), "") << what << ": distance_transform";
  EXPECT_EQ(diff(fn::distance_transform(c.coarse), fz::distance_transform(c.coarse)), "")
      << what << ": distance (coarse)";
  EXPECT_EQ(diff(fn::watershed_markers(c.dist, c.d.h), c.markers), "") << what << ": watershed_markers";
  for (const float h : {0.5f, 1.5f, 3.0f})
    EXPECT_EQ(diff(fn::watershed_markers(c.dist, h), fz::watershed_markers(c.dist, h)), "")
        << what << ": markers h=" << h;
  EXPECT_EQ(diff(fn::watershed(c.dist, c.markers, c.filled), fz::watershed(c.dist, c.markers, c.filled)), "")
      << what << ": watershed";
  for (const cv::Mat& m : {c.filled, c.candidates, c.coarse}) {
    int n = -1, fzn = -2;
    EXPECT_EQ(diff(fn::label(m, &n), fz::label(m, &fzn)), "") << what << ": label";
    EXPECT_EQ(n, fzn) << what << ": label count";
  }
  // The float reconstructions of markers and watershed on their own.
  cv::Mat lowered = c.dist - 0.7f, seeds(c.dist.size(), CV_32F, cv::Scalar(0));
  c.dist.copyTo(seeds, c.markers > 0);
  EXPECT_EQ(diff(fn::reconstruct(lowered, c.dist), fz::reconstruct(lowered, c.dist)), "")
      << what << ": reconstruct f32 (h)";
  EXPECT_EQ(diff(fn::reconstruct(seeds, c.dist), fz::reconstruct(seeds, c.dist)), "")
      << what << ": reconstruct f32 (seeds)";
}

}  // namespace

TEST(NucleiSegmentTiles, OperationsMatchFrozenOn40xTiles) {
  for (const std::uint64_t seed : {1u, 2u, 3u})
    expect_ops_match(tile(0.25, seed), "40x seed " + std::to_string(seed));
}

TEST(NucleiSegmentTiles, OperationsMatchFrozenOn20xTiles) {
  for (const std::uint64_t seed : {1u, 2u, 3u})
    expect_ops_match(tile(0.5, seed), "20x seed " + std::to_string(seed));
}

TEST(NucleiSegmentTiles, OperationsMatchFrozenOnNonSquareCrowdedTile) {
  flowd::hne::Params p;
  p.width = 301;
  p.height = 517;
  p.seed = 11;
  p.density = 2.5;
  p.cluster = 0.8;
  p.background = 0;
  expect_ops_match(flowd::hne::generate(p).rgb, "crowded 301x517");
}

TEST(NucleiSegmentTiles, RandomPlateausMatchFrozen) {
  std::mt19937 rng(21);
  for (int trial = 0; trial < 6; ++trial) {
    const int rows = 150 + 37 * trial, cols = 260 - 23 * trial, levels = trial % 2 ? 3 : 6;
    const std::string what = "trial " + std::to_string(trial);
    const cv::Mat mask = random_blobs(rng, rows, cols, 40, levels) | random_levels(rng, rows, cols, levels) / 4;
    const cv::Mat marker = random_levels(rng, rows, cols, levels) / 2;
    EXPECT_EQ(diff(fn::reconstruct(marker, mask), fz::reconstruct(marker, mask)), "") << what << ": reconstruct u8";
    cv::Mat fm, fk;
    marker.convertTo(fm, CV_32F, 0.25, -3);
    mask.convertTo(fk, CV_32F, 0.25, -1);
    EXPECT_EQ(diff(fn::reconstruct(fm, fk), fz::reconstruct(fm, fk)), "") << what << ": reconstruct f32";
    // Quantised distances: wide plateaus with equal values everywhere.
    const cv::Mat bin = mask > 0;
    for (const int max : {1, 3, 30})  // holes of every shape, diagonal contacts included
      EXPECT_EQ(diff(fn::fill_small_holes(~bin, max), small_holes_reference(~bin, max)), "")
          << what << ": fill_small_holes " << max;
    cv::Mat qd;
    fk.copyTo(qd);
    qd.setTo(0, ~bin);
    qd = cv::max(qd, 0);
    for (const float h : {0.25f, 1.0f}) {
      const cv::Mat mk = fn::watershed_markers(qd, h);
      EXPECT_EQ(diff(mk, fz::watershed_markers(qd, h)), "") << what << ": markers h=" << h;
      EXPECT_EQ(diff(fn::watershed(qd, mk, bin), fz::watershed(qd, mk, bin)), "") << what << ": watershed h=" << h;
    }
    EXPECT_EQ(diff(fn::fill_holes(bin), fz::fill_holes(bin)), "") << what << ": fill_holes";
    EXPECT_EQ(diff(fn::distance_transform(bin), fz::distance_transform(bin)), "") << what << ": distance";
    EXPECT_EQ(diff(fn::area_threshold(bin, 5, 400), fz::area_threshold(bin, 5, 400)), "") << what << ": area_threshold";
    int n = -1, fzn = -2;
    EXPECT_EQ(diff(fn::label(bin, &n), fz::label(bin, &fzn)), "") << what << ": label";
    EXPECT_EQ(n, fzn) << what;
  }
}

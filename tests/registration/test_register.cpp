// The operator A on generated frames with known motions.
#include <opencv2/core.hpp>

#include <gtest/gtest.h>

#include "register.hpp"
#include "rendered_series.hpp"
#include "tem/generate.hpp"

namespace reg = flowd::registration;

namespace {

// A clean series (high dose, no jitter) moving 1.5 px and 0.05 degrees per
// frame: frame 4 is ~6 px and 0.2 degrees from frame 0.
flowd::tem::Params clean() {
  flowd::tem::Params p;
  p.frames = 5;
  p.width = p.height = 256;
  p.seed = 3;
  p.dose = 2000;
  p.jitter = 0;
  p.drift = 1.5;
  p.rotation = 0.05;
  return p;
}

}  // namespace

TEST(Pyramid, LevelsFromTheSize) {
  const reg::PyramidOptions o;
  EXPECT_EQ(reg::Pyramid::level_count(512, 512, o), 4);  // 512 256 128 64
  EXPECT_EQ(reg::Pyramid::level_count(256, 256, o), 3);
  EXPECT_EQ(reg::Pyramid::level_count(1920, 1856, o), 5);  // down to 116 x 120
  EXPECT_EQ(reg::Pyramid::level_count(100, 3000, o), 1);
}

TEST(Register, RecoversAKnownMotionToAHundredthOfAPixel) {
  const auto f = reg::test::render(clean());
  for (int k = 1; k < 5; ++k) {
    const reg::Result r = reg::register_pair(f.pyramids[0], f.pyramids[static_cast<std::size_t>(k)],
                                             reg::Rigid::identity(), reg::Options{});
    EXPECT_LT(reg::Rigid::distance(r.phi, f.truth[static_cast<std::size_t>(k)], 256, 256), 0.02) << "frame " << k;
    EXPECT_GT(r.ncc, 0.9);
    EXPECT_GT(r.overlap, 0.9);
  }
}

TEST(Register, ConvergesFromAGuessOffByTwoPixels) {
  const auto f = reg::test::render(clean());
  const reg::Rigid guess = reg::then(f.truth[2], {0.004, 1.5, -1.3});
  reg::Options fine;
  fine.coarsest = 1;
  const reg::Result r = reg::register_pair(f.pyramids[0], f.pyramids[2], guess, fine);
  EXPECT_LT(reg::Rigid::distance(r.phi, f.truth[2], 256, 256), 0.02);
  EXPECT_GT(reg::Rigid::distance(guess, f.truth[2], 256, 256), 2.0);
}

TEST(Register, TranslationModelKeepsTheAngle) {
  flowd::tem::Params p = clean();
  p.rotation = 0.0;
  const auto f = reg::test::render(p);
  reg::Options o;
  o.model = reg::Model::translation;
  const reg::Result r = reg::register_pair(f.pyramids[0], f.pyramids[3], reg::Rigid::from_degrees(0.25, 0, 0), o);
  EXPECT_DOUBLE_EQ(r.phi.degrees(), 0.25);
  const reg::Result r0 = reg::register_pair(f.pyramids[0], f.pyramids[3], reg::Rigid::identity(), o);
  EXPECT_EQ(r0.phi.angle, 0.0);
  EXPECT_LT(reg::Rigid::distance(r0.phi, f.truth[3], 256, 256), 0.02);
}

TEST(Register, StopsWithinTheIterationBudget) {
  const auto f = reg::test::render(clean());
  reg::Options o;
  o.max_iterations = 3;
  const reg::Result r = reg::register_pair(f.pyramids[0], f.pyramids[1], reg::Rigid::identity(), o);
  EXPECT_LE(r.iterations, 3 * f.pyramids[0].levels());
}

TEST(Register, FramesOfDifferentSizesAreRefused) {
  cv::Mat a(64, 64, CV_32F, cv::Scalar(1)), b(64, 80, CV_32F, cv::Scalar(1));
  const reg::Pyramid pa(reg::ImageView{a.ptr<float>(), 64, 64, 64}, {}),
      pb(reg::ImageView{b.ptr<float>(), 80, 64, 80}, {});
  try {
    reg::register_pair(pa, pb, reg::Rigid::identity(), {});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "frames of different sizes: 64x64 and 80x64");
  }
}

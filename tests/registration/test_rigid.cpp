// Rigid motions about the image centre: composition, inverse, the error
// measure, and deformations.csv.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "deformations.hpp"
#include "rigid.hpp"

namespace reg = flowd::registration;

namespace {

reg::Rigid random_motion(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> angle(-0.3, 0.3), shift(-40.0, 40.0);
  return {angle(rng), shift(rng), shift(rng)};
}

void expect_same(const reg::Rigid& a, const reg::Rigid& b, double tol) {
  EXPECT_NEAR(a.angle, b.angle, tol);
  EXPECT_NEAR(a.tx, b.tx, tol);
  EXPECT_NEAR(a.ty, b.ty, tol);
}

}  // namespace

TEST(Rigid, ApplyFollowsTheIssuesConvention) {
  // x' = c + R(a)(x - c) + t with R(a) = [[cos, -sin], [sin, cos]]: a quarter
  // turn moves the point right of the centre below it (rows grow downwards).
  const reg::Point c = reg::image_centre(101, 51);
  EXPECT_DOUBLE_EQ(c.x, 50.0);
  EXPECT_DOUBLE_EQ(c.y, 25.0);
  const reg::Rigid quarter = reg::Rigid::from_degrees(90.0, 1.0, 2.0);
  const reg::Point p = quarter.apply({60.0, 25.0}, c);
  EXPECT_NEAR(p.x, 51.0, 1e-12);
  EXPECT_NEAR(p.y, 37.0, 1e-12);
  EXPECT_NEAR(quarter.degrees(), 90.0, 1e-12);
}

TEST(Rigid, ThenIsApplicationInOrder) {
  std::mt19937_64 rng(5);
  const reg::Point c{255.5, 200.0};
  for (int trial = 0; trial < 100; ++trial) {
    const reg::Rigid a = random_motion(rng), b = random_motion(rng);
    const reg::Point x{static_cast<double>(trial * 5 % 511), static_cast<double>(trial * 7 % 400)};
    const reg::Point two_steps = b.apply(a.apply(x, c), c);
    const reg::Point one_step = reg::then(a, b).apply(x, c);
    EXPECT_NEAR(two_steps.x, one_step.x, 1e-9);
    EXPECT_NEAR(two_steps.y, one_step.y, 1e-9);
  }
}

TEST(Rigid, ThenIsAssociativeAndNotCommutative) {
  std::mt19937_64 rng(7);
  double worst_commutator = 0.0;
  for (int trial = 0; trial < 100; ++trial) {
    const reg::Rigid a = random_motion(rng), b = random_motion(rng), c = random_motion(rng);
    expect_same(reg::then(reg::then(a, b), c), reg::then(a, reg::then(b, c)), 1e-9);
    worst_commutator = std::max(worst_commutator, reg::Rigid::distance(reg::then(a, b), reg::then(b, a), 512, 512));
  }
  EXPECT_GT(worst_commutator, 1.0);  // the scan's combine order matters
}

TEST(Rigid, InverseUndoes) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    const reg::Rigid a = random_motion(rng);
    expect_same(reg::then(a, a.inverse()), reg::Rigid::identity(), 1e-9);
    expect_same(reg::then(a.inverse(), a), reg::Rigid::identity(), 1e-9);
  }
}

TEST(Rigid, DistanceIsTheWorstOfCentreAndCorners) {
  // A pure translation moves every point equally; a rotation about the
  // centre moves the corners by r * angle and the centre not at all.
  EXPECT_NEAR(reg::Rigid::distance({0.0, 3.0, 4.0}, reg::Rigid::identity(), 64, 64), 5.0, 1e-12);
  const double a = 0.001;
  const double corner = std::hypot(31.5, 31.5) * 2.0 * std::sin(a / 2.0);
  EXPECT_NEAR(reg::Rigid::distance({a, 0.0, 0.0}, reg::Rigid::identity(), 64, 64), corner, 1e-12);
  EXPECT_EQ(reg::Rigid::distance({0.2, 1.0, -1.0}, {0.2, 1.0, -1.0}, 64, 64), 0.0);
}

TEST(Deformations, RoundTrip) {
  const std::vector<reg::Deformation> rows = {
      {"frame_000", reg::Rigid::identity()},
      {"frame_001", reg::Rigid::from_degrees(0.0125, 0.4375, -1.25)},
      {"b", reg::Rigid::from_degrees(-3.5, 100.0625, 7.0)},
  };
  const std::string text = reg::format_deformations(rows);
  EXPECT_EQ(text.substr(0, text.find('\n')), "frame,tx_px,ty_px,angle_deg");
  EXPECT_NE(text.find("\nframe_000,0,0,0\n"), std::string::npos);
  const auto back = reg::parse_deformations(text);
  ASSERT_EQ(back.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(back[i].frame, rows[i].frame);
    expect_same(back[i].phi, rows[i].phi, 1e-8);
    EXPECT_FALSE(back[i].quality);
  }
  // The header before issue 38 is still read.
  EXPECT_EQ(reg::parse_deformations("frame,tx,ty,angle\na,1,2,3\n").size(), 1u);
}

// Issue 38: the match quality went missing between the registration and its
// outputs; a registration's table carries it.
TEST(Deformations, QualityColumnsRoundTrip) {
  std::vector<reg::Deformation> rows = {
      {"frame_000", reg::Rigid::identity(), reg::MatchQuality{1.0, 1.0, true}},
      {"frame_001", reg::Rigid::from_degrees(0.5, 1.25, -2.0), reg::MatchQuality{0.03125, 0.75, false}},
  };
  const std::string text = reg::format_deformations(rows);
  EXPECT_EQ(text.substr(0, text.find('\n')), "frame,tx_px,ty_px,angle_deg,ncc,overlap,reliable");
  EXPECT_NE(text.find("\nframe_001,1.25,-2,0.5,0.03125,0.75,0\n"), std::string::npos) << text;
  const auto back = reg::parse_deformations(text);
  ASSERT_EQ(back.size(), 2u);
  ASSERT_TRUE(back[1].quality);
  EXPECT_EQ(back[1].quality->ncc, 0.03125);
  EXPECT_EQ(back[1].quality->overlap, 0.75);
  EXPECT_FALSE(back[1].quality->reliable);
  EXPECT_TRUE(back[0].quality->reliable);
}

TEST(Deformations, MalformedSaysTheLine) {
  auto message = [](std::string_view text) {
    try {
      reg::parse_deformations(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(""), "empty: no header 'frame,tx_px,ty_px,angle_deg'");
  EXPECT_EQ(message("frame,x,y,a\n"),
            "line 1: expected the header 'frame,tx_px,ty_px,angle_deg' (or "
            "'frame,tx_px,ty_px,angle_deg,ncc,overlap,reliable'), got 'frame,x,y,a'");
  EXPECT_EQ(message("frame,tx_px,ty_px,angle_deg\na,1,2\n"), "line 2: 3 fields, expected 4");
  EXPECT_EQ(message("frame,tx,ty,angle\na,1,2,3\nb,1,x,3\n"), "line 3: ty_px 'x' is not a number");
  EXPECT_EQ(message("frame,tx,ty,angle\n,1,2,3\n"), "line 2: the frame name is empty");
  EXPECT_EQ(message("frame,tx_px,ty_px,angle_deg,ncc,overlap,reliable\na,1,2,3,0.5,1,yes\n"),
            "line 2: reliable 'yes' is not 0 or 1");
}

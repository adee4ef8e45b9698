// The scan's operands and combine, and the accuracy of the whole scheme on
// generated series (issue 14's judge, on a small series).
#include <opencv2/core.hpp>

#include <gtest/gtest.h>

#include "rendered_series.hpp"
#include "series.hpp"
#include "tem/generate.hpp"

namespace reg = flowd::registration;

namespace {

const reg::FrameLookup no_frames = [](std::int64_t i) -> const reg::Pyramid& {
  throw std::logic_error("frame " + std::to_string(i) + " was read");
};

}  // namespace

TEST(Compose, IdentityOperandsShortCut) {
  const reg::Step id{3, 3, reg::Rigid::identity()};
  const reg::Step s{3, 7, {0.01, 2.0, 1.0}};
  const reg::Step left = reg::compose(no_frames, id, s, {});
  EXPECT_EQ(left.from, 3);
  EXPECT_EQ(left.to, 7);
  EXPECT_EQ(left.phi.tx, 2.0);
  const reg::Step s2{1, 3, {0.02, -1.0, 0.5}};
  const reg::Step right = reg::compose(no_frames, s2, id, {});
  EXPECT_EQ(right.from, 1);
  EXPECT_EQ(right.to, 3);
  EXPECT_EQ(reg::pairwise(no_frames, 4, 4, {}).phi.tx, 0.0);
}

TEST(Compose, InnerFramesMustMatch) {
  try {
    reg::compose(no_frames, {0, 2, {}}, {3, 5, {}}, {});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "cannot compose phi_0,2 with phi_3,5: the inner frames differ");
  }
}

TEST(Evaluate, MeanMaxAndPeriodSlips) {
  const std::vector<reg::Rigid> truth = {{}, {0, 1, 1}, {0, 2, 2}, {0, 3, 3}};
  const std::vector<reg::Rigid> est = {{}, {0, 1.1, 1}, {0, 2, 2.3}, {0, 3 + 8, 3}};
  const reg::SeriesError e = reg::evaluate(est, truth, 64, 64, 8.0);
  EXPECT_NEAR(e.mean, (0.1 + 0.3 + 8.0) / 3, 1e-12);
  EXPECT_NEAR(e.max, 8.0, 1e-12);
  EXPECT_EQ(e.off_by_period, 1);
  EXPECT_THROW(reg::evaluate({{}}, truth, 64, 64, 8.0), std::invalid_argument);
}

// Issue 14's target is < 0.1 px mean error on 64 frames of 512^2 with no
// frame off by a period (docs/benchmarks.md); here 16 frames of 256^2 with
// the generator's defaults (scan-line jitter included), over two seeds. A
// broken optimiser leaves the drift (several pixels) or slips by periods.
TEST(Series, AccurateOnGeneratedSeries) {
  for (const std::uint64_t seed : {11u, 12u}) {
    flowd::tem::Params p;
    p.frames = 16;
    p.width = p.height = 256;
    p.seed = seed;
    p.drift = 1.0;  // 16 frames drifting ~2 lattice periods
    const auto s = reg::test::render(p);
    const auto est = reg::register_series(s.lookup(), p.frames, {});
    const reg::SeriesError e = reg::evaluate(est, s.truth, p.width, p.height, p.period);
    EXPECT_LT(e.mean, 0.06) << "seed " << seed;
    EXPECT_LT(e.max, 0.15) << "seed " << seed;
    EXPECT_EQ(e.off_by_period, 0) << "seed " << seed;
    // The drift really is several periods, so none of this is for free.
    EXPECT_GT(reg::Rigid::distance(s.truth.back(), reg::Rigid::identity(), p.width, p.height), p.period);
  }
}

// Chaining the pairwise motions alone accumulates their errors; compose
// registers frame 0 to frame k directly and does not.
TEST(Series, ComposeBeatsChainingThePairs) {
  flowd::tem::Params p;
  p.frames = 48;
  p.width = p.height = 128;
  p.seed = 13;
  p.dose = 2.0;
  const auto s = reg::test::render(p);
  const auto est = reg::register_series(s.lookup(), p.frames, {});
  std::vector<reg::Rigid> chained{reg::Rigid::identity()};
  for (std::int64_t k = 1; k < p.frames; ++k)
    chained.push_back(reg::then(chained.back(), reg::pairwise(s.lookup(), k - 1, k, {}).phi));
  const double scheme = reg::evaluate(est, s.truth, p.width, p.height, p.period).mean;
  const double chain = reg::evaluate(chained, s.truth, p.width, p.height, p.period).mean;
  EXPECT_LT(scheme, 0.75 * chain) << scheme << " vs " << chain;
}

// How far a plan holds (engine/placement/sensitivity.hpp): a case whose
// change point is known by hand.
#include <gtest/gtest.h>

#include "placement/sensitivity.hpp"

using namespace flowd::placement;
// flowd::Placement (an array's) is another: the site vector is spelt in full.

namespace {

// Two sites on one host of two cores; a source fixed at `near` (one node)
// makes 1 MB an item for a 0.1 s stage. At `near` that stage takes its one
// node 0.1 s an item; at `far` (two nodes) 0.05 s, but the host then pays
// for the megabyte at both ends: (0.1 + 2 MB · c) / 2 cores, which reaches
// 0.1 s at c = 0.05 s/MB (5e-8 s a byte). A million items, so the
// stream's steady state decides.
Problem two_sites_one_host(double transfer_cpu) {
  Problem p;
  p.sites.sites = {{"near", "site:near", 1, 1.0}, {"far", "site:far", 2, 1.0}};
  p.sites.links = {{1e15, 0.0, 0.0}};
  p.sites.hosts = {{"box", 2.0, {0, 1}, transfer_cpu}};
  // The coordinator at `far`: the source runs on a worker node at `near`,
  // so nothing crosses between processes while the stage stays there.
  p.sites.coordinator = 1;
  StageCost src{"src", 0.0, 1e6, 1, {1}, true, 0, false};
  StageCost work{"work", 0.1, 0, 1, {}, false, 0, false};
  p.stages = {src, work};
  p.fixed = {std::size_t{0}, std::nullopt};
  p.items = 1'000'000;
  return p;
}

}  // namespace

TEST(PlacementSensitivity, ThePlanHoldsUpToTheCostWhereMovingStopsPaying) {
  const Problem p = two_sites_one_host(2e-8);  // 20 ms/MB: moving pays
  const Plan chosen = plan(p);
  ASSERT_EQ(chosen.where, (flowd::placement::Placement{0, 1}));
  ASSERT_EQ(chosen.predicted.host_moved_bytes.size(), 1u);
  EXPECT_NEAR(chosen.predicted.host_moved_bytes[0], 2e6, 1e-6);
  const auto s = transfer_sensitivity(p, chosen);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].host, 0u);
  // Up: it changes at 5e-8 s a byte, found within the bisection's 1 %.
  EXPECT_FALSE(s[0].high_is_scan_end);
  EXPECT_LE(s[0].high, 5e-8);
  EXPECT_GT(s[0].high, 5e-8 / 1.011);
  ASSERT_TRUE(s[0].above.has_value());
  EXPECT_EQ(s[0].above->where, (flowd::placement::Placement{0, 0}));
  // Down: cheaper moving only favours the plan; it holds to the scan's end.
  EXPECT_TRUE(s[0].low_is_scan_end);
  EXPECT_NEAR(s[0].low, 2e-8 / 8, 1e-15);
  EXPECT_FALSE(s[0].below.has_value());
}

TEST(PlacementSensitivity, ThePlanHoldsDownToTheCostWhereMovingStartsPaying) {
  const Problem p = two_sites_one_host(1e-7);  // 100 ms/MB: the stage stays by its source
  const Plan chosen = plan(p);
  ASSERT_EQ(chosen.where, (flowd::placement::Placement{0, 0}));
  const auto s = transfer_sensitivity(p, chosen);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(s[0].high_is_scan_end);
  EXPECT_FALSE(s[0].low_is_scan_end);
  EXPECT_GE(s[0].low, 5e-8);
  EXPECT_LT(s[0].low, 5e-8 * 1.011);
  ASSERT_TRUE(s[0].below.has_value());
  EXPECT_EQ(s[0].below->where, (flowd::placement::Placement{0, 1}));
}

TEST(PlacementSensitivity, AHostThatPaysNothingForMovingIsLeftOut) {
  const Problem p = two_sites_one_host(0);
  EXPECT_TRUE(transfer_sensitivity(p, plan(p)).empty());
}

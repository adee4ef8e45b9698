// The static scan strategies as plans: combine counts and depth against the
// paper's table for n = 1..70, and the shape of every plan (each combine
// joins two adjacent ranges; result i is the range [0, i]).
#include <functional>
#include <map>
#include <utility>

#include <gtest/gtest.h>

#include "sched/scan_plan.hpp"

using namespace flowd::sched;

namespace {

constexpr ScanStrategy static_strategies[] = {ScanStrategy::sequential, ScanStrategy::dissemination,
                                              ScanStrategy::blelloch, ScanStrategy::ladner_fischer};

std::size_t pow2(std::uint32_t k) { return std::size_t{1} << k; }

// Ladner–Fischer's sizes counted from the recurrences of P_0 and P_k
// (independently of the plan builder): P_0(n) = P_1(h) + P_0(n − h) + (n − h)
// with h = 2^(⌈log n⌉−1); P_k(n) = ⌊n/2⌋ pairs + P_{k−1}(⌈n/2⌉) + fill-ins.
std::size_t lf_work(int k, std::size_t n) {
  if (n <= 1) return 0;
  if (k == 0) {
    const std::size_t h = pow2(ceil_log2(n) - 1);
    return lf_work(1, h) + lf_work(0, n - h) + (n - h);
  }
  // Even positions 2, 4, … below n need one combine each, except an odd n's
  // last element, which the pairs' scan gives.
  const std::size_t evens = (n - 1) / 2 - (n % 2);
  return n / 2 + lf_work(k - 1, (n + 1) / 2) + evens;
}

}  // namespace

TEST(ScanPlan, CombineCountsAndDepthFollowThePapersTable) {
  for (std::size_t n = 1; n <= 70; ++n) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const std::uint32_t lg = ceil_log2(n);
    const bool power = pow2(lg) == n;

    const auto seq = make_scan_plan(ScanStrategy::sequential, n);
    EXPECT_EQ(seq.steps.size(), n - 1);
    EXPECT_EQ(seq.depth, n - 1);

    // Round k adds n − 2^k combines: n·⌈log n⌉ − (2^⌈log n⌉ − 1), which is
    // the paper's n log n − n + 1 for a power of two.
    const auto dis = make_scan_plan(ScanStrategy::dissemination, n);
    EXPECT_EQ(dis.steps.size(), n * lg - (pow2(lg) - 1));
    if (power) {
      EXPECT_EQ(dis.steps.size(), n * lg - n + 1);
    }
    EXPECT_EQ(dis.depth, lg);

    // Up-sweep n − 1, down-sweep n − 1 − ⌈log n⌉ (the combines with the
    // identity are copies), the inclusive shift none.
    const auto ble = make_scan_plan(ScanStrategy::blelloch, n);
    EXPECT_EQ(ble.steps.size(), 2 * (n - 1) - lg);
    if (power && n >= 4) {
      EXPECT_EQ(ble.depth, 2 * lg - 2);
    }
    EXPECT_GE(ble.depth, lg);
    EXPECT_LE(ble.depth, n >= 2 ? 2 * lg - 1 : 0);

    const auto lf = make_scan_plan(ScanStrategy::ladner_fischer, n);
    EXPECT_EQ(lf.steps.size(), lf_work(0, n));
    if (n >= 2) {
      EXPECT_LT(lf.steps.size(), 4 * n - 5);
    }
    EXPECT_EQ(lf.depth, lg);
  }
  EXPECT_EQ(make_scan_plan(ScanStrategy::dissemination, 8).steps.size(), 17u);
}

// Evaluates each plan on ranges: an input is [i, i]; a combine must join
// [a, b] and [b + 1, c] into [a, c] (associative, not commutative); result
// i must be [0, i]. Rounds must be 1 + the operands' largest round.
TEST(ScanPlan, EveryCombineJoinsAdjacentRangesAndResultsArePrefixes) {
  for (auto s : static_strategies)
    for (std::size_t n = 0; n <= 70; ++n) {
      SCOPED_TRACE(std::string(name_of(s)) + ", n = " + std::to_string(n));
      const auto plan = make_scan_plan(s, n);
      std::vector<std::pair<std::size_t, std::size_t>> range;
      std::vector<std::uint32_t> round;
      for (std::size_t i = 0; i < n; ++i)
        range.emplace_back(i, i), round.push_back(0);
      std::uint32_t depth = 0;
      for (const auto& st : plan.steps) {
        ASSERT_LT(st.left, range.size());
        ASSERT_LT(st.right, range.size());
        const auto l = range[st.left], r = range[st.right];
        ASSERT_EQ(l.second + 1, r.first);
        range.emplace_back(l.first, r.second);
        round.push_back(std::max(round[st.left], round[st.right]) + 1);
        EXPECT_EQ(st.round, round.back());
        depth = std::max(depth, st.round);
      }
      EXPECT_EQ(plan.depth, depth);
      ASSERT_EQ(plan.result.size(), n);
      for (std::size_t i = 0; i < n; ++i)
        EXPECT_EQ(range.at(plan.result[i]), std::make_pair(std::size_t{0}, i));
    }
}

TEST(ScanPlan, WorkStealingHasNoStaticPlan) {
  EXPECT_THROW((void)make_scan_plan(ScanStrategy::work_stealing, 4), std::invalid_argument);
}

TEST(ScanStrategy, ParsesTheWorkflowNames) {
  EXPECT_EQ(parse_scan_strategy("sequential"), ScanStrategy::sequential);
  EXPECT_EQ(parse_scan_strategy("dissemination"), ScanStrategy::dissemination);
  EXPECT_EQ(parse_scan_strategy("blelloch"), ScanStrategy::blelloch);
  EXPECT_EQ(parse_scan_strategy("ladner-fischer"), ScanStrategy::ladner_fischer);
  EXPECT_EQ(parse_scan_strategy("work-stealing"), ScanStrategy::work_stealing);
  EXPECT_EQ(parse_scan_strategy("auto"), ScanStrategy::work_stealing);
  EXPECT_EQ(parse_scan_strategy("ladner_fischer"), std::nullopt);
  EXPECT_EQ(parse_scan_strategy(""), std::nullopt);
  for (auto s : static_strategies)
    EXPECT_EQ(parse_scan_strategy(name_of(s)), s);
  ScanStats st;
  st.hierarchical = true;
  st.strategy = ScanStrategy::work_stealing;
  EXPECT_EQ(label_of(st), "static-hierarchical");
  st.stealing = true;
  EXPECT_EQ(label_of(st), "work-stealing");
}

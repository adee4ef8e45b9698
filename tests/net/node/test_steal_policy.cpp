// When a steal pays (net/node/steal_policy.hpp): an idle thief, a victim
// with more queued than it starts soon, half of what pays (at most what the
// thief can start), never a task that moved once.
#include <vector>

#include <gtest/gtest.h>

#include "net/node/steal_policy.hpp"

namespace flowd::net::node {
namespace {

// `n` tasks of `seconds` each, all stealable, inputs where the victim is.
std::vector<HeldTask> tasks(std::size_t n, std::optional<double> seconds) {
  return std::vector<HeldTask>(n, HeldTask{seconds, 0, true});
}

TEST(StealPolicy, OnlyAnIdleSlotSteals) {
  EXPECT_EQ(idle_slots(0, 1), 1u);
  EXPECT_EQ(idle_slots(1, 4), 3u);
  EXPECT_EQ(idle_slots(1, 1), 0u) << "a node running its only slot is busy, whatever its lookahead";
  EXPECT_EQ(idle_slots(5, 4), 0u);
  EXPECT_EQ(tasks_to_ask(6, 0, 10), 0u);
}

TEST(StealPolicy, ALongQueueGivesHalfOfItsSurplusToAThiefThatCanStartIt) {
  // One slot running, six queued tasks of 100 ms: each waits >= 50 ms,
  // far more than a steal costs.
  EXPECT_EQ(tasks_that_pay(tasks(7, 0.1), 1), 6u);
  EXPECT_EQ(tasks_to_ask(6, 8, 16), 3u) << "half, for a thief with 8 idle slots";
  EXPECT_EQ(tasks_to_ask(7, 8, 16), 4u) << "half rounded up";
  EXPECT_EQ(tasks_to_ask(6, 1, 16), 1u) << "no more than it can start at once";
  EXPECT_EQ(tasks_to_ask(6, 8, 2), 2u) << "no more than it asked for";
  // One queued behind one running: it waits ~50 ms; an idle node starts it now.
  EXPECT_EQ(tasks_that_pay(tasks(2, 0.1), 1), 1u);
  EXPECT_EQ(tasks_to_ask(1, 1, 1), 1u);
  // Two slots, both running, four queued.
  EXPECT_EQ(tasks_that_pay(tasks(6, 0.1), 2), 4u);
}

TEST(StealPolicy, NothingQueuedBeyondTheSlotsIsNeverStolen) {
  EXPECT_EQ(tasks_that_pay(tasks(1, 0.1), 1), 0u);
  EXPECT_EQ(tasks_that_pay(tasks(4, 0.1), 4), 0u);
  EXPECT_EQ(tasks_that_pay(tasks(3, 0.1), 4), 0u);
  EXPECT_EQ(tasks_that_pay({}, 1), 0u);
  EXPECT_EQ(tasks_that_pay(tasks(3, std::nullopt), 4), 0u);
}

TEST(StealPolicy, TasksTheVictimStartsSoonerThanAStealCostsStay) {
  StealCosts c;
  c.round_trip_seconds = 0.002;
  // 1 ms tasks, one slot: queued task k waits 0.5 + k ms; only k >= 2
  // (2.5 ms, 3.5 ms) wait longer than the 2 ms round trip.
  EXPECT_EQ(tasks_that_pay(tasks(5, 0.001), 1, c), 2u);
  // None of three queued 0.5 ms tasks waits 2 ms.
  EXPECT_EQ(tasks_that_pay(tasks(4, 0.0005), 1, c), 0u);
  // The same queue on four slots starts even sooner.
  EXPECT_EQ(tasks_that_pay(tasks(8, 0.001), 4, c), 0u);
}

TEST(StealPolicy, MovingInputsCostsTime) {
  StealCosts c;
  c.round_trip_seconds = 0.001;
  c.link_bytes_per_second = 100e6;
  // Queued tasks of 100 ms wait 50, 150 ms; 20 MB to pull takes 200 ms.
  auto v = tasks(3, 0.1);
  for (auto& t : v)
    t.extra_bytes = 20'000'000;
  EXPECT_EQ(tasks_that_pay(v, 1, c), 0u);
  // 10 MB (100 ms): only the second queued task (150 ms) pays.
  for (auto& t : v)
    t.extra_bytes = 10'000'000;
  EXPECT_EQ(tasks_that_pay(v, 1, c), 1u);
  // Inputs the thief holds and the victim would pull make a move pay even
  // for tasks shorter than the round trip.
  auto short_tasks = tasks(3, 0.0001);
  EXPECT_EQ(tasks_that_pay(short_tasks, 1, c), 0u);
  for (auto& t : short_tasks)
    t.extra_bytes = -10'000'000;
  EXPECT_EQ(tasks_that_pay(short_tasks, 1, c), 2u);
}

TEST(StealPolicy, ATaskThatMovedOnceNeverMovesAgain) {
  auto v = tasks(5, 0.1);
  for (std::size_t i = 1; i < v.size(); ++i)
    v[i].stealable = false;
  EXPECT_EQ(tasks_that_pay(v, 1), 0u) << "every queued task was stolen once: none goes back";
  v[2].stealable = true;
  EXPECT_EQ(tasks_that_pay(v, 1), 1u);
}

TEST(StealPolicy, WithoutEstimatesEveryQueuedTaskCountsAndUnknownOnesTakeTheMean) {
  // Nothing of the stage has ended yet: the count alone decides.
  EXPECT_EQ(tasks_that_pay(tasks(5, std::nullopt), 1), 4u);
  // Tiny known tasks, one unknown: it is costed at their mean, so it does
  // not pay either.
  StealCosts c;
  c.round_trip_seconds = 0.01;
  auto v = tasks(3, 0.001);
  v[2].seconds.reset();
  EXPECT_EQ(tasks_that_pay(v, 1, c), 0u);
}

}  // namespace
}  // namespace flowd::net::node

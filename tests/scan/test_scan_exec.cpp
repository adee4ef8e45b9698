// Scans on a worker pool: every strategy, the static and the work-stealing
// hierarchical scans with several lanes and in-process ranks give the
// sequential result for non-commutative operators; stealing happens when a
// lane is held back; a combine's failure reaches the caller.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "exec/worker_pool.hpp"
#include "sched/fcfs_queue.hpp"
#include "sched/scan.hpp"

using namespace flowd;
using namespace flowd::sched;
using namespace std::chrono_literals;

namespace {

exec::WorkerPool pool(int workers) {
  return exec::WorkerPool(std::make_unique<FcfsQueue>(), exec::WorkerPool::cpu_workers(workers));
}

// 2×2 integer matrices modulo a prime: associative, not commutative.
struct Mat {
  std::array<std::uint64_t, 4> v{};
  bool operator==(const Mat&) const = default;
};
constexpr std::uint64_t prime = 1000003;
Mat mul(const Mat& a, const Mat& b) {
  return {{(a.v[0] * b.v[0] + a.v[1] * b.v[2]) % prime, (a.v[0] * b.v[1] + a.v[1] * b.v[3]) % prime,
           (a.v[2] * b.v[0] + a.v[3] * b.v[2]) % prime, (a.v[2] * b.v[1] + a.v[3] * b.v[3]) % prime}};
}
std::vector<Mat> matrices(std::size_t n) {
  std::vector<Mat> x;
  std::uint64_t s = 1410;
  auto next = [&s] { return (s = s * 6364136223846793005ull + 1442695040888963407ull) >> 44; };
  for (std::size_t i = 0; i < n; ++i)
    x.push_back({{next() % prime, next() % prime, next() % prime, next() % prime}});
  return x;
}

std::vector<std::string> words(std::size_t n) {
  std::vector<std::string> x;
  for (std::size_t i = 0; i < n; ++i)
    x.push_back(std::to_string(i) + ",");
  return x;
}

template <class T, class C>
std::vector<T> fold(const std::vector<T>& x, C c) {
  std::vector<T> y;
  for (const auto& e : x)
    y.push_back(y.empty() ? e : c(y.back(), e));
  return y;
}

struct Config {
  std::string name;
  ScanStrategy strategy;
  int lanes = 1, ranks = 1;
  bool hierarchical_static = false;
  bool paper_start = false;
};

const std::vector<Config>& configs() {
  static const std::vector<Config> c = {
      {"sequential", ScanStrategy::sequential},
      {"dissemination", ScanStrategy::dissemination},
      {"blelloch", ScanStrategy::blelloch},
      {"ladner-fischer", ScanStrategy::ladner_fischer},
      {"ws 1x1", ScanStrategy::work_stealing, 1, 1},
      {"ws 4 lanes", ScanStrategy::work_stealing, 4, 1},
      {"ws 2 ranks x 3 lanes", ScanStrategy::work_stealing, 3, 2},
      {"ws 3 ranks x 2 lanes", ScanStrategy::work_stealing, 2, 3},
      {"ws 4 lanes, the paper's start", ScanStrategy::work_stealing, 4, 1, false, true},
      {"ws 2 ranks x 3 lanes, the paper's start", ScanStrategy::work_stealing, 3, 2, false, true},
      {"static 4 lanes", ScanStrategy::work_stealing, 4, 1, true},
      {"static 2 ranks x 3 lanes", ScanStrategy::work_stealing, 3, 2, true},
  };
  return c;
}

template <class T, class C>
std::vector<T> run(const Config& c, const std::vector<T>& x, C& combine, exec::WorkerPool& pl, ScanStats& stats) {
  if (c.hierarchical_static) {
    HierarchicalOptions h;
    h.ranks = c.ranks;
    h.lanes = c.lanes;
    h.steal = false;
    return hierarchical_scan(std::span<const T>(x), combine, h, pl, stats);
  }
  ScanOptions o;
  o.strategy = c.strategy;
  o.lanes = c.lanes;
  o.ranks = c.ranks;
  o.paper_start = c.paper_start;
  return scan(std::span<const T>(x), combine, o, pl, stats);
}

constexpr std::size_t sizes[] = {0, 1, 2, 3, 7, 8, 64, 1000};

// Every configuration on every size gives the sequential fold; static plans
// report their plan's combines and depth, and lanes account for every combine.
template <class T, class C>
void expect_sequential_results(std::vector<T> (*make)(std::size_t), C combine, int workers) {
  auto pl = pool(workers);
  for (std::size_t n : sizes) {
    const auto x = make(n);
    const auto want = fold(x, combine);
    for (const auto& c : configs()) {
      SCOPED_TRACE(c.name + ", n = " + std::to_string(n));
      ScanStats st;
      EXPECT_EQ(run(c, x, combine, pl, st), want);
      EXPECT_EQ(st.elements, n);
      EXPECT_EQ(std::accumulate(st.lane_ops.begin(), st.lane_ops.end(), std::uint64_t{0}), st.combines);
      if (!c.hierarchical_static && c.strategy != ScanStrategy::work_stealing) {
        const auto plan = make_scan_plan(c.strategy, n);
        EXPECT_EQ(st.combines, plan.steps.size());
        EXPECT_EQ(st.depth, plan.depth);
      }
    }
  }
}

}  // namespace

TEST(Scan, EveryStrategyGivesTheSequentialResultForMatrixProducts) {
  expect_sequential_results(
      matrices, [](const Mat& a, const Mat& b) { return mul(a, b); }, 4);
}

TEST(Scan, EveryStrategyGivesTheSequentialResultForConcatenation) {
  expect_sequential_results(
      words, [](const std::string& a, const std::string& b) { return a + b; }, 3);
}

// One rank, T lanes, equal shares, n ≥ T: each lane reduces its share (its
// length − 1 combines), the T partials are scanned by dissemination, and
// each lane makes its share's results but for the last (known) — lane 0 none
// at all: nothing comes before it, so the prefixes of its reduction are its
// results (n0 = ⌊n/T⌋ its share's length):
// 2(n − T) − (n0 − 1 when n0 ≥ 2) + T·⌈log T⌉ − 2^⌈log T⌉ + 1.
TEST(Scan, StaticHierarchicalCountsItsCombines) {
  auto pl = pool(2);
  auto cat = [](const std::string& a, const std::string& b) { return a + b; };
  for (int lanes : {1, 2, 3, 4, 8})
    for (std::size_t n : {8, 9, 64, 100}) {
      SCOPED_TRACE(std::to_string(lanes) + " lanes, n = " + std::to_string(n));
      ScanStats st;
      (void)run(Config{"static", ScanStrategy::work_stealing, lanes, 1, true}, words(n), cat, pl, st);
      const std::size_t t = static_cast<std::size_t>(lanes), lg = ceil_log2(t);
      const std::size_t n0 = n / t;
      EXPECT_EQ(st.combines, 2 * (n - t) - (n0 >= 2 ? n0 - 1 : 0) + t * lg - ((std::size_t{1} << lg) - 1));
      EXPECT_EQ(st.steals, 0u);
      EXPECT_FALSE(st.stealing);
      EXPECT_EQ(st.lane_ops.size(), t);
    }
}

// Combines that take random times (a few hundred microseconds, from a hash of
// the operands, so no shared generator): lanes finish at different times and
// claim each other's elements; the result stays the sequential one.
TEST(Scan, WorkStealingWithRandomDelaysGivesTheSequentialResult) {
  auto pl = pool(4);
  auto slow = [](const Mat& a, const Mat& b) {
    std::this_thread::sleep_for(std::chrono::microseconds((a.v[0] ^ b.v[3]) % 400));
    return mul(a, b);
  };
  const auto x = matrices(300);
  const auto want = fold(x, mul);
  for (int ranks : {1, 2}) {
    ScanStats st;
    EXPECT_EQ(run(Config{"ws", ScanStrategy::work_stealing, 4, ranks}, x, slow, pl, st), want);
    EXPECT_TRUE(st.stealing);
    EXPECT_EQ(st.ranks, static_cast<std::uint32_t>(ranks));
  }
}

// Lane 0's first combine waits until lane 1 has combined element 9, the last
// of lane 0's share: only a lane that steals gets there, so without stealing
// the wait runs out and the test fails. Lane 1 then holds more elements.
TEST(Scan, AHeldBackLaneHasItsElementsStolen) {
  struct Range {
    int lo = 0, hi = 0;
    bool operator==(const Range&) const = default;
  };
  std::mutex m;
  std::condition_variable cv;
  bool nine_taken = false;
  bool waited_out = false;
  auto combine = [&](const Range& l, const Range& r) {
    if (l.hi + 1 != r.lo) throw std::logic_error("combined ranges that are not adjacent");
    if (l.lo == 0 && l.hi == 0 && r.lo == 1) {
      std::unique_lock lk(m);
      if (!cv.wait_for(lk, 60s, [&] { return nine_taken; })) waited_out = true;
    }
    if (l.lo == 9 && l.hi == 9) {
      std::lock_guard lk(m);
      nine_taken = true;
      cv.notify_all();
    }
    return Range{l.lo, r.hi};
  };
  std::vector<Range> x;
  for (int i = 0; i < 20; ++i)
    x.push_back({i, i});
  auto pl = pool(2);
  for (bool paper_start : {false, true}) {
    SCOPED_TRACE(paper_start ? "the paper's start" : "every lane at its share's left end");
    nine_taken = waited_out = false;
    HierarchicalOptions h;
    h.lanes = 2;
    h.paper_start = paper_start;
    ScanStats st;
    const auto y = hierarchical_scan(std::span<const Range>(x), combine, h, pl, st);
    for (int i = 0; i < 20; ++i)
      EXPECT_EQ(y[static_cast<std::size_t>(i)], (Range{0, i}));
    EXPECT_FALSE(waited_out);
    EXPECT_GT(st.steals, 0u);
    ASSERT_EQ(st.lane_names, (std::vector<std::string>{"r0.t0", "r0.t1"}));
    EXPECT_GT(st.lane_ops[1], st.lane_ops[0]);
  }
}

TEST(Scan, ACombinesFailureReachesTheCaller) {
  auto pl = pool(2);
  auto failing = [](const std::string& a, const std::string& b) {
    if (b == "13,") throw std::runtime_error("combine failed on 13");
    return a + b;
  };
  for (const auto& c : configs()) {
    SCOPED_TRACE(c.name);
    ScanStats st;
    EXPECT_THROW((void)run(c, words(40), failing, pl, st), std::runtime_error);
  }
}

// A cluster's ranks run their scan as two jobs with the global step between
// them done by the coordinator (runtime/cluster_scan.cpp): reduce_rank on
// each segment, the chain of the ranks' totals, finish_rank on each segment.
// With any split and lanes, stealing or not, the sequential result.
TEST(Scan, RanksRunAsTwoJobsGiveTheSequentialResult) {
  auto pl = pool(3);
  auto check = [&](const auto& x, auto combine) {
    using T = typename std::decay_t<decltype(x)>::value_type;
    const auto want = fold(x, combine);
    for (std::size_t ranks : {1u, 2u, 3u, 5u})
      for (int lanes : {1, 2, 4})
        for (int mode : {0, 1, 2}) {  // static, stealing, stealing from the paper's start
          const bool steal = mode > 0;
          SCOPED_TRACE(std::to_string(x.size()) + " elements, " + std::to_string(ranks) + " ranks, " +
                       std::to_string(lanes) + " lanes, mode " + std::to_string(mode));
          if (x.size() < ranks) continue;
          HierarchicalOptions h{1, lanes, steal, ScanStrategy::dissemination, cpu_only, mode == 2};
          std::vector<T> y;
          std::optional<T> prefix;
          std::uint64_t combines = 0;
          for (std::size_t r = 0; r < ranks; ++r) {
            const std::span<const T> seg(x.data() + x.size() * r / ranks, x.size() * (r + 1) / ranks - x.size() * r / ranks);
            ScanStats st;
            const auto half = reduce_rank(seg, combine, h, pl, st);
            combines += st.combines;
            ASSERT_EQ(half.lanes.size(), static_cast<std::size_t>(lanes));
            ASSERT_TRUE(half.lanes.back().prefix);
            const std::optional<T> total = prefix ? combine(*prefix, *half.lanes.back().prefix) : *half.lanes.back().prefix;
            const auto part = finish_rank(seg, half, prefix, total, combine, h, pl, st);
            combines += st.combines;
            y.insert(y.end(), part.begin(), part.end());
            prefix = total;
          }
          EXPECT_EQ(y, want);
          // Per rank of n_r elements on T lanes: n_r − (non-empty lanes) in
          // the ranges, at most T·⌈log2 T⌉ in the partials' plan, at most T
          // applies, at most n_r in the final phase (the first lane's
          // elements cost nothing there when stealing: its x[start..k] are
          // its results), plus the chain of totals.
          const std::size_t nl = static_cast<std::size_t>(lanes);
          EXPECT_GE(combines + ranks * nl, x.size());
          EXPECT_LE(combines, 2 * x.size() + ranks * (nl * 2 + nl) + ranks);
        }
  };
  for (std::size_t n : {1u, 5u, 37u}) {
    check(matrices(n), mul);
    check(words(n), [](const std::string& a, const std::string& b) { return a + b; });
  }
}

TEST(Scan, TheSecondHalfRefusesLanesThatDoNotMatch) {
  auto pl = pool(2);
  const auto x = words(10);
  auto cat = [](const std::string& a, const std::string& b) { return a + b; };
  HierarchicalOptions two{1, 2, true, ScanStrategy::dissemination, cpu_only, false};
  HierarchicalOptions three{1, 3, true, ScanStrategy::dissemination, cpu_only, false};
  ScanStats st;
  const auto half = reduce_rank(std::span<const std::string>(x), cat, two, pl, st);
  EXPECT_THROW(finish_rank(std::span<const std::string>(x), half, std::nullopt, half.lanes.back().prefix, cat, three, pl, st),
               std::invalid_argument);
  auto broken = half;
  broken.lanes[0].last = 40;
  broken.lanes[0].first = 0;
  EXPECT_THROW(finish_rank(std::span<const std::string>(x), broken, std::nullopt, half.lanes.back().prefix, cat, two, pl, st),
               std::invalid_argument);
}

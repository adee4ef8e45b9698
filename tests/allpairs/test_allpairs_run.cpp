// The all-pairs scheduler and runner (sched/allpairs_lanes.hpp,
// sched/allpairs_run.hpp): every leaf handed out once whatever the lanes do,
// every pair compared exactly once for each shape and lane count, items
// loaded once with a cache that holds them all and reloaded (but still
// correct) under a tiny cache, and the first failure stopping the run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "exec/worker_pool.hpp"
#include "sched/allpairs_run.hpp"
#include "sched/fcfs_queue.hpp"

using namespace flowd;
using namespace flowd::sched;

namespace {

exec::WorkerPool pool(int workers) {
  return exec::WorkerPool(std::make_unique<FcfsQueue>(), exec::WorkerPool::cpu_workers(workers));
}

TEST(PairLanes, EveryLeafOnceWhateverOrderTheLanesAsk) {
  for (std::size_t lanes : {1u, 2u, 3u, 7u, 40u}) {
    const PairPlan plan = plan_pairs(PairShape::triangle, 97, 97, 16);
    PairLanes l(plan, lanes);
    std::vector<int> seen(plan.leaves.size(), 0);
    // Lane 0 asks most often: the others steal from it.
    std::size_t turn = 0;
    std::set<std::size_t> finished;
    while (finished.size() < lanes) {
      const std::size_t lane = turn % 3 == 0 ? 0 : turn % lanes;
      ++turn;
      if (finished.count(lane)) continue;
      if (auto leaf = l.next(lane)) ++seen.at(*leaf);
      else finished.insert(lane);
    }
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "leaf " << i << " with " << lanes << " lanes";
    if (lanes > 1) {
      EXPECT_GT(l.steals(), 0u);
    }
  }
}

TEST(PairLanes, AThiefTakesTheBackHalfOfTheLargestRange) {
  const PairPlan plan = plan_pairs(PairShape::rectangle, 64, 64, 16);  // 256 equal leaves
  PairLanes l(plan, 2);
  // Lane 1 runs out first: it empties its own half, then steals.
  std::size_t own = 0;
  while (l.next(1)) {
    ++own;
    if (own == 128) break;
  }
  ASSERT_EQ(own, 128u);
  EXPECT_EQ(*l.next(0), 0u);
  const auto stolen = l.next(1);
  ASSERT_TRUE(stolen);
  // Lane 0 had leaves 1..127 left: the thief starts at the middle of them.
  EXPECT_NEAR(static_cast<double>(*stolen), 64.5, 1.0);
  EXPECT_EQ(l.steals(), 1u);
}

struct Case {
  PairShape shape;
  std::uint32_t rows, cols;
};

void check_all_pairs_once(const Case& c, int workers, std::size_t lanes, std::size_t cache_slots, bool strips,
                          bool prefetch) {
  const PairPlan plan = strips ? plan_strips(c.shape, c.rows, c.cols, 5, 8) : plan_pairs(c.shape, c.rows, c.cols, 8);
  auto p = pool(workers);
  std::mutex m;
  std::map<std::pair<std::uint32_t, std::uint32_t>, int> seen;
  std::atomic<int> loads{0};
  AllPairsOptions o;
  o.lanes = lanes;
  o.cache_slots = cache_slots;
  o.prefetch = prefetch;
  AllPairsStats st;
  run_allpairs<std::uint64_t>(
      plan, o,
      [&](const WorkerInfo&, std::uint64_t item) {
        ++loads;
        return item * 1000 + 7;  // what compare checks it got
      },
      [&](const WorkerInfo&, std::size_t, std::uint32_t i, std::uint32_t j, const std::uint64_t& a,
          const std::uint64_t& b) {
        const std::uint64_t col_item = c.shape == PairShape::rectangle ? c.rows + j : j;
        if (a != std::uint64_t{i} * 1000 + 7 || b != col_item * 1000 + 7) throw std::runtime_error("wrong item");
        std::lock_guard lk(m);
        ++seen[{i, j}];
      },
      p, st);
  std::uint64_t expected = 0;
  for (std::uint32_t i = 0; i < c.rows; ++i)
    for (std::uint32_t j = 0; j < c.cols; ++j) {
      const bool in = c.shape == PairShape::rectangle || (c.shape == PairShape::triangle ? i < j : i <= j);
      if (!in) {
        EXPECT_EQ(seen.count({i, j}), 0u) << i << "," << j;
        continue;
      }
      ++expected;
      const int times = seen[std::pair{i, j}];
      EXPECT_EQ(times, 1) << i << "," << j;
    }
  EXPECT_EQ(st.pairs, expected);
  std::uint64_t by_lanes = 0;
  for (auto n : st.lane_pairs) by_lanes += n;
  EXPECT_EQ(by_lanes, expected);
  EXPECT_EQ(st.loads, static_cast<std::uint64_t>(loads.load()));
  EXPECT_EQ(st.leaf_runs.size(), plan.leaves.size());
  EXPECT_LE(st.prefetched, st.loads);
  if (!prefetch) {
    EXPECT_EQ(st.prefetched, 0u);
  }
  if (cache_slots == 0 && expected > 0) {
    EXPECT_EQ(st.load_ratio(), 1.0) << "a cache holding every item loads each once";
  }
}

TEST(RunAllPairs, EveryPairExactlyOnceForEachShapeAndLaneCount) {
  for (const Case& c : {Case{PairShape::triangle, 37, 37}, Case{PairShape::triangle_with_diagonal, 30, 30},
                        Case{PairShape::rectangle, 13, 41}, Case{PairShape::triangle, 1, 1},
                        Case{PairShape::triangle, 2, 2}})
    for (std::size_t lanes : {1u, 2u, 5u})
      for (std::size_t slots : {std::size_t{0}, 2 * lanes})
        for (bool strips : {false, true})
          for (bool prefetch : {false, true}) {
            SCOPED_TRACE("rows " + std::to_string(c.rows) + " lanes " + std::to_string(lanes) + " slots " +
                         std::to_string(slots) + (strips ? " strips" : " hilbert") +
                         (prefetch ? " loading ahead" : ""));
            // A band of 5 rows stays pinned, and each lane streams a column.
            check_all_pairs_once(c, 3, lanes, strips && slots ? std::max(slots, 5 + lanes) : slots, strips, prefetch);
          }
}

TEST(RunAllPairs, ATinyCacheEvictsAndReloadsAndStripsKeepRLowWithAThirdCached) {
  auto p = pool(2);
  auto run = [&](const PairPlan& plan, std::size_t slots) {
    AllPairsOptions o;
    o.lanes = 2;
    o.cache_slots = slots;
    AllPairsStats st;
    run_allpairs<int>(
        plan, o, [](const WorkerInfo&, std::uint64_t) { return 1; },
        [](const WorkerInfo&, std::size_t, std::uint32_t, std::uint32_t, const int&, const int&) {}, p, st);
    return st;
  };
  const PairPlan hilbert = plan_pairs(PairShape::triangle, 120, 120, 16);
  const AllPairsStats tiny = run(hilbert, 4), third = run(hilbert, 40);
  EXPECT_GT(tiny.evictions, 0u);
  EXPECT_GT(tiny.load_ratio(), 10.0) << "4 slots for 120 items: most pairs miss";
  EXPECT_LT(third.load_ratio(), tiny.load_ratio());
  // A band of 36 rows (40 slots less two per lane) pinned while the columns
  // stream past: 36 + 84 + 36 + 48 + 36 + 12 + 12 loads (R = 2.2), whatever
  // the lanes do.
  const AllPairsStats strips = run(plan_strips(PairShape::triangle, 120, 120, 36, 16), 40);
  EXPECT_LE(strips.load_ratio(), 2.2 + 1e-9);
  EXPECT_EQ(strips.evictions + 40, strips.loads);
  EXPECT_LT(strips.load_ratio(), third.load_ratio()) << "hilbert R " << third.load_ratio();
}

// Loads that wait (a slow disk): the loader threads load a band's rows
// together and its columns ahead of the lanes, and no item more often than
// a band plan loads it without them.
TEST(RunAllPairs, LoaderThreadsLoadAheadWithoutLoadingMore) {
  auto p = pool(2);
  // 60 items, 20 slots, 2 lanes: bands of 16 rows; at most 16 + 44, 16 + 28,
  // 16 + 12 and 12 loads.
  const PairPlan plan = plan_strips(PairShape::triangle, 60, 60, 16, 16);
  auto run = [&](bool prefetch) {
    AllPairsOptions o;
    o.lanes = 2;
    o.cache_slots = 20;
    o.prefetch = prefetch;
    AllPairsStats st;
    std::mutex m;
    std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
    run_allpairs<std::uint64_t>(
        plan, o,
        [](const WorkerInfo&, std::uint64_t item) {
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
          return item;
        },
        [&](const WorkerInfo&, std::size_t, std::uint32_t i, std::uint32_t j, const std::uint64_t& a,
            const std::uint64_t& b) {
          if (a != i || b != j) throw std::runtime_error("wrong item");
          std::lock_guard lk(m);
          EXPECT_TRUE(seen.insert({i, j}).second) << i << "," << j << " twice";
        },
        p, st);
    EXPECT_EQ(seen.size(), 60u * 59u / 2u);
    EXPECT_LE(st.loads, 144u);
    return st;
  };
  const AllPairsStats off = run(false), on = run(true);
  EXPECT_EQ(off.prefetched, 0u);
  EXPECT_GT(on.prefetched, 0u) << "eight loader threads for a band of 16 rows that each take 3 ms";
  EXPECT_LE(on.prefetched, on.loads);
}

// Lanes on GPU-like workers (a NearLevel): they read their items from their
// own device cache, copied up from the host cache on a miss there; CPU lanes
// read the host cache. Every pair once, for a Hilbert plan and bands, and
// the device counts add up.
TEST(RunAllPairs, LanesOnGpusReadTheirDeviceCacheFilledFromTheHostCache) {
  std::vector<WorkerInfo> ws = exec::WorkerPool::cpu_workers(2);
  for (int g = 0; g < 2; ++g) ws.push_back({2 + g, WorkerKind::sim_gpu, g, "sim" + std::to_string(g)});
  exec::WorkerPool p(std::make_unique<FcfsQueue>(), ws);
  constexpr std::uint64_t on_device = 1'000'000;
  for (bool strips : {false, true}) {
    SCOPED_TRACE(strips ? "bands" : "hilbert");
    const std::uint32_t n = 40;
    const PairPlan plan = strips ? plan_strips(PairShape::triangle, n, n, 6, 8) : plan_pairs(PairShape::triangle, n, n, 8);
    std::map<int, std::unique_ptr<ItemCache<std::uint64_t>>> caches;
    NearLevel<std::uint64_t> near;
    for (int id : {2, 3}) {
      caches[id] = std::make_unique<ItemCache<std::uint64_t>>(strips ? 7 : 6);
      near.caches.push_back(caches[id].get());
    }
    near.cache_of = [&](const WorkerInfo& w) -> ItemCache<std::uint64_t>* {
      const auto it = caches.find(w.id);
      return it == caches.end() ? nullptr : it->second.get();
    };
    std::atomic<std::uint64_t> promotions{0};
    near.promote = [&](const WorkerInfo& w, std::uint64_t item, const std::uint64_t& host) {
      if (!is_gpu_like(w.kind)) throw std::runtime_error("a copy up on a CPU lane");
      if (host != item) throw std::runtime_error("copied up the wrong item");
      ++promotions;
      return host + on_device;
    };
    AllPairsOptions o;
    o.lanes = 4;
    o.cache_slots = strips ? 14 : 0;
    o.runs_on = cpu_only | bit(WorkerKind::sim_gpu);
    AllPairsStats st;
    std::mutex m;
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> seen;
    std::atomic<std::uint64_t> on_gpus{0};
    run_allpairs<std::uint64_t>(
        plan, o, [](const WorkerInfo&, std::uint64_t item) { return item; },
        [&](const WorkerInfo& w, std::size_t, std::uint32_t i, std::uint32_t j, const std::uint64_t& a,
            const std::uint64_t& b) {
          const std::uint64_t base = is_gpu_like(w.kind) ? on_device : 0;
          if (a != i + base || b != j + base) throw std::runtime_error("a lane read the wrong cache");
          if (base) ++on_gpus;
          std::this_thread::sleep_for(std::chrono::microseconds(20));  // every lane gets to run
          std::lock_guard lk(m);
          ++seen[{i, j}];
        },
        p, st, static_cast<ItemCache<std::uint64_t>*>(nullptr), &near);
    EXPECT_EQ(seen.size(), std::size_t{n} * (n - 1) / 2);
    for (const auto& [ij, times] : seen) EXPECT_EQ(times, 1) << ij.first << "," << ij.second;
    EXPECT_GT(on_gpus.load(), 0u) << "the simulated GPUs' lanes ran pairs";
    EXPECT_EQ(st.device_loads, promotions.load());
    EXPECT_EQ(st.device_slots, strips ? 14u : 12u);
    if (!strips) {
      EXPECT_GT(st.device_hits, 0u) << "a leaf's items stay in 6 slots while its rows are walked";
      EXPECT_GT(st.device_evictions, 0u) << "6 slots per GPU for 40 items";
    }
  }
}

TEST(RunAllPairs, RefusesADeviceCacheTooSmallForABand) {
  std::vector<WorkerInfo> ws = exec::WorkerPool::cpu_workers(1);
  ws.push_back({1, WorkerKind::sim_gpu, 0, "sim0"});
  exec::WorkerPool p(std::make_unique<FcfsQueue>(), ws);
  const PairPlan plan = plan_strips(PairShape::triangle, 20, 20, 6, 8);
  ItemCache<int> small(6);  // a band of 6 rows and a column need 7
  NearLevel<int> near;
  near.caches = {&small};
  near.cache_of = [&](const WorkerInfo& w) { return w.kind == WorkerKind::cpu ? nullptr : &small; };
  near.promote = [](const WorkerInfo&, std::uint64_t, const int& v) { return v; };
  AllPairsOptions o;
  o.lanes = 2;
  o.cache_slots = 10;
  o.runs_on = cpu_only | bit(WorkerKind::sim_gpu);
  AllPairsStats st;
  try {
    run_allpairs<int>(
        plan, o, [](const WorkerInfo&, std::uint64_t) { return 0; },
        [](const WorkerInfo&, std::size_t, std::uint32_t, std::uint32_t, const int&, const int&) {}, p, st,
        static_cast<ItemCache<int>*>(nullptr), &near);
    FAIL() << "a GPU cache of 6 slots ran a band of 6 rows";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("GPU's all-pairs cache of 6 slots is too small"), std::string::npos)
        << e.what();
  }
}

TEST(PlanStrips, BandsCoverEveryPairOnceInOrder) {
  for (PairShape shape : {PairShape::triangle, PairShape::triangle_with_diagonal, PairShape::rectangle}) {
    const std::uint32_t rows = 23, cols = shape == PairShape::rectangle ? 31 : 23;
    const PairPlan plan = plan_strips(shape, rows, cols, 7, 10);
    EXPECT_EQ(plan.order, PairPlan::Order::strips);
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> seen;
    std::uint32_t last_band = 0;
    for (const auto& b : plan.leaves) {
      EXPECT_GE(b.row_begin, last_band) << "bands in order";
      last_band = b.row_begin;
      EXPECT_LE(b.row_end - b.row_begin, 7u);
      for_each_pair(shape, b, [&](std::uint32_t i, std::uint32_t j) { ++seen[std::pair{i, j}]; });
    }
    EXPECT_EQ(seen.size(), plan.total_pairs);
    for (const auto& [ij, times] : seen) EXPECT_EQ(times, 1);
  }
}

TEST(RunAllPairs, TheFirstFailureStopsEveryLaneAndIsRethrown) {
  const PairPlan plan = plan_pairs(PairShape::triangle, 60, 60, 8);
  auto p = pool(3);
  std::atomic<int> compared{0};
  AllPairsOptions o;
  o.lanes = 3;
  AllPairsStats st;
  EXPECT_THROW(run_allpairs<int>(
                   plan, o,
                   [](const WorkerInfo&, std::uint64_t item) {
                     if (item == 31) throw std::runtime_error("item 31 is corrupt");
                     return 0;
                   },
                   [&](const WorkerInfo&, std::size_t, std::uint32_t, std::uint32_t, const int&, const int&) {
                     ++compared;
                   },
                   p, st),
               std::runtime_error);
  EXPECT_LT(compared.load(), 60 * 59 / 2);
}

TEST(RunAllPairs, RefusesACacheTooSmallForItsLanes) {
  const PairPlan plan = plan_pairs(PairShape::triangle, 10, 10, 4);
  auto p = pool(1);
  AllPairsOptions o;
  o.lanes = 3;
  o.cache_slots = 5;
  AllPairsStats st;
  try {
    run_allpairs<int>(
        plan, o, [](const WorkerInfo&, std::uint64_t) { return 0; },
        [](const WorkerInfo&, std::size_t, std::uint32_t, std::uint32_t, const int&, const int&) {}, p, st);
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at least 6"), std::string::npos) << e.what();
  }
}

}  // namespace

// The fixed-slot cache of the all-pairs pattern (memory/slot_cache.hpp):
// hits and loads, least-recently-used eviction of unpinned slots only, a
// writer's slot is waited for, a failed load lets the next caller load, and
// under many threads on a tiny cache every reader sees the key it asked for.
#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "memory/slot_cache.hpp"

using flowd::memory::SlotCache;
using namespace std::chrono_literals;

TEST(SlotCache, LoadsOnceThenHitsAndEvictsTheLeastRecentlyUsedUnpinnedSlot) {
  SlotCache c(2);
  const auto a = c.acquire(10);
  EXPECT_FALSE(a.hit);
  c.publish(a.slot);
  c.release(a.slot);
  const auto b = c.acquire(20);
  EXPECT_FALSE(b.hit);
  c.publish(b.slot);
  c.release(b.slot);
  const auto a2 = c.acquire(10);  // 10 is now the most recently used
  EXPECT_TRUE(a2.hit);
  EXPECT_EQ(a2.slot, a.slot);
  c.release(a2.slot);
  const auto d = c.acquire(30);  // evicts 20, the least recently used
  EXPECT_FALSE(d.hit);
  EXPECT_EQ(d.slot, b.slot);
  c.publish(d.slot);
  EXPECT_EQ(c.key_of(a.slot), 10u);
  EXPECT_EQ(c.key_of(b.slot), 30u);
  // 30 is pinned (its writer reads it) and 10 is not: 40 takes 10's slot.
  const auto e = c.acquire(40);
  EXPECT_EQ(e.slot, a.slot);
  c.publish(e.slot);
  // Both pinned now: no slot for 50 until a release.
  EXPECT_FALSE(c.try_acquire(50).has_value());
  c.release(d.slot);
  const auto f = c.try_acquire(50);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->slot, d.slot);
  const auto s = c.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.loads, 5u);
  EXPECT_EQ(s.evictions, 3u);
}

TEST(SlotCache, AKeyBeingWrittenIsWaitedForAndAFailedLoadIsRetriedByTheNext) {
  SlotCache c(1);
  const auto w = c.acquire(7);
  ASSERT_FALSE(w.hit);
  EXPECT_FALSE(c.try_acquire(7).has_value()) << "being written";
  std::atomic<bool> got{false};
  SlotCache::Lease seen;
  std::thread reader([&] {
    seen = c.acquire(7);
    got = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(got.load());
  c.abandon(w.slot);  // the load failed: the waiting caller loads it itself
  reader.join();
  EXPECT_FALSE(seen.hit);
  c.publish(seen.slot);
  c.release(seen.slot);
  EXPECT_TRUE(c.acquire(7).hit);
  EXPECT_GE(c.stats().waits, 1u);
}

TEST(SlotCache, ManyThreadsOnATinyCacheEachReadTheKeyTheyAskedFor) {
  constexpr std::size_t slots = 3;
  SlotCache c(slots);
  std::vector<std::atomic<std::int64_t>> payload(slots);  // what each slot holds: the key written into it
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int k = 0; k < 2000; ++k) {
        const std::uint64_t key = rng() % 7;
        const auto lease = c.acquire(key);
        if (!lease.hit) {
          payload[lease.slot] = static_cast<std::int64_t>(key);
          c.publish(lease.slot);
        }
        if (payload[lease.slot] != static_cast<std::int64_t>(key)) ++wrong;
        c.release(lease.slot);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  const auto s = c.stats();
  EXPECT_EQ(s.hits + s.loads, 16000u);
  EXPECT_GT(s.evictions, 0u);
}

TEST(SlotCache, MisuseIsRefused) {
  SlotCache none(0);
  EXPECT_THROW(none.acquire(1), std::logic_error);
  SlotCache c(1);
  EXPECT_THROW(c.publish(0), std::logic_error);
  EXPECT_THROW(c.release(0), std::logic_error);
  const auto l = c.acquire(1);
  c.publish(l.slot);
  EXPECT_THROW(c.abandon(l.slot), std::logic_error);
  c.release(l.slot);
  EXPECT_THROW(c.release(l.slot), std::logic_error);
}

#pragma once
// Running an all-pairs plan on lanes with a cache of preprocessed items
// (Rocket's runtime in one process; issue 15). Pure: the caller supplies how
// an item is loaded (load + preprocess) and how a pair is compared, and the
// workers through a TaskSubmitter (sched/task_graph.hpp), one task per lane.
//
// Items are numbered: a triangle's set is 0..n-1 (row i and column i are
// item i); a rectangle's rows are 0..rows-1 and its columns rows..rows+cols-1.
// A lane walks a leaf along its shorter side, keeping that item pinned while
// it compares it with each item of the longer side, so at most two slots per
// lane are pinned and any cache of at least 2 × lanes slots makes progress;
// the LRU order keeps the longer side's items across the walk. In a bands
// plan (plan_strips) the band's rows stay pinned while the lanes work on it
// and the columns stream past: the cache needs the band's rows plus one
// slot per lane.
//
// Loader threads (sched/allpairs_prefetch.hpp) load items ahead of the lanes,
// as Rocket's I/O threads do: a band's rows all at once when the band
// starts, then its columns in the order the lanes will take them, at most
// one per lane ahead (the slot the band leaves beside each lane's own
// column); in a Hilbert plan whose cache holds every item, the items of
// each lane's current and next leaf. A lane that gets to an item first
// loads it itself, as without them.
//
// Lanes on GPUs (a NearLevel) read from a cache of their own GPU's memory,
// Rocket's device cache: a miss there is looked up in the host cache (and
// loaded into it on a miss there) and then copied up. Such a lane pins its
// items in the device cache only, so that cache needs two slots (a bands
// plan: the tallest band and one); the host cache's slots are held only for
// the copy.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <time.h>

#include "memory/slot_cache.hpp"
#include "sched/allpairs_lanes.hpp"
#include "sched/allpairs_plan.hpp"
#include "sched/allpairs_prefetch.hpp"
#include "sched/task_graph.hpp"

namespace flowd::sched {

struct AllPairsOptions {
  std::size_t lanes = 1;
  std::size_t cache_slots = 0;  // 0: one per item (nothing is loaded twice)
  std::size_t max_loads = 8;    // loads running at once (Rocket: 8), and loader threads
  bool prefetch = true;         // load ahead of the lanes on max_loads loader threads
  KindMask runs_on = cpu_only;
};

// Preprocessed items in fixed slots: the index says which item is in which
// slot and in what state, `data` holds them. A run makes its own; a cluster
// worker node keeps one across the jobs of a stage (runtime/allpairs_job.cpp),
// so that what one job loaded serves the next.
template <class T>
struct ItemCache {
  explicit ItemCache(std::size_t slots) : index(slots), data(slots) {}
  memory::SlotCache index;
  std::vector<T> data;
};

// The level above the host cache for lanes on GPUs: each GPU-like worker's
// cache of items in its memory (the caller makes and owns them), and how a
// host-cached item is copied up.
template <class T>
struct NearLevel {
  // The cache of the worker a lane runs on, or null: the lane reads the
  // host cache (a CPU worker).
  std::function<ItemCache<T>*(const WorkerInfo&)> cache_of;
  // A copy of `host` (item `item`, as the host cache holds it) in the
  // worker's memory.
  std::function<T(const WorkerInfo&, std::uint64_t item, const T& host)> promote;
  // Every cache cache_of may return (checked for size; their counts go into
  // the stats).
  std::vector<ItemCache<T>*> caches;
};

// One leaf as it ran, for the report's picture of the pair matrix.
struct LeafRun {
  std::uint32_t leaf = 0, lane = 0;
  double start = 0, end = 0;  // seconds from the run's start
};

struct AllPairsStats {
  std::uint64_t items = 0, pairs = 0, leaves = 0;
  std::uint64_t loads = 0, hits = 0, evictions = 0, waits = 0, steals = 0;  // hits: cache lookups answered
  std::uint64_t prefetched = 0;  // of the loads, those the loader threads made ahead of a lane
  // A cluster run (runtime/cluster_allpairs.cpp): misses of a node's cache
  // that a peer answered with the item preprocessed (not in `loads`), and
  // the peers asked that no longer held it.
  std::uint64_t peer_hits = 0, peer_misses = 0;
  // Lanes on GPUs (a NearLevel): lookups their device caches answered,
  // copies up from the host cache, evictions, and the caches' slots summed.
  std::uint64_t device_hits = 0, device_loads = 0, device_evictions = 0;
  std::size_t device_slots = 0;
  std::uint32_t nodes = 0;  // worker nodes that ran leaves (0: this process)
  std::uint32_t nodes_lost = 0;  // of them, lost during a job (their jobs' loads are not counted)
  std::size_t cache_slots = 0;
  // Summed over lanes and loader threads: the loads' CPU time, their wall
  // time, and the compares' CPU time. T_min counts CPU time: wall time
  // would count the waits of loader threads sharing the cores with the
  // lanes, or of a node waiting for a peer's load.
  double load_seconds = 0, load_wall_seconds = 0, compare_seconds = 0;
  double seconds = 0;  // wall time of the whole plan
  std::vector<std::uint64_t> lane_pairs;
  std::vector<double> lane_busy_seconds;
  std::vector<std::string> lane_names;
  std::vector<LeafRun> leaf_runs;

  // R = loads / n: 1 when every item was loaded once.
  double load_ratio() const { return items ? static_cast<double>(loads) / static_cast<double>(items) : 0.0; }
  // Of the items the pairs used (two per pair), the share that came from
  // the cache rather than a load: the same measure whichever plan ran (a
  // band's pinned rows are looked up once, but serve every pair of it).
  double hit_rate() const {
    const double uses = 2.0 * static_cast<double>(pairs);
    return uses > 0 ? std::max(0.0, 1.0 - static_cast<double>(loads + peer_hits) / uses) : 0.0;
  }
  // Of the GPU lanes' lookups, the share their device cache answered.
  double device_hit_rate() const {
    const auto lookups = device_hits + device_loads;
    return lookups ? static_cast<double>(device_hits) / static_cast<double>(lookups) : 0.0;
  }
  // Of the items the nodes' caches missed, the share a peer answered.
  double peer_hit_rate() const {
    const auto missed = loads + peer_hits;
    return missed ? static_cast<double>(peer_hits) / static_cast<double>(missed) : 0.0;
  }
  // Rocket's model: T_min = n·t_pre + C(n,2)·t_cmp, with the mean times per
  // load (CPU) and per compare measured in this run; efficiency = (T_min / p) / T.
  double t_min() const {
    const double t_pre = loads ? load_seconds / static_cast<double>(loads) : 0.0;
    const double t_cmp = pairs ? compare_seconds / static_cast<double>(pairs) : 0.0;
    return static_cast<double>(items) * t_pre + static_cast<double>(pairs) * t_cmp;
  }
  double efficiency() const {
    const double p = static_cast<double>(std::max<std::size_t>(lane_pairs.size(), 1));
    return seconds > 0 ? t_min() / p / seconds : 0.0;
  }
};

namespace detail {

// This thread's CPU time, in seconds.
inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// load(worker, item), or load(worker, item, on_lane) where the caller's
// load wants to know whether a lane (true) or a loader thread calls it.
template <class Load>
decltype(auto) call_load(Load& load, const WorkerInfo& w, std::uint64_t item, bool on_lane) {
  if constexpr (std::is_invocable_v<Load&, const WorkerInfo&, std::uint64_t, bool>)
    return load(w, item, on_lane);
  else
    return load(w, item);
}

// At most `n` holders at once.
class Gate {
public:
  explicit Gate(std::size_t n) : free_(std::max<std::size_t>(n, 1)) {}
  void enter() {
    std::unique_lock lk(m_);
    cv_.wait(lk, [&] { return free_ > 0; });
    --free_;
  }
  void leave() {
    {
      std::lock_guard lk(m_);
      ++free_;
    }
    cv_.notify_one();
  }

private:
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t free_;
};

}  // namespace detail

// Runs every pair of `plan` once: compare(worker, lane, i, j, a, b) with a
// and b the preprocessed items (T) of row i and column j. load(worker, item)
// makes an item's T (called about once per item when the cache holds them
// all; again after an eviction). The first exception from load or compare
// stops every lane and is rethrown here.
//
// `kept`, when given, is the cache to use (and leave filled) instead of one
// of o.cache_slots made here; the stats then count this run's lookups only.
// `near`, when given, is the device level of lanes on GPUs: compare then
// gets such a lane's items from its device cache.
template <class T, class Load, class Compare, TaskSubmitter P>
void run_allpairs(const PairPlan& plan, const AllPairsOptions& o, Load&& load, Compare&& compare, P& pool,
                  AllPairsStats& stats, ItemCache<T>* kept = nullptr, const NearLevel<T>* near = nullptr) {
  using Clock = std::chrono::steady_clock;
  const std::uint64_t items = plan.shape == PairShape::rectangle ? std::uint64_t{plan.rows} + plan.cols : plan.rows;
  const std::size_t lanes = std::max<std::size_t>(o.lanes, 1);
  std::size_t slots = kept ? kept->index.slots() : o.cache_slots ? o.cache_slots : static_cast<std::size_t>(items);
  if (slots < 2 * lanes) {
    if (o.cache_slots || kept)
      throw std::invalid_argument("an all-pairs cache of " + std::to_string(slots) + " slots is too small for " +
                                  std::to_string(lanes) + " lanes: each lane pins two items, so it needs at least " +
                                  std::to_string(2 * lanes));
    slots = 2 * lanes;
  }
  // A bands plan's tallest band (0 for a Hilbert plan).
  std::size_t tallest = 0;
  if (plan.order == PairPlan::Order::strips) {
    for (const auto& b : plan.leaves) tallest = std::max<std::size_t>(tallest, b.row_end - b.row_begin);
    if (!o.cache_slots && !kept) slots = std::max(slots, tallest + lanes);
    if (slots < tallest + lanes)
      throw std::invalid_argument("an all-pairs cache of " + std::to_string(slots) + " slots cannot hold a band of " +
                                  std::to_string(tallest) + " rows and a column for each of " + std::to_string(lanes) +
                                  " lanes: it needs at least " + std::to_string(tallest + lanes));
  }
  if (near) {
    // A GPU lane pins its outer and inner item (a band's rows and a column)
    // in its device cache; one lane per GPU worker at a time.
    const std::size_t need = tallest ? tallest + 1 : 2;
    for (const ItemCache<T>* c : near->caches)
      if (c->index.slots() < need)
        throw std::invalid_argument("a GPU's all-pairs cache of " + std::to_string(c->index.slots()) +
                                    " slots is too small: a lane on the GPU pins " + std::to_string(need) +
                                    (tallest ? " items (a band's rows and a column)" : " items"));
  }
  std::vector<memory::SlotCache::Stats> near_before;
  if (near)
    for (const ItemCache<T>* c : near->caches) near_before.push_back(c->index.stats());
  std::optional<ItemCache<T>> own;
  if (!kept) own.emplace(slots);
  ItemCache<T>& store = kept ? *kept : *own;
  memory::SlotCache& cache = store.index;
  std::vector<T>& slot_data = store.data;
  const auto before = cache.stats();
  detail::Gate loads_gate(o.max_loads);
  PairLanes sched(plan, lanes);

  stats = AllPairsStats{};
  stats.items = items;
  stats.pairs = plan.total_pairs;
  stats.leaves = plan.leaves.size();
  stats.cache_slots = slots;
  stats.lane_pairs.assign(lanes, 0);
  stats.lane_busy_seconds.assign(lanes, 0);
  stats.lane_names.assign(lanes, {});

  std::mutex m;  // guards failure, the leaf runs and the sums below
  std::exception_ptr failure;
  std::atomic<bool> stop{false};
  double load_s = 0, load_wall_s = 0, compare_s = 0;
  const auto t0 = Clock::now();
  auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); };

  // A bands plan: each band's rows stay pinned by every lane working on it,
  // so only the columns stream through the cache. A lane moving to the
  // next band first waits until every leaf of the earlier bands is done:
  // two bands pinned at once would not fit.
  const bool bands = plan.order == PairPlan::Order::strips;
  std::mutex band_m;
  std::condition_variable band_cv;
  auto fail = [&](std::exception_ptr e) {
    {
      std::lock_guard lk(m);
      if (!failure) failure = e;
      stop = true;
    }
    std::lock_guard lk(band_m);  // wakes lanes waiting for a band
    band_cv.notify_all();
  };

  // Loading ahead. ahead[item]: 0 not asked for, 1 asked for, 2 (a band's
  // row or column) loaded and pinned by its loader until a lane takes it,
  // so that nothing evicts it first. In a Hilbert plan an item is asked for
  // once (the cache evicts nothing).
  const std::uint64_t col_base = plan.shape == PairShape::rectangle ? plan.rows : 0;
  const bool ahead_bands = o.prefetch && bands;
  const bool ahead_leaves = o.prefetch && !bands && slots >= items;
  // Columns loaded ahead and not yet taken: the slots a band leaves beside
  // the lanes' own columns, at most one per lane.
  const std::size_t stream_limit = ahead_bands ? std::min(lanes, slots - tallest - lanes) : 0;
  std::vector<std::atomic<std::uint8_t>> ahead(ahead_bands || ahead_leaves ? items : 0);
  // The slot a loader keeps an item pinned in (ahead == 2), for the lane
  // that takes it (which may read it from its device cache instead).
  std::vector<std::size_t> ahead_slot(ahead_bands ? items : 0);
  std::atomic<std::uint64_t> prefetched{0};
  auto fetch = [&](const PrefetchRequest& r) {
    if (stop.load(std::memory_order_relaxed)) return;
    // A band's row or column is pinned for the lane that will take it,
    // cached already or loaded now; but not once a lane has taken it: a
    // lane takes an item while it has it pinned, so an item absent and not
    // taken has not been loaded yet. Other items are only loaded.
    std::size_t slot = 0;
    bool load_it = true;
    if (r.keep_pinned) {
      const auto lease = cache.try_acquire(r.item, [&] { return ahead[r.item].load() == 1; });
      if (!lease) return;  // being loaded, taken, or no slot free: a lane loads it
      slot = lease->slot;
      load_it = !lease->hit;
    } else {
      const auto reserved = cache.reserve_if_absent(r.item);
      if (!reserved) return;  // cached, being loaded, or no slot free
      slot = *reserved;
    }
    if (load_it) {
      loads_gate.enter();
      const auto ts = Clock::now();
      const double cpu0 = detail::thread_cpu_seconds();
      try {
        slot_data[slot] = detail::call_load(load, *r.worker, r.item, false);
      } catch (...) {
        loads_gate.leave();
        cache.abandon(slot);
        fail(std::current_exception());
        return;
      }
      const double cpu = detail::thread_cpu_seconds() - cpu0;
      const double took = std::chrono::duration<double>(Clock::now() - ts).count();
      loads_gate.leave();
      cache.publish(slot);
      ++prefetched;
      std::lock_guard lk(m);
      load_s += cpu;
      load_wall_s += took;
    }
    std::uint8_t asked = 1;
    if (r.keep_pinned) ahead_slot[r.item] = slot;  // published by the exchange below
    if (!(r.keep_pinned && ahead[r.item].compare_exchange_strong(asked, 2))) cache.release(slot);
  };
  // No threads where nothing would be asked of them (a Hilbert plan whose
  // cache evicts: a lane's next leaf may evict what it holds now).
  Prefetcher loaders(ahead_bands || ahead_leaves ? std::max<std::size_t>(o.max_loads, 1) : 0, fetch);
  // The band whose columns stream: the next column to ask for, its end, and
  // how many were asked for and not yet taken.
  std::mutex stream_m;
  struct {
    std::uint32_t band = 0, next = 0, end = 0;
    bool started = false;
    std::size_t outstanding = 0;
  } stream;
  auto pump_locked = [&](const WorkerInfo& w) {
    while (stream.outstanding < stream_limit && stream.next < stream.end) {
      const std::uint64_t item = col_base + stream.next++;
      std::uint8_t none = 0;
      if (!ahead[item].compare_exchange_strong(none, 1)) continue;
      ++stream.outstanding;
      loaders.request({item, true, &w});
    }
  };
  // Each band's columns as its leaves in this plan span them: all the
  // columns after it, or a part where the plan is a cluster job's stretch
  // (runtime/cluster_allpairs.cpp).
  std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> band_columns;
  if (ahead_bands)
    for (const auto& b : plan.leaves) {
      auto [it, fresh] = band_columns.try_emplace(b.row_begin, b.col_begin, b.col_end);
      if (!fresh) it->second = {std::min(it->second.first, b.col_begin), std::max(it->second.second, b.col_end)};
    }
  auto start_band = [&](const PairBlock& b, const WorkerInfo& w) {
    if (!ahead_bands) return;
    std::lock_guard lk(stream_m);
    if (stream.started && stream.band == b.row_begin) return;  // another lane started it
    stream.started = true;
    stream.band = b.row_begin;
    const auto [first, end] = band_columns.at(b.row_begin);
    // A triangle's own rows are the band's, loaded as rows.
    stream.next = plan.shape == PairShape::rectangle ? first : std::max(first, b.row_end);
    stream.end = end;
    stream.outstanding = 0;
    for (std::uint32_t i = b.row_begin; i < b.row_end; ++i) {
      std::uint8_t none = 0;
      if (ahead[i].compare_exchange_strong(none, 1)) loaders.request({i, true, &w});
    }
    pump_locked(w);
  };
  // A lane has pinned the band's row `item`: the loader's pin goes.
  auto took_row = [&](std::uint64_t item) {
    if (ahead_bands && ahead[item].exchange(0) == 2) cache.release(ahead_slot[item]);
  };
  // A lane has pinned the column `item`: the loader's pin goes, and the
  // next column is asked for.
  auto took_column = [&](std::uint64_t item, const WorkerInfo& w) {
    if (!ahead_bands) return;
    const std::uint8_t was = ahead[item].exchange(0);
    if (was == 0) return;
    if (was == 2) cache.release(ahead_slot[item]);
    std::lock_guard lk(stream_m);
    --stream.outstanding;
    pump_locked(w);
  };
  auto ask_leaf = [&](std::size_t leaf, const WorkerInfo& w) {
    if (!ahead_leaves) return;
    const PairBlock& b = plan.leaves[leaf];
    auto ask = [&](std::uint64_t item) {
      std::uint8_t none = 0;
      if (ahead[item].compare_exchange_strong(none, 1)) loaders.request({item, false, &w});
    };
    for (std::uint32_t i = b.row_begin; i < b.row_end; ++i) ask(i);
    for (std::uint32_t j = b.col_begin; j < b.col_end; ++j) ask(col_base + j);
  };
  std::map<std::uint32_t, std::size_t> band_left;  // band (first row) -> leaves not done
  if (bands)
    for (const auto& b : plan.leaves) ++band_left[b.row_begin];
  auto earlier_bands_done = [&](std::uint32_t band) {
    for (const auto& [r0, left] : band_left) {
      if (r0 >= band) return true;
      if (left) return false;
    }
    return true;
  };

  TaskGraph g;
  for (std::size_t lane = 0; lane < lanes; ++lane)
    g.add_on_worker(
        [&, lane](const WorkerInfo& w) {
          double my_load = 0, my_load_wall = 0;
          std::uint64_t my_pairs = 0;
          std::vector<LeafRun> my_runs;
          // The cache this lane pins its items in and reads them from: its
          // GPU's (lc, ld) above the host cache, or the host cache.
          ItemCache<T>* own_near = near ? near->cache_of(w) : nullptr;
          memory::SlotCache& lc = own_near ? own_near->index : cache;
          std::vector<T>& ld = own_near ? own_near->data : slot_data;
          // The item's host-cache slot, loaded first on a miss; pinned until
          // released.
          auto acquire_host = [&](std::uint64_t item) {
            const auto lease = cache.acquire(item);
            if (lease.hit) return lease.slot;
            loads_gate.enter();
            const auto ts = Clock::now();
            const double cpu0 = detail::thread_cpu_seconds();
            try {
              slot_data[lease.slot] = detail::call_load(load, w, item, true);
            } catch (...) {
              loads_gate.leave();
              cache.abandon(lease.slot);
              throw;
            }
            my_load += detail::thread_cpu_seconds() - cpu0;
            my_load_wall += std::chrono::duration<double>(Clock::now() - ts).count();
            loads_gate.leave();
            cache.publish(lease.slot);
            return lease.slot;
          };
          // The item's slot in lc: on a GPU, copied up from the host cache
          // on a miss.
          auto acquire = [&](std::uint64_t item) {
            if (!own_near) return acquire_host(item);
            const auto lease = lc.acquire(item);
            if (lease.hit) return lease.slot;
            try {
              const std::size_t host_slot = acquire_host(item);
              try {
                ld[lease.slot] = near->promote(w, item, slot_data[host_slot]);
              } catch (...) {
                cache.release(host_slot);
                throw;
              }
              cache.release(host_slot);
            } catch (...) {
              lc.abandon(lease.slot);
              throw;
            }
            lc.publish(lease.slot);
            return lease.slot;
          };
          // The band this lane holds pinned: its first row and a slot per row.
          std::uint32_t band = 0;
          std::vector<std::size_t> band_slots;
          auto unpin_band = [&] {
            for (std::size_t slot : band_slots) lc.release(slot);
            band_slots.clear();
          };
          const auto busy_from = Clock::now();
          const double cpu_from = detail::thread_cpu_seconds();
          try {
            while (!stop.load(std::memory_order_relaxed)) {
              const auto leaf = sched.next(lane);
              if (!leaf) break;
              const PairBlock& b = plan.leaves[*leaf];
              const auto leaf_start = Clock::now();
              if (ahead_leaves) {
                ask_leaf(*leaf, w);
                if (const auto upcoming = sched.peek(lane)) ask_leaf(*upcoming, w);
              }
              auto wanted = [&](std::uint32_t i, std::uint32_t j) {
                return plan.shape == PairShape::rectangle || (plan.shape == PairShape::triangle ? i < j : i <= j);
              };
              if (bands) {
                if (band_slots.empty() || band != b.row_begin) {
                  unpin_band();
                  {
                    std::unique_lock lk(band_m);
                    band_cv.wait(lk, [&] { return earlier_bands_done(b.row_begin) || stop.load(); });
                  }
                  band = b.row_begin;
                  start_band(b, w);
                  for (std::uint32_t i = b.row_begin; i < b.row_end && !stop.load(std::memory_order_relaxed); ++i) {
                    band_slots.push_back(acquire(i));
                    took_row(i);
                  }
                }
                for (std::uint32_t j = b.col_begin; j < b.col_end && !stop.load(std::memory_order_relaxed); ++j) {
                  const std::uint64_t col_item = col_base + j;
                  const bool in_band = col_item >= b.row_begin && col_item < b.row_end;
                  bool any = false;
                  for (std::uint32_t i = b.row_begin; i < b.row_end && !any; ++i) any = wanted(i, j);
                  if (!any) continue;
                  const std::size_t col_slot = in_band ? band_slots[col_item - b.row_begin] : acquire(col_item);
                  if (!in_band) took_column(col_item, w);
                  try {
                    for (std::uint32_t i = b.row_begin; i < b.row_end; ++i) {
                      if (!wanted(i, j)) continue;
                      compare(w, lane, i, j, ld[band_slots[i - b.row_begin]], ld[col_slot]);
                      ++my_pairs;
                    }
                  } catch (...) {
                    if (!in_band) lc.release(col_slot);
                    throw;
                  }
                  if (!in_band) lc.release(col_slot);
                }
                {
                  std::lock_guard lk(band_m);
                  --band_left[b.row_begin];
                }
                band_cv.notify_all();
                my_runs.push_back({static_cast<std::uint32_t>(*leaf), static_cast<std::uint32_t>(lane),
                                   since(leaf_start), since(Clock::now())});
                continue;
              }
              // The outer item is acquired once per leaf and the inner ones
              // once per outer item: the leaf's longer side is inner, so its
              // items (a band's rows) stay the most recently used and are
              // not the ones evicted.
              const bool rows_outer = b.row_end - b.row_begin <= b.col_end - b.col_begin;
              const std::uint32_t o0 = rows_outer ? b.row_begin : b.col_begin;
              const std::uint32_t o1 = rows_outer ? b.row_end : b.col_end;
              const std::uint32_t n0 = rows_outer ? b.col_begin : b.row_begin;
              const std::uint32_t n1 = rows_outer ? b.col_end : b.row_end;
              for (std::uint32_t x = o0; x < o1 && !stop.load(std::memory_order_relaxed); ++x) {
                bool any = false;
                for (std::uint32_t y = n0; y < n1 && !any; ++y)
                  any = rows_outer ? wanted(x, y) : wanted(y, x);
                if (!any) continue;
                const std::uint64_t outer_item = rows_outer ? x : col_base + x;
                const std::size_t outer_slot = acquire(outer_item);
                try {
                  for (std::uint32_t y = n0; y < n1; ++y) {
                    const std::uint32_t i = rows_outer ? x : y, j = rows_outer ? y : x;
                    if (!wanted(i, j)) continue;
                    const std::uint64_t inner_item = rows_outer ? col_base + y : y;
                    const bool same = inner_item == outer_item;
                    const std::size_t inner_slot = same ? outer_slot : acquire(inner_item);
                    const std::size_t row_slot = rows_outer ? outer_slot : inner_slot;
                    const std::size_t col_slot = rows_outer ? inner_slot : outer_slot;
                    try {
                      compare(w, lane, i, j, ld[row_slot], ld[col_slot]);
                    } catch (...) {
                      if (!same) lc.release(inner_slot);
                      throw;
                    }
                    ++my_pairs;
                    if (!same) lc.release(inner_slot);
                  }
                } catch (...) {
                  lc.release(outer_slot);
                  throw;
                }
                lc.release(outer_slot);
              }
              my_runs.push_back({static_cast<std::uint32_t>(*leaf), static_cast<std::uint32_t>(lane), since(leaf_start),
                                 since(Clock::now())});
            }
          } catch (...) {
            fail(std::current_exception());
          }
          unpin_band();
          std::lock_guard lk(m);
          load_s += my_load;
          load_wall_s += my_load_wall;
          // The lane's CPU time but its loads': its compares (and the
          // little bookkeeping between them).
          compare_s += std::max(0.0, detail::thread_cpu_seconds() - cpu_from - my_load);
          stats.lane_pairs[lane] = my_pairs;
          stats.lane_busy_seconds[lane] = std::chrono::duration<double>(Clock::now() - busy_from).count();
          stats.lane_names[lane] = w.name;
          stats.leaf_runs.insert(stats.leaf_runs.end(), my_runs.begin(), my_runs.end());
        },
        o.runs_on);
  g.run(pool);
  loaders.stop();
  stats.seconds = since(Clock::now());
  if (failure) std::rethrow_exception(failure);
  const auto cs = cache.stats();
  stats.loads = cs.loads - before.loads;
  stats.hits = cs.hits - before.hits;
  stats.evictions = cs.evictions - before.evictions;
  stats.waits = cs.waits - before.waits;
  stats.steals = sched.steals();
  if (near)
    for (std::size_t k = 0; k < near->caches.size(); ++k) {
      const auto now = near->caches[k]->index.stats();
      stats.device_hits += now.hits - near_before[k].hits;
      stats.device_loads += now.loads - near_before[k].loads;
      stats.device_evictions += now.evictions - near_before[k].evictions;
      stats.device_slots += near->caches[k]->index.slots();
    }
  stats.prefetched = prefetched.load();
  stats.load_seconds = load_s;
  stats.load_wall_seconds = load_wall_s;
  stats.compare_seconds = compare_s;
  std::sort(stats.leaf_runs.begin(), stats.leaf_runs.end(),
            [](const LeafRun& a, const LeafRun& b) { return a.start < b.start; });
}

}  // namespace flowd::sched

// The all-pairs runner's load ratio and efficiency (docs/benchmarks.md, "All
// pairs"): n items whose load costs --load-ms (a sleep: an expensive read and
// preprocess) and whose pairs cost --compare-us of real work each (a spin),
// on --lanes worker threads with a cache of --cache slots, for Rocket's
// Hilbert plan and for the band plan, each with the lanes loading what they
// miss themselves ("in-lane") and with loader threads loading ahead of them
// ("ahead", as the stage runs). Prints R = loads / n, the hit rate and the
// efficiency against T_min = n·t_pre + C(n,2)·t_cmp. The loads sleep, as a
// read from a slow disk waits: loader threads hide such loads; loads that
// compute would compete with the lanes for the same cores. t_pre is a
// load's CPU time (since 2026-11-27), so sleeping loads add next to nothing
// to T_min here: the efficiency is that of the compares.
//
//   flowd-bench-allpairs-cache --items 300 --cache 100 --lanes 2 --load-ms 4 --compare-us 50 [--plan bands]
//                              [--max-loads 8]
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <boost/program_options.hpp>

#include "exec/worker_pool.hpp"
#include "sched/allpairs_run.hpp"
#include "sched/fcfs_queue.hpp"

using namespace flowd;
using namespace flowd::sched;
namespace po = boost::program_options;

namespace {

void spin(double us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  int items = 300, cache = 100, lanes = 2, leaf = 0, max_loads = 8;
  std::string plans = "both";
  double load_ms = 4, compare_us = 50;
  po::options_description d("flowd-bench-allpairs-cache");
  d.add_options()("items", po::value(&items), "n")("cache", po::value(&cache), "cache slots (0: all)")(
      "lanes", po::value(&lanes), "worker threads")("leaf", po::value(&leaf), "leaf pairs (0: as the stage)")(
      "load-ms", po::value(&load_ms), "sleep per load")("plan", po::value(&plans), "hilbert, bands or both")(
      "max-loads", po::value(&max_loads), "loads at once, and loader threads (the stage's max_loads)")("compare-us", po::value(&compare_us), "spin per pair");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  po::notify(vm);
  if (plans != "hilbert" && plans != "bands" && plans != "both") {
    std::fprintf(stderr, "flowd-bench-allpairs-cache: --plan must be hilbert, bands or both, not '%s'\n", plans.c_str());
    return 1;
  }
  exec::WorkerPool pool(std::make_unique<FcfsQueue>(), exec::WorkerPool::cpu_workers(lanes));
  const auto n = static_cast<std::uint32_t>(items);
  const std::uint64_t total = std::uint64_t{n} * (n - 1) / 2;
  const std::uint64_t leaf_pairs = leaf ? static_cast<std::uint64_t>(leaf)
                                        : std::clamp<std::uint64_t>(total / (8 * static_cast<std::uint64_t>(lanes)), 1, 256);
  std::printf("items %d, cache %d slots, %d lanes, load %.1f ms, compare %.0f us, leaves of >= %llu pairs\n", items,
              cache, lanes, load_ms, compare_us, static_cast<unsigned long long>(leaf_pairs));
  for (const bool bands : {false, true}) {
    for (const bool ahead : {false, true}) {
      if (bands && (cache == 0 || cache >= items)) continue;
      if (plans != "both" && bands != (plans == "bands")) continue;
      // Loading ahead needs a band plan or a cache that holds every item.
      if (ahead && !bands && cache != 0 && cache < items) continue;
      const PairPlan plan = bands ? plan_strips(PairShape::triangle, n, n, static_cast<std::uint32_t>(cache - 2 * lanes), leaf_pairs)
                                  : plan_pairs(PairShape::triangle, n, n, leaf_pairs);
      AllPairsOptions o;
      o.lanes = static_cast<std::size_t>(lanes);
      o.cache_slots = static_cast<std::size_t>(cache);
      o.prefetch = ahead;
      o.max_loads = static_cast<std::size_t>(std::max(max_loads, 1));
      AllPairsStats st;
      run_allpairs<int>(
          plan, o,
          [&](const WorkerInfo&, std::uint64_t) {
            std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(load_ms));
            return 0;
          },
          [&](const WorkerInfo&, std::size_t, std::uint32_t, std::uint32_t, const int&, const int&) { spin(compare_us); },
          pool, st);
      // With loads made ahead on other threads, T_min / lanes is no longer a
      // floor (loads that wait overlap the compares): the compares alone,
      // spread over the lanes, are.
      const double floor = st.compare_seconds / static_cast<double>(lanes);
      std::printf("%-8s %-9s R = %.2f (%llu loads, %llu ahead), hit rate %.1f%%, %llu evictions, %llu steals, %.2f s, "
                  "T_min %.2f s, efficiency %.1f%%, compares / lanes %.2f s (%.0f%% of the wall)\n",
                  bands ? "bands" : "hilbert", ahead ? "ahead" : "in-lane", st.load_ratio(),
                  static_cast<unsigned long long>(st.loads), static_cast<unsigned long long>(st.prefetched),
                  100 * st.hit_rate(), static_cast<unsigned long long>(st.evictions),
                  static_cast<unsigned long long>(st.steals), st.seconds, st.t_min(), 100 * st.efficiency(), floor,
                  100 * floor / st.seconds);
    }
  }
}

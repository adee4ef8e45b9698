// The work-stealing prefix scan paper's mock-operator experiment (§5.1):
// every scan strategy on an operator that only sleeps, with constant times
// (mean t) and with exponentially distributed ones (rate 1/t, std::mt19937
// seeded 1410), on 1 … 64 workers. Sleeping lets 64 workers share 2 cores.
//
// Which draw a combine sleeps (--cost), the same for every strategy and
// whatever thread runs it:
//   application: a draw per application, chosen by hashing its operands (the
//                ranges of elements they cover): a fresh, independent time for
//                every combine, as in the paper's mock;
//   element:     a combine that adds one element to a range costs that
//                element's draw (a frame that is hard to register is hard
//                whatever it is registered with); ranges with ranges hash.
// The work-stealing and static hierarchical scans use one rank with one lane
// per worker and dissemination (--partials) for the lane partials.
//
//   flowd-bench-scan-mock [--n 512] [--t-ms 1] [--runs 3] [--cost application|element]
//                         [--workers 1,2,4,8,16,32,64]
//                         [--strategies sequential,dissemination,blelloch,ladner-fischer,static-hierarchical,
//                                       work-stealing,work-stealing-paper-start]
//                         [--partials dissemination|ladner-fischer|blelloch|sequential]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "bench_common.hpp"
#include "exec/worker_pool.hpp"
#include "sched/fcfs_queue.hpp"
#include "sched/scan.hpp"

using namespace flowd;

namespace {

struct Range {
  std::uint32_t lo = 0, hi = 0;
};

// The operator: joins two adjacent ranges after sleeping the draw for them.
struct Mock {
  const std::vector<double>* draws;  // seconds: one per element (and more, for hashing)
  bool per_element = false;
  Range operator()(const Range& l, const Range& r) const {
    if (l.hi + 1 != r.lo) {
      std::fprintf(stderr, "scan_mock: combined [%u,%u] with [%u,%u]\n", l.lo, l.hi, r.lo, r.hi);
      std::abort();
    }
    std::uint64_t h = l.lo * 0x9E3779B97F4A7C15ull ^ (r.hi + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    std::size_t pick = h % draws->size();
    if (per_element && r.lo == r.hi)
      pick = r.lo;
    else if (per_element && l.lo == l.hi)
      pick = l.lo;
    std::this_thread::sleep_for(std::chrono::duration<double>((*draws)[pick]));
    return {l.lo, r.hi};
  }
};

std::vector<int> int_list(const char* s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    v.push_back(std::atoi(x.c_str()));
  return v;
}
std::vector<std::string> word_list(const char* s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    v.push_back(x);
  return v;
}

// Work stealing with the paper's start positions (inner lanes in the middle
// of their share) rather than flowd's (every lane at its share's left end).
const std::string paper_start = "work-stealing-paper-start";

double run_once(const std::string& strategy, int workers, const std::vector<Range>& x, const Mock& op,
                sched::ScanStrategy partials, sched::ScanStats& st) {
  exec::WorkerPool pool(std::make_unique<sched::FcfsQueue>(), exec::WorkerPool::cpu_workers(workers));
  Mock combine = op;
  const auto t0 = bench::Clock::now();
  sched::ScanOptions o;
  o.paper_start = strategy == paper_start;
  o.strategy = o.paper_start ? sched::ScanStrategy::work_stealing : *sched::parse_scan_strategy(strategy);
  o.lanes = workers;
  o.partials = partials;
  (void)sched::scan(std::span<const Range>(x), combine, o, pool, st);
  return bench::seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 512;
  double t_ms = 1.0;
  int runs = 3;
  std::string cost = "application";
  std::string partials = "dissemination";
  std::vector<int> worker_counts = {1, 2, 4, 8, 16, 32, 64};
  std::vector<std::string> strategies = {"sequential",          "dissemination", "blelloch",
                                         "ladner-fischer",      "static-hierarchical", "work-stealing",
                                         paper_start};
  const auto usage = [&] {
    std::fprintf(stderr,
                 "usage: %s [--n N] [--t-ms T] [--runs R] [--cost application|element] [--workers 1,2,...] "
                 "[--strategies a,b,...] [--partials dissemination|ladner-fischer|blelloch|sequential]\n",
                 argv[0]);
    return 2;
  };
  // Every option takes a value: a word left over (--help too) is a usage error.
  if (argc % 2 == 0) return usage();
  for (int i = 1; i < argc; i += 2) {
    if (!std::strcmp(argv[i], "--n"))
      n = static_cast<std::size_t>(std::atol(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--t-ms"))
      t_ms = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs"))
      runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cost"))
      cost = argv[i + 1];
    else if (!std::strcmp(argv[i], "--workers"))
      worker_counts = int_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--strategies"))
      strategies = word_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--partials"))
      partials = argv[i + 1];
    else
      return usage();
  }
  if (cost != "application" && cost != "element") {
    std::fprintf(stderr, "scan_mock: --cost is application or element, not '%s'\n", cost.c_str());
    return 2;
  }
  for (const auto& s : strategies)
    if (s != paper_start && !sched::parse_scan_strategy(s)) {
      std::fprintf(stderr, "scan_mock: unknown strategy '%s'\n", s.c_str());
      return 2;
    }
  const auto partial_plan = sched::parse_scan_strategy(partials);
  if (!partial_plan || sched::is_hierarchical(*partial_plan)) {
    std::fprintf(stderr, "scan_mock: --partials takes a static plan, not '%s'\n", partials.c_str());
    return 2;
  }

  const double t = t_ms / 1000.0;
  const std::size_t draws = std::max<std::size_t>(4096, n);
  std::vector<double> constant(draws, t), exponential;
  std::mt19937 rng(1410);
  std::exponential_distribution<double> exp_t(1.0 / t);
  for (std::size_t i = 0; i < draws; ++i)
    exponential.push_back(exp_t(rng));
  std::vector<Range> x;
  for (std::uint32_t i = 0; i < n; ++i)
    x.push_back({i, i});

  std::printf(
      "# scan of %zu elements, mock operator mean %.3g ms, cost per %s, median of %d runs, lane partials by %s; "
      "speedup over sequential on 1 worker\n",
      n, t_ms, cost.c_str(), runs, partials.c_str());
  std::printf(
      "| strategy | workers | combines | depth | constant (s) | speedup | exponential (s) | speedup | steals (exp) "
      "|\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::map<std::string, double> base;  // sequential on 1 worker, per mode
  std::map<std::pair<std::string, int>, std::pair<double, double>> seconds;
  for (const auto& s : strategies)
    for (int w : worker_counts) {
      double med[2] = {0, 0};
      sched::ScanStats st[2];
      for (int mode = 0; mode < 2; ++mode) {
        const Mock op{mode == 0 ? &constant : &exponential, cost == "element"};
        std::vector<double> times;
        for (int r = 0; r < runs; ++r)
          times.push_back(run_once(s, w, x, op, *partial_plan, st[mode]));
        med[mode] = bench::median(times);
        const char* key = mode == 0 ? "c" : "e";
        if (s == "sequential" && w == 1) base[key] = med[mode];
      }
      seconds[{s, w}] = {med[0], med[1]};
      auto speedup = [&](int mode) {
        const auto it = base.find(mode == 0 ? "c" : "e");
        return it == base.end() ? std::nan("") : it->second / med[mode];
      };
      std::printf("| %s | %d | %llu | %u | %.3f | %.2f | %.3f | %.2f | %llu |\n", s.c_str(), w,
                  static_cast<unsigned long long>(st[1].combines), st[1].depth, med[0], speedup(0), med[1], speedup(1),
                  static_cast<unsigned long long>(st[1].steals));
      std::fflush(stdout);
    }
  for (const std::string& ws_name : {std::string("work-stealing"), paper_start}) {
    std::printf("\n| workers | %s vs static-hierarchical, constant | exponential |\n|---:|---:|---:|\n",
                ws_name.c_str());
    for (int w : worker_counts) {
      const auto ws = seconds.find({ws_name, w}), st = seconds.find({"static-hierarchical", w});
      if (ws == seconds.end() || st == seconds.end()) continue;
      std::printf("| %d | %.2f× | %.2f× |\n", w, st->second.first / ws->second.first,
                  st->second.second / ws->second.second);
    }
  }
  return 0;
}

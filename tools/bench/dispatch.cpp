// Dispatch cost per task through flowd's ready queue and worker pool, for
// the shapes in docs/benchmarks.md: independent tasks, a dependency chain and
// a fork-join, with empty tasks (pure overhead) and with 20 us tasks (to
// show that a second worker helps once tasks cost something).
//
//   flowd-bench-dispatch [--repeat R] [--workers 1,2] [--threshold-ns N] [--recheck-us N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "bench_common.hpp"
#include "exec/worker_pool.hpp"
#include "sched/fcfs_queue.hpp"
#include "sched/task_graph.hpp"

using namespace flowd;

namespace {

void spin(std::chrono::microseconds d) {
  const auto end = bench::Clock::now() + d;
  while (bench::Clock::now() < end) {
  }
}

struct Shape {
  const char* name;
  std::size_t tasks;
  std::function<void(sched::TaskGraph&, const std::function<void()>&)> build;
};

std::vector<Shape> shapes(std::size_t scale_down) {
  const std::size_t ind = 200000 / scale_down, chain = 50000 / scale_down, width = 10000 / scale_down;
  return {
      {"independent", ind, [ind](sched::TaskGraph& g, const std::function<void()>& f) {
         for (std::size_t i = 0; i < ind; ++i) g.add(f);
       }},
      {"chain", chain, [chain](sched::TaskGraph& g, const std::function<void()>& f) {
         auto prev = g.add(f);
         for (std::size_t i = 1; i < chain; ++i) {
           auto n = g.add(f);
           g.precede(prev, n);
           prev = n;
         }
       }},
      {"fork-join", width + 2, [width](sched::TaskGraph& g, const std::function<void()>& f) {
         auto root = g.add(f), join = g.add(f);
         for (std::size_t i = 0; i < width; ++i) {
           auto n = g.add(f);
           g.precede(root, n);
           g.precede(n, join);
         }
       }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 7;
  std::vector<int> worker_counts = {1, 2};
  exec::PoolOptions opts;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--workers") && i + 1 < argc) {
      worker_counts.clear();
      for (char* tok = std::strtok(argv[++i], ","); tok; tok = std::strtok(nullptr, ",")) worker_counts.push_back(std::atoi(tok));
    } else if (!std::strcmp(argv[i], "--threshold-ns") && i + 1 < argc) {
      opts.wake_threshold = std::chrono::nanoseconds(std::atoll(argv[++i]));
    } else if (!std::strcmp(argv[i], "--recheck-us") && i + 1 < argc) {
      opts.park_recheck = std::chrono::microseconds(std::atoll(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--repeat R] [--workers 1,2] [--threshold-ns N] [--recheck-us N]\n", argv[0]);
      return 1;
    }
  }
  std::printf("# machine parallel efficiency with 2 threads: %.2f (1.0 = two real cores)\n", bench::parallel_efficiency());
  std::printf("# flowd dispatch benchmark: median of %d runs, worker counts interleaved run by run; us per task\n"
              "# (build = creating the graph, run = dispatch and execution; ratio = median over runs of run time / the paired run\n"
              "# with the first worker count)\n",
              repeat);
  std::printf("%-12s %-6s %8s %8s %10s %10s %10s %7s %8s\n", "shape", "task", "workers", "tasks", "build_us", "run_us",
              "total_us", "ratio", "wakeups");
  for (const bool heavy : {false, true}) {
    const std::function<void()> body = heavy ? std::function<void()>([] { spin(std::chrono::microseconds(20)); })
                                             : std::function<void()>([] {});
    for (const auto& shape : shapes(heavy ? 50 : 1)) {
      std::vector<std::unique_ptr<exec::WorkerPool>> pools;
      for (int w : worker_counts)
        pools.push_back(std::make_unique<exec::WorkerPool>(std::make_unique<sched::FcfsQueue>(), exec::WorkerPool::cpu_workers(w), opts));
      std::vector<std::vector<double>> build(pools.size()), run(pools.size());
      for (int r = 0; r < repeat + 1; ++r)
        for (std::size_t k = 0; k < pools.size(); ++k) {
          const auto t0 = bench::Clock::now();
          sched::TaskGraph g;
          shape.build(g, body);
          const double b = bench::seconds_since(t0);
          const auto t1 = bench::Clock::now();
          g.run(*pools[k]);
          const double x = bench::seconds_since(t1);
          if (r == 0) continue;  // warm-up
          build[k].push_back(b * 1e6 / static_cast<double>(shape.tasks));
          run[k].push_back(x * 1e6 / static_cast<double>(shape.tasks));
        }
      for (std::size_t k = 0; k < pools.size(); ++k) {
        // Each run is paired with the first worker count's run beside it.
        std::vector<double> ratio;
        for (std::size_t r = 0; r < run[k].size(); ++r) ratio.push_back(run[k][r] / run[0][r]);
        const double mb = bench::median(build[k]), mr = bench::median(run[k]);
        std::printf("%-12s %-6s %8d %8zu %10.3f %10.3f %10.3f %7.2f %8llu\n", shape.name, heavy ? "20us" : "empty",
                    worker_counts[k], shape.tasks, mb, mr, mb + mr, bench::median(ratio),
                    static_cast<unsigned long long>(pools[k]->stats().wakeups));
      }
      std::fflush(stdout);
    }
  }
  return 0;
}

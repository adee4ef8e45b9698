// Dispatch cost per task through flowd's ready queue and worker pool, for
// the shapes in docs/benchmarks.md: independent tasks, a dependency chain and
// a fork-join, with empty tasks (pure overhead) and with 20 us tasks (to
// show that a second worker helps once tasks cost something).
//
// Each policy's queue can be measured (--queues fcfs,pats,heft), with
// simulated-GPU workers beside the CPU ones (--sim N; tasks may then run on
// either kind, so PATS and HEFT take their GPU paths).
//
//   flowd-bench-dispatch [--repeat R] [--workers 1,2] [--queues fcfs,pats,heft] [--sim N]
//                        [--threshold-ns N] [--recheck-us N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "bench_common.hpp"
#include "exec/worker_pool.hpp"
#include "sched/fcfs_queue.hpp"
#include "sched/heft_queue.hpp"
#include "sched/pats_queue.hpp"
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
  std::function<void(sched::TaskGraph&, const std::function<void()>&, sched::KindMask)> build;
};

std::unique_ptr<sched::ReadyQueue> make_queue(const std::string& name) {
  if (name == "pats") return std::make_unique<sched::PatsQueue>();
  if (name == "heft") return std::make_unique<sched::HeftQueue>();
  return std::make_unique<sched::FcfsQueue>();
}

std::vector<sched::WorkerInfo> workers(int cpus, int sims) {
  auto w = exec::WorkerPool::cpu_workers(cpus);
  for (int i = 0; i < sims; ++i)
    w.push_back({cpus + i, sched::WorkerKind::sim_gpu, i, "sim" + std::to_string(i)});
  return w;
}

std::vector<Shape> shapes(std::size_t scale_down) {
  const std::size_t ind = 200000 / scale_down, chain = 50000 / scale_down, width = 10000 / scale_down;
  return {
      {"independent", ind, [ind](sched::TaskGraph& g, const std::function<void()>& f, sched::KindMask m) {
         for (std::size_t i = 0; i < ind; ++i) g.add(f, m);
       }},
      {"chain", chain, [chain](sched::TaskGraph& g, const std::function<void()>& f, sched::KindMask m) {
         auto prev = g.add(f, m);
         for (std::size_t i = 1; i < chain; ++i) {
           auto n = g.add(f, m);
           g.precede(prev, n);
           prev = n;
         }
       }},
      {"fork-join", width + 2, [width](sched::TaskGraph& g, const std::function<void()>& f, sched::KindMask m) {
         auto root = g.add(f, m), join = g.add(f, m);
         for (std::size_t i = 0; i < width; ++i) {
           auto n = g.add(f, m);
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
  std::vector<std::string> queues = {"fcfs"};
  int sims = 0;
  exec::PoolOptions opts;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--workers") && i + 1 < argc) {
      worker_counts.clear();
      for (char* tok = std::strtok(argv[++i], ","); tok; tok = std::strtok(nullptr, ",")) worker_counts.push_back(std::atoi(tok));
    } else if (!std::strcmp(argv[i], "--queues") && i + 1 < argc) {
      queues.clear();
      for (char* tok = std::strtok(argv[++i], ","); tok; tok = std::strtok(nullptr, ",")) queues.emplace_back(tok);
    } else if (!std::strcmp(argv[i], "--sim") && i + 1 < argc) {
      sims = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--threshold-ns") && i + 1 < argc) {
      opts.wake_threshold = std::chrono::nanoseconds(std::atoll(argv[++i]));
    } else if (!std::strcmp(argv[i], "--recheck-us") && i + 1 < argc) {
      opts.park_recheck = std::chrono::microseconds(std::atoll(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--repeat R] [--workers 1,2] [--queues fcfs,pats,heft] [--sim N] [--threshold-ns N] "
                   "[--recheck-us N]\n", argv[0]);
      return 1;
    }
  }
  std::printf("# machine parallel efficiency with 2 threads: %.2f (1.0 = two real cores)\n", bench::parallel_efficiency());
  std::printf("# flowd dispatch benchmark: median of %d runs, worker counts interleaved run by run; us per task\n"
              "# (build = creating the graph, run = dispatch and execution; ratio = median over runs of run time / the paired run\n"
              "# with the first worker count)\n",
              repeat);
  std::printf("# %d simulated-GPU workers besides the CPU workers\n", sims);
  std::printf("%-5s %-12s %-6s %8s %8s %10s %10s %10s %7s %8s\n", "queue", "shape", "task", "workers", "tasks", "build_us",
              "run_us", "total_us", "ratio", "wakeups");
  const sched::KindMask mask = sims > 0 ? sched::cpu_only | sched::bit(sched::WorkerKind::sim_gpu) : sched::cpu_only;
  for (const auto& queue : queues) {
    for (const bool heavy : {false, true}) {
      const std::function<void()> body = heavy ? std::function<void()>([] { spin(std::chrono::microseconds(20)); })
                                               : std::function<void()>([] {});
      for (const auto& shape : shapes(heavy ? 50 : 1)) {
        std::vector<std::unique_ptr<exec::WorkerPool>> pools;
        for (int w : worker_counts)
          pools.push_back(std::make_unique<exec::WorkerPool>(make_queue(queue), workers(w, sims), opts));
        std::vector<std::vector<double>> build(pools.size()), run(pools.size());
        for (int r = 0; r < repeat + 1; ++r)
          for (std::size_t k = 0; k < pools.size(); ++k) {
            const auto t0 = bench::Clock::now();
            sched::TaskGraph g;
            shape.build(g, body, mask);
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
          std::printf("%-5s %-12s %-6s %8d %8zu %10.3f %10.3f %10.3f %7.2f %8llu\n", queue.c_str(), shape.name,
                      heavy ? "20us" : "empty",
                      worker_counts[k], shape.tasks, mb, mr, mb + mr, bench::median(ratio),
                      static_cast<unsigned long long>(pools[k]->stats().wakeups));
        }
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

// Engine overhead: one chain of operators (gaussian -> threshold -> label ->
// region_stats, which joins two inputs by key) run through flowd with one
// worker versus the same operator objects called directly in a loop. The two
// are interleaved run by run so machine noise hits both alike, and the direct
// loop runs on a thread of its own, as flowd's worker does: the main thread
// allocates from glibc's main arena, whose page-fault behaviour for these
// 16-64 MiB buffers differs by several percent.
//
//   flowd-bench-overhead [--repeat R] [--only small|large] [--window N (flowd max_in_flight)]
//                        [--mode direct|flowd --count N: one run of one side, e.g. under callgrind]
#include <cstdio>
#include <cstring>
#include <thread>

#include "bench_common.hpp"
#include "runtime/harness.hpp"
#include "runtime/run.hpp"
#include "workflow/validate.hpp"

using namespace flowd;

namespace {

struct Case {
  const char* name;
  int count, rows, cols;
};

plugin::Registry registry(Logger& log) {
  plugin::Registry r({{FLOWD_BENCH_PLUGIN_DIR, "bench", true}, {FLOWD_SHIPPED_PLUGIN_DIR, "shipped", true}}, log);
  r.scan();
  return r;
}

std::string workflow(const Case& c) {
  return R"({"version": 1, "stages": {
    "src":    {"op": "bench.images", "params": {"count": )" + std::to_string(c.count) + R"(, "rows": )" +
         std::to_string(c.rows) + R"(, "cols": )" + std::to_string(c.cols) + R"(}},
    "blur":   {"op": "image.gaussian", "inputs": {"image": "src.image"}, "params": {"sigma": 2}},
    "mask":   {"op": "image.threshold", "inputs": {"image": "blur.image"}},
    "label":  {"op": "image.label", "inputs": {"mask": "mask.mask"}},
    "stats":  {"op": "image.region_stats", "inputs": {"image": "blur.image", "labels": "label.labels"}}
  }})";
}

// The whole chain over every item, calling the operators directly.
bench::Timing direct(plugin::Registry& reg, Logger& log, const Case& c, std::size_t& regions) {
  runtime::OperatorHarness src(reg.open("bench.images"), {{"count", c.count}, {"rows", c.rows}, {"cols", c.cols}}, log);
  runtime::OperatorHarness blur(reg.open("image.gaussian"), {{"sigma", 2}}, log);
  runtime::OperatorHarness mask(reg.open("image.threshold"), Json::object(), log);
  runtime::OperatorHarness label(reg.open("image.label"), Json::object(), log);
  runtime::OperatorHarness stats(reg.open("image.region_stats"), Json::object(), log);
  return bench::measure([&] {
    regions = 0;
    for (auto& [port, img] : src.source()) {
      auto b = blur.map({img});
      auto m = mask.map({b[0].second});
      auto l = label.map({m[0].second});
      auto s = stats.map({b[0].second, l[0].second});
      regions += s[0].second.table().rows();
    }
  });
}

// The same chain as a workflow run by flowd; graph construction excluded.
bench::Timing through_flowd(plugin::Registry& reg, Logger& log, const Case& c, int workers, int window) {
  auto g = workflow::validate(workflow::parse_workflow(workflow(c), "overhead.json"), reg);
  runtime::RunOptions o;
  o.cpu_workers = workers;
  o.max_in_flight = window;
  runtime::Run run(g, o, log);
  runtime::RunReport r;
  const auto t = bench::measure([&] { r = run.execute(); });
  if (r.status != runtime::RunStatus::succeeded) throw Error("the flowd run failed");
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  int window = 0, count = 0;
  bool repeat_given = false;
  std::string only, mode;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]), repeat_given = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--window") && i + 1 < argc) window = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
    else if (!std::strcmp(argv[i], "--count") && i + 1 < argc) count = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--repeat R] [--only small|large] [--window N] [--mode direct|flowd] [--count N]\n", argv[0]);
      return 1;
    }
  }
  Logger log(stderr, false, LogLevel::warning);
  auto reg = registry(log);
  Case cases[] = {{"small", 1000, 64, 64}, {"large", 16, 4096, 4096}};
  if (count > 0)
    for (Case& c : cases) c.count = count;

  // Runs of one side only (--repeat of them, default 1), e.g. for
  // instruction counting under callgrind.
  if (!mode.empty()) {
    for (const Case& c : cases) {
      if (!only.empty() && only != c.name) continue;
      for (int r = 0; r < std::max(1, repeat_given ? repeat : 1); ++r) {
        std::size_t regions = 0;
        const auto t = mode == "direct" ? direct(reg, log, c, regions) : through_flowd(reg, log, c, 1, window);
        std::printf("%s %s: %.4f s wall, %.4f s cpu, %ld page faults\n", c.name, mode.c_str(), t.wall, t.cpu, t.faults);
      }
    }
    return 0;
  }

  std::printf("# machine parallel efficiency with 2 threads: %.2f\n", bench::parallel_efficiency());
  std::printf("# engine overhead: gaussian -> threshold -> label -> region_stats; medians of %d interleaved runs\n"
              "# wall = elapsed seconds, cpu = process CPU seconds (robust to other tenants); overhead = flowd 1 worker / direct - 1\n",
              repeat);
  std::printf("%-6s %6s %11s %9s %9s %9s %9s %9s %9s %9s %8s\n", "case", "items", "size", "direct_w", "flowd1_w",
              "ovh_wall", "direct_c", "flowd1_c", "ovh_cpu", "flowd2_w", "speedup");
  for (const Case& c : cases) {
    if (!only.empty() && only != c.name) continue;
    std::vector<double> dw, dc, fw, fc, f2;
    std::size_t regions = 0;
    for (int r = 0; r < repeat + 1; ++r) {
      bench::Timing a;
      std::thread t([&] { a = direct(reg, log, c, regions); });
      t.join();
      const auto b = through_flowd(reg, log, c, 1, window);
      const auto x = through_flowd(reg, log, c, 2, window);
      if (r == 0) continue;  // warm-up
      dw.push_back(a.wall), dc.push_back(a.cpu), fw.push_back(b.wall), fc.push_back(b.cpu), f2.push_back(x.wall);
    }
    const double mdw = bench::median(dw), mdc = bench::median(dc), mfw = bench::median(fw), mfc = bench::median(fc),
                 m2 = bench::median(f2);
    std::printf("%-6s %6d %5dx%-5d %9.4f %9.4f %8.2f%% %9.4f %9.4f %8.2f%% %9.4f %8.2f\n", c.name, c.count, c.rows,
                c.cols, mdw, mfw, 100.0 * (mfw / mdw - 1.0), mdc, mfc, 100.0 * (mfc / mdc - 1.0), m2, mfw / m2);
    std::fflush(stdout);
  }
  return 0;
}

// Heterogeneous scheduling experiments on workflows/synthetic-hetero.json,
// after Region Templates (Teodoro et al. 2014, Figs. 15 and 17): one node of
// the paper's shape (9 CPU cores + 3 GPUs; CPU-only uses all 12 cores), the
// GPUs simulated (--gpu sim:N semantics: the CPU variant held for
// cpu_time / speedup, transfers charged at a bandwidth). Compute is simulated
// too (sleep), so a 2-core machine runs the 12 workers faithfully.
//
//   flowd-bench-hetero [--repeat R] [--tiles N] [--scale S] [--cpus 9] [--gpus 3] [--bandwidth GB/s]
//                      [--configs] [--sweep] [--workflow FILE]
//
// --configs: CPU-only, GPU-only, FCFS, PATS, PATS+DL, PATS+DL+prefetch, HEFT;
// median makespan of R runs, configurations interleaved run by run, speedup
// over CPU-only, bytes moved, and the share of copy time that overlapped a
// task on the same GPU (hidden by prefetch).
// --sweep: PATS (DL + prefetch) and FCFS with speedup estimates confounded by
// 0..100% (--speedup-error): PATS's loss against its own 0% run, and where
// FCFS overtakes it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "bench_common.hpp"
#include "plugin/registry.hpp"
#include "runtime/run.hpp"
#include "util/log.hpp"
#include "workflow/validate.hpp"

using namespace flowd;

namespace {

struct Setup {
  std::string workflow = std::string(FLOWD_SOURCE_DIR) + "/workflows/synthetic-hetero.json";
  int repeat = 5, tiles = 120, cpus = 9, gpus = 3;
  double scale = 0.01, bandwidth_gb = 12;
};

struct Config {
  std::string name;
  int cpus, sims;
  std::string scheduler;
  bool locality, prefetch, gpu_only;
  double speedup_error = 0;
};

struct Outcome {
  double seconds = 0;
  std::uint64_t bytes = 0;  // to and from the GPUs
  double copy_seconds = 0, hidden_seconds = 0;
  double on_gpu = 0;  // tasks run on GPU-like workers
};

// Copy time on each GPU's copy track that overlaps a task span on that GPU.
void overlap(const trace::RunTrace& t, Outcome& o) {
  std::map<int, std::vector<std::pair<std::int64_t, std::int64_t>>> compute;
  for (const auto& s : t.spans)
    if (s.variant != "copy") compute[s.track].emplace_back(s.start_ns, s.end_ns);
  for (const auto& s : t.spans) {
    if (s.variant != "copy") continue;
    o.copy_seconds += static_cast<double>(s.end_ns - s.start_ns) * 1e-9;
    for (const auto& [a, b] : compute[s.track - 1000]) {  // copy tracks are 1000 + the worker's id
      const std::int64_t lo = std::max(a, s.start_ns), hi = std::min(b, s.end_ns);
      if (hi > lo) o.hidden_seconds += static_cast<double>(hi - lo) * 1e-9;
    }
  }
}

Outcome run_once(plugin::Registry& reg, Logger& log, const Setup& s, const Config& c) {
  const std::vector<workflow::Override> sets = {{"tiles", std::to_string(s.tiles)},
                                                {"scale", std::to_string(s.scale)},
                                                {"output", "/tmp/flowd-bench-hetero"}};
  auto g = workflow::validate(workflow::load_workflow(s.workflow, sets), reg);
  runtime::RunOptions o;
  o.cpu_workers = c.cpus;
  o.gpus = c.sims > 0 ? runtime::GpuSpec::parse("sim:" + std::to_string(c.sims)) : runtime::GpuSpec{};
  o.scheduler = c.scheduler;
  o.locality = c.locality;
  o.prefetch = c.prefetch;
  o.prefer_gpu = c.gpu_only;
  o.sim_bandwidth = s.bandwidth_gb * 1e9;
  o.speedup_error = c.speedup_error;
  o.commit = false;  // nothing written: the experiment is the schedule
  trace::Recorder rec(true);
  o.recorder = &rec;
  runtime::Run run(g, o, log);
  const auto t0 = bench::Clock::now();
  const auto report = run.execute();
  Outcome out;
  out.seconds = bench::seconds_since(t0);
  if (report.status != runtime::RunStatus::succeeded) {
    std::fprintf(stderr, "%s: run failed: %s\n", c.name.c_str(), report.error.c_str());
    std::exit(1);
  }
  out.bytes = report.bytes_to_devices + report.bytes_to_host;
  for (const auto& st : report.final.stages) out.on_gpu += static_cast<double>(st.on_gpu);
  overlap(rec.snapshot(Json::object()), out);
  return out;
}

std::vector<std::vector<Outcome>> interleaved(plugin::Registry& reg, Logger& log, const Setup& s,
                                              const std::vector<Config>& cs) {
  std::vector<std::vector<Outcome>> out(cs.size());
  for (int r = 0; r < s.repeat; ++r)
    for (std::size_t k = 0; k < cs.size(); ++k) out[k].push_back(run_once(reg, log, s, cs[k]));
  return out;
}

double median_of(const std::vector<Outcome>& v, double Outcome::*f) {
  std::vector<double> x;
  for (const auto& o : v) x.push_back(o.*f);
  return bench::median(x);
}

void configs(plugin::Registry& reg, Logger& log, const Setup& s) {
  const int all = s.cpus + s.gpus;
  const std::vector<Config> cs = {
      {"cpu-only", all, 0, "fcfs", true, false, false},
      {"gpu-only", 1, s.gpus, "pats", false, false, true},  // one CPU worker runs the source and the sink
      {"fcfs", s.cpus, s.gpus, "fcfs", false, false, false},
      {"pats", s.cpus, s.gpus, "pats", false, false, false},
      {"pats+dl", s.cpus, s.gpus, "pats", true, false, false},
      {"pats+dl+prefetch", s.cpus, s.gpus, "pats", true, true, false},
      {"heft", s.cpus, s.gpus, "heft", true, true, false},
  };
  const auto res = interleaved(reg, log, s, cs);
  std::printf("%-18s %8s %8s %8s %10s %9s %10s %8s\n", "config", "workers", "median_s", "speedup", "paired", "gpu_tasks",
              "moved_MB", "hidden");
  for (std::size_t k = 0; k < cs.size(); ++k) {
    std::vector<double> paired;  // over each run's CPU-only neighbour
    for (std::size_t r = 0; r < res[k].size(); ++r) paired.push_back(res[0][r].seconds / res[k][r].seconds);
    const double m = median_of(res[k], &Outcome::seconds);
    const double copy = median_of(res[k], &Outcome::copy_seconds), hidden = median_of(res[k], &Outcome::hidden_seconds);
    char workers[32];
    std::snprintf(workers, sizeof workers, "%dc+%dg", cs[k].cpus, cs[k].sims);
    char hid[16] = "-";
    if (copy > 0) std::snprintf(hid, sizeof hid, "%.0f%%", 100 * hidden / copy);
    std::printf("%-18s %8s %8.3f %8.2f %10.2f %9.0f %10.1f %8s\n", cs[k].name.c_str(), workers, m,
                median_of(res[0], &Outcome::seconds) / m, bench::median(paired),
                median_of(res[k], &Outcome::on_gpu),
                static_cast<double>(res[k][0].bytes) / 1e6, hid);
    std::fflush(stdout);
  }
}

void sweep(plugin::Registry& reg, Logger& log, const Setup& s) {
  std::printf("\n%-6s %10s %10s %10s %12s\n", "error", "pats_s", "fcfs_s", "pats_loss", "fcfs/pats");
  double pats0 = 0;
  for (int e = 0; e <= 100; e += 10) {
    const double err = e / 100.0;
    const std::vector<Config> cs = {{"pats", s.cpus, s.gpus, "pats", true, true, false, err},
                                    {"fcfs", s.cpus, s.gpus, "fcfs", false, false, false, err}};
    const auto res = interleaved(reg, log, s, cs);
    const double p = median_of(res[0], &Outcome::seconds), f = median_of(res[1], &Outcome::seconds);
    if (e == 0) pats0 = p;
    std::printf("%5d%% %10.3f %10.3f %9.1f%% %12.2f\n", e, p, f, 100 * (p / pats0 - 1), f / p);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Setup s;
  bool want_configs = false, want_sweep = false;
  for (int i = 1; i < argc; ++i) {
    const auto arg = [&] { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "%s needs a value\n", argv[i]), std::exit(1), argv[i]); };
    if (!std::strcmp(argv[i], "--repeat")) s.repeat = std::atoi(arg());
    else if (!std::strcmp(argv[i], "--tiles")) s.tiles = std::atoi(arg());
    else if (!std::strcmp(argv[i], "--scale")) s.scale = std::atof(arg());
    else if (!std::strcmp(argv[i], "--cpus")) s.cpus = std::atoi(arg());
    else if (!std::strcmp(argv[i], "--gpus")) s.gpus = std::atoi(arg());
    else if (!std::strcmp(argv[i], "--bandwidth")) s.bandwidth_gb = std::atof(arg());
    else if (!std::strcmp(argv[i], "--workflow")) s.workflow = arg();
    else if (!std::strcmp(argv[i], "--configs")) want_configs = true;
    else if (!std::strcmp(argv[i], "--sweep")) want_sweep = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--repeat R] [--tiles N] [--scale S] [--cpus 9] [--gpus 3] [--bandwidth GB/s] "
                   "[--configs] [--sweep] [--workflow FILE]\n",
                   argv[0]);
      return 1;
    }
  }
  if (!want_configs && !want_sweep) want_configs = want_sweep = true;
  Logger log(stderr, false, LogLevel::warning);
  plugin::Registry reg({{FLOWD_SHIPPED_PLUGIN_DIR, "shipped", true}}, log);
  reg.scan();
  std::printf("# synthetic-hetero: %d tiles, scale %.3f, %d CPU + %d simulated GPU workers (CPU-only: %d CPU), "
              "transfers at %.1f GB/s; median of %d runs, interleaved\n",
              s.tiles, s.scale, s.cpus, s.gpus, s.cpus + s.gpus, s.bandwidth_gb, s.repeat);
  if (want_configs) configs(reg, log, s);
  if (want_sweep) sweep(reg, log, s);
  return 0;
}

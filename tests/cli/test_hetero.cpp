// CPU + simulated-GPU runs of workflows/synthetic-hetero.json from the command
// line: who ran what, PATS against FCFS, every policy to completion, trace and
// report saying the GPUs were simulated, calibrate and perf.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>

#include "support/cli.hpp"
#include "support/helpers.hpp"

namespace fs = std::filesystem;
using flowd::Json;
using flowd::test::flowd_cmd;
using flowd::test::Result;
using flowd::test::scratch;
using flowd::test::slurp;

namespace {

const std::string workflow = std::string(FLOWD_SOURCE_DIR) + "/workflows/synthetic-hetero.json";

// The synth operators' speedup hints (plugins/synth/plugin.cpp).
const std::map<std::string, double> hint = {
    {"synth.color_deconvolution", 9.0}, {"synth.rbc_detection", 1.1}, {"synth.morph_open", 2.5},
    {"synth.recon_to_nuclei", 14.0},    {"synth.area_threshold", 1.5}, {"synth.fill_holes", 1.8},
    {"synth.pre_watershed", 6.0},       {"synth.watershed", 18.0},    {"synth.bwlabel", 1.3},
    {"synth.features", 20.0}};

// Runs under `timeout`, so a hang fails the test instead of ctest.
Result hetero(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"run", workflow, "--no-perf-model", "--set", "output=" + (dir / "out").string()});
  return flowd_cmd(dir, args, "timeout 120");
}

Json trace_events(const fs::path& file) {
  Json j = Json::parse(slurp(file));
  return j.is_object() ? j["traceEvents"] : j;
}

double seconds_of(const std::function<Result()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = f();
  EXPECT_EQ(r.code, 0) << r.err;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(Hetero, TheSimulatedGpuTakesTheHighSpeedupTasks) {
  const auto dir = scratch();
  const auto r = hetero(dir, {"--gpu", "sim:1", "--cpu", "3", "--scheduler", "pats", "--set", "tiles=24", "--trace",
                              (dir / "t.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("1 simulated GPU"), std::string::npos) << r.err;
  const Json ev = trace_events(dir / "t.json");
  std::map<int, std::string> track;
  std::string process;
  for (const auto& e : ev) {
    if (e.value("name", "") == "thread_name") track[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e.value("name", "") == "process_name") process = e["args"]["name"].get<std::string>();
  }
  EXPECT_NE(process.find("simulated GPUs"), std::string::npos) << process;
  double gpu_hint = 0, cpu_hint = 0;
  int gpu_n = 0, cpu_n = 0;
  std::map<std::string, int> on_gpu, total;
  for (const auto& e : ev) {
    if (e.value("ph", "") != "X" || !hint.count(e["name"].get<std::string>())) continue;
    const std::string op = e["name"], variant = e["args"]["variant"];
    ++total[op];
    if (variant == "sim") {
      EXPECT_NE(track[e["tid"].get<int>()].find("sim0 (simulated)"), std::string::npos);
      gpu_hint += hint.at(op), ++gpu_n, ++on_gpu[op];
    } else {
      EXPECT_EQ(variant, "cpu");
      cpu_hint += hint.at(op), ++cpu_n;
    }
  }
  ASSERT_GT(gpu_n, 0);
  ASSERT_GT(cpu_n, 0);
  EXPECT_GT(gpu_hint / gpu_n, 2 * (cpu_hint / cpu_n)) << "mean speedup of tasks on the GPU vs on CPUs";
  // The three highest-speedup operators run mostly on the GPU, the lowest mostly on CPUs.
  for (const char* high : {"synth.features", "synth.watershed", "synth.recon_to_nuclei"})
    EXPECT_GT(on_gpu[high] * 2, total[high]) << high << ": " << on_gpu[high] << " of " << total[high] << " on the GPU";
  EXPECT_LT(on_gpu["synth.rbc_detection"] * 2, total["synth.rbc_detection"]);
}

// The acceptance comparison. Compute is simulated (sleep), so the cores of
// the machine are not the limit; each policy runs three times alternately
// and the medians are compared.
TEST(Hetero, PatsFinishesSoonerThanFcfs) {
  const auto dir = scratch();
  std::vector<double> pats, fcfs;
  for (int i = 0; i < 3; ++i) {
    fcfs.push_back(seconds_of([&] { return hetero(dir, {"--gpu", "sim:1", "--scheduler", "fcfs", "-q"}); }));
    pats.push_back(seconds_of([&] { return hetero(dir, {"--gpu", "sim:1", "--scheduler", "pats", "-q"}); }));
  }
  std::sort(pats.begin(), pats.end());
  std::sort(fcfs.begin(), fcfs.end());
  EXPECT_LT(pats[1], fcfs[1]) << "median pats " << pats[1] << " s, fcfs " << fcfs[1] << " s";
}

TEST(Hetero, EveryPolicyCompletesWithEveryOption) {
  const auto dir = scratch();
  for (const char* scheduler : {"pats", "fcfs", "heft"})
    for (const char* locality : {"on", "off"})
      for (const char* prefetch : {"on", "off"}) {
        const auto r = hetero(dir, {"--gpu", "sim:2", "--cpu", "2", "--scheduler", scheduler, "--locality", locality,
                                    "--prefetch", prefetch, "--set", "tiles=8", "-q"});
        ASSERT_EQ(r.code, 0) << scheduler << " locality " << locality << " prefetch " << prefetch << ": " << r.err;
        EXPECT_TRUE(fs::exists(dir / "out" / "features.h5"));
        fs::remove_all(dir / "out");
      }
}

TEST(Hetero, TheReportSaysTheGpusWereSimulated) {
  const auto dir = scratch();
  const auto r = hetero(dir, {"--gpu", "sim:1", "--cpu", "2", "--set", "tiles=4", "--report", (dir / "r.html").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = slurp(dir / "r.html");
  EXPECT_NE(html.find("simulated"), std::string::npos);
  EXPECT_NE(html.find("synth.features"), std::string::npos);
}

TEST(Hetero, BadGpuAndSchedulerChoicesAreUsageErrors) {
  const auto dir = scratch();
  auto r = hetero(dir, {"--gpu", "sim:0"});
  EXPECT_EQ(r.code, 1) << r.err;  // a bad command line
  EXPECT_NE(r.err.find("--gpu: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sim:N[:scale]"), std::string::npos) << r.err;
  r = hetero(dir, {"--scheduler", "random"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("pats, fcfs, heft"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));

  // The same choice in the workflow's run section is an invalid workflow.
  std::string text = slurp(std::string(FLOWD_SOURCE_DIR) + "/workflows/default.json");
  const auto at = text.find(R"("scheduler": "fcfs")");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string(R"("scheduler": "fcfs")").size(), R"("scheduler": "random")");
  std::ofstream(dir / "wf.json") << text;
  r = flowd_cmd(dir, {"run", "wf.json", "--set", "output=out"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("/run/scheduler: unknown scheduler 'random'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(Hetero, CalibrateWritesTheModelAndPerfPrintsIt) {
  const auto dir = scratch();
  const auto model = (dir / "model.json").string();
  auto r = flowd_cmd(dir, {"calibrate", workflow, "--perf-model", model, "--cpu", "2", "--gpu", "none", "--set",
                           "output=" + (dir / "out").string(), "--limit", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out")) << "calibration writes no outputs";
  const Json m = Json::parse(slurp(model));
  EXPECT_FALSE(m.empty());
  r = flowd_cmd(dir, {"perf", "--perf-model", model});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const auto& [op, h] : hint) EXPECT_NE(r.out.find(op), std::string::npos) << op << " missing:\n" << r.out;
  EXPECT_NE(r.out.find("(3)"), std::string::npos) << "3 CPU runs per operator:\n" << r.out;
  EXPECT_NE(r.out.find("20.00x hint"), std::string::npos) << r.out;
  // A run with the model learns from it and adds to it.
  r = flowd_cmd(dir, {"run", workflow, "--perf-model", model, "--cpu", "2", "--gpu", "sim:1", "--set",
                      "output=" + (dir / "out").string(), "--set", "tiles=2", "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = flowd_cmd(dir, {"perf", "--perf-model", model, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json learnt = Json::parse(r.out);
  bool simulated_runs = false;  // the run added measurements on the simulated GPU
  for (const auto& run : learnt["operators"]["synth.features"]["runs"]) simulated_runs |= run["variant"] == "sim";
  EXPECT_TRUE(simulated_runs) << r.out;
  r = flowd_cmd(dir, {"perf", "--perf-model", (dir / "missing.json").string()});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;
}

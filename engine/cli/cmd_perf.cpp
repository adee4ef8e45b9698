// flowd perf: what the performance model has learnt.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <boost/program_options.hpp>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/setup.hpp"
#include "sched/perf_model.hpp"

namespace po = boost::program_options;

namespace flowd::cli {

namespace {
std::string ms(const std::optional<double>& s, std::uint64_t n) {
  if (!s) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f ms (%llu)", *s * 1e3, static_cast<unsigned long long>(n));
  return buf;
}
}  // namespace

int cmd_perf(const Args& args) {
  std::string file;
  bool json = false;
  po::options_description desc("Options");
  desc.add_options()("perf-model", po::value(&file), "model file (default $FLOWD_PERF_MODEL or ~/.cache/flowd/perf-model.json)")
      ("json", po::bool_switch(&json), "print the model's JSON")("help,h", "show this help");
  po::variables_map vm;
  if (auto rc = parse_command(args, desc, "usage: flowd perf [options]", "perf-model", vm)) return *rc;
  const auto path = file.empty() ? sched::default_perf_model_path() : std::optional<std::filesystem::path>(file);
  if (!path) {
    std::cerr << "flowd: no performance model location (set FLOWD_PERF_MODEL or --perf-model)\n";
    return exit_usage;
  }
  if (!file.empty() && !std::filesystem::exists(*path)) {
    std::cerr << "flowd: no performance model at " << path->string() << "\n";
    return exit_invalid;
  }
  try {
    const auto model = sched::PerfModel::load(*path);
    if (json) {
      std::cout << model.to_json().dump(2) << "\n";
      return exit_ok;
    }
    std::cout << "Performance model " << path->string() << "\n";
    const auto ops = model.summary();
    if (ops.empty()) {
      std::cout << "  (empty: run a workflow, or `flowd calibrate WORKFLOW`)\n";
      return exit_ok;
    }
    std::printf("\n  %-28s %-20s %-20s %-20s %s\n", "operator", "cpu (runs)", "gpu (runs)", "simulated (runs)", "speedup");
    for (const auto& s : ops) {
      char speedup[64];
      std::snprintf(speedup, sizeof speedup, "%.2fx %s", s.speedup,
                    s.measured ? "measured" : (s.hint ? "hint" : "unknown"));
      std::printf("  %-28s %-20s %-20s %-20s %s\n", s.op.c_str(), ms(s.cpu_seconds, s.cpu_runs).c_str(),
                  ms(s.gpu_seconds, s.gpu_runs).c_str(), ms(s.sim_seconds, s.sim_runs).c_str(), speedup);
    }
    std::printf("\n  transfer impact (share of transfer time in GPU tasks): %.2f\n", model.transfer_impact());
    return exit_ok;
  } catch (const std::exception& e) {
    std::cerr << "flowd: " << e.what() << "\n";
    return exit_invalid;
  }
}

}  // namespace flowd::cli

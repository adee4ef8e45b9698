#pragma once
// Shared by the engine tests: scratch directories, quiet logging, running a
// workflow given as JSON text.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "plugin/registry.hpp"
#include "runtime/provenance.hpp"
#include "runtime/run.hpp"
#include "util/log.hpp"
#include "util/temp_files.hpp"
#include "workflow/validate.hpp"

namespace flowd::test {

namespace fs = std::filesystem;

// A fresh, empty directory for the running test.
inline fs::path scratch() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path p = fs::path(FLOWD_TEST_TMP) / info->test_suite_name() / info->name();
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// The message of what `f` throws; "" when it throws nothing.
template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

inline Logger& quiet_log() {
  static Logger log(stderr, false, LogLevel::error);
  return log;
}

inline std::string test_plugins(const char* which) { return std::string(FLOWD_TEST_EXTRA_PLUGINS) + "/" + which; }

inline plugin::Registry registry(std::vector<std::string> dirs, std::optional<fs::path> cache = std::nullopt) {
  std::vector<plugin::SearchDir> path;
  for (auto& d : dirs) path.push_back({d, "test", true});
  plugin::Registry r(path, quiet_log(), plugin::RegistryOptions{cache});
  r.scan();
  return r;
}

inline plugin::Registry default_registry() { return registry({test_plugins("testops"), FLOWD_TEST_PLUGIN_DIR}); }

inline workflow::Graph graph(const std::string& json, std::vector<workflow::Override> sets = {}) {
  auto reg = default_registry();
  return workflow::validate(workflow::parse_workflow(json, "test.json", sets), reg);
}

inline runtime::RunReport run(const std::string& json, runtime::RunOptions opts = {}) {
  auto g = graph(json);
  runtime::Run run(g, std::move(opts), quiet_log());
  return run.execute();
}

inline std::string slurp(const fs::path& p);

// A shipped workflow (workflows/NAME) as `flowd run NAME --set K=V ...`
// runs it, in this process, with its provenance: on two CPU workers, or on
// one CPU worker and `gpus` real GPUs.
inline runtime::RunReport run_shipped(const std::string& name, const std::vector<std::string>& sets, int gpus = 0) {
  std::vector<workflow::Override> o;
  for (const auto& s : sets) o.push_back({s.substr(0, s.find('=')), s.substr(s.find('=') + 1)});
  auto g = graph(slurp(fs::path(FLOWD_SOURCE_DIR) / "workflows" / name), o);
  runtime::RunOptions opts;
  opts.cpu_workers = gpus > 0 ? 1 : 2;
  if (gpus > 0) opts.gpus = runtime::GpuSpec{runtime::GpuSpec::Mode::count, gpus, 1.0};
  opts.provenance = runtime::make_provenance(g, {"flowd", name});
  runtime::Run r(g, std::move(opts), quiet_log());
  return r.execute();
}

// What failed a run: its first failure, or its run-level error.
inline std::string why(const runtime::RunReport& r) { return r.failures.empty() ? r.error : r.failures[0].describe(); }

inline std::vector<std::string> lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `text` to `p`, making its folder first.
inline void write(const fs::path& p, const std::string& text) {
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

inline bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// Every file (not folder) under `dir`, relative, sorted; empty when `dir`
// does not exist.
inline std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (!e.is_directory()) out.push_back(e.path().lexically_relative(dir).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

// Every file under `dir` whose name marks it as a temporary: flowd's own
// (util/temp_files.hpp) or any "*.tmp", relative.
inline std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> t;
  for (const auto& f : files_under(dir)) {
    const fs::path name = fs::path(f).filename();
    if (is_flowd_temp(name.string()) || contains(name.string(), "flowd-tmp") || name.extension() == ".tmp") t.push_back(f);
  }
  return t;
}

}  // namespace flowd::test

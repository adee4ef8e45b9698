// The flowd command line, run as a user would: exit codes, messages, outputs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "flowd/abi.hpp"
#include "support/cli.hpp"
#include "support/helpers.hpp"

namespace fs = std::filesystem;
using flowd::test::files_under;
using flowd::test::temporaries;
using flowd::test::write;
using flowd::test::contains;
using flowd::test::scratch;
using flowd::test::slurp;
using flowd::test::flowd_cmd;
using flowd::test::quote;
using flowd::test::Result;

namespace {

std::string chain(const std::string& step_params, int count = 20) {
  return R"({
  "version": 1,
  "vars": {"output": "out/chain", "n": )" + std::to_string(count) + R"(},
  "stages": {
    "src":  {"op": "test.count", "params": {"count": "${n}"}},
    "step": {"op": "test.step", "inputs": {"in": "src.out"}, "params": {)" + step_params + R"(}},
    "sink": {"op": "test.record", "inputs": {"in": "step.out"}, "params": {"path": "${output}.txt"}}
  }
})";
}

}  // namespace

TEST(Cli, VersionHelpAndUsageErrors) {
  const auto dir = scratch();
  auto v = flowd_cmd(dir, {"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_TRUE(contains(v.out, "flowd 0.1.0 (plugin ABI " + std::to_string(flowd::abi_version) + ")")) << v.out;
  auto h = flowd_cmd(dir, {"--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_TRUE(contains(h.out, "Exit codes")) << h.out;
  EXPECT_EQ(flowd_cmd(dir, {}).code, 1);
  EXPECT_EQ(flowd_cmd(dir, {"--bogus"}).code, 1);
  auto bad = flowd_cmd(dir, {"run", "x.json", "--cpu", "many"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_TRUE(contains(bad.err, "cpu")) << bad.err;
  EXPECT_EQ(flowd_cmd(dir, {"run", "--help"}).code, 0);
}

TEST(Cli, PluginsListsOperatorsVersionsFilesAndRefusals) {
  const auto dir = scratch();
  auto r = flowd_cmd(dir, {"plugins", "-P", flowd::test::test_plugins("wrongabi")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "testops 1.2.3")) << r.out;
  EXPECT_TRUE(contains(r.out, "flowd-testops.so")) << r.out;
  EXPECT_TRUE(contains(r.out, "test.step")) << r.out;
  EXPECT_TRUE(contains(r.out, "image.gaussian")) << r.out;
  EXPECT_TRUE(contains(r.out, "Refused:")) << r.out;
  EXPECT_TRUE(contains(r.out, "built for flowd plugin ABI 999")) << r.out;
  auto j = flowd_cmd(dir, {"plugins", "--json"});
  EXPECT_EQ(j.code, 0);
  const auto doc = flowd::Json::parse(j.out);
  EXPECT_FALSE(doc["plugins"].empty());
}

TEST(Cli, InspectShowsPortsParametersAndDocs) {
  const auto dir = scratch();
  auto r = flowd_cmd(dir, {"inspect", "image.gaussian"});
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* s : {"Operator      image.gaussian", "Pattern       map", "Variants      cpu", "Inputs", "Outputs",
                        "sigma", "float in [0.1, 100]", "default 1.5", "standard deviation in pixels"})
    EXPECT_TRUE(contains(r.out, s)) << s << "\n" << r.out;
  auto p = flowd_cmd(dir, {"inspect", "testops"});
  EXPECT_EQ(p.code, 0);
  EXPECT_TRUE(contains(p.out, "test.record")) << p.out;
  auto j = flowd_cmd(dir, {"inspect", "test.count", "--json"});
  EXPECT_EQ(flowd::Json::parse(j.out)["pattern"], "source");
  auto u = flowd_cmd(dir, {"inspect", "image.gausian"});
  EXPECT_EQ(u.code, 2);
  EXPECT_TRUE(contains(u.err, "did you mean 'image.gaussian'?")) << u.err;
}

TEST(Cli, ValidateReportsEveryProblemWithPointers) {
  const auto dir = scratch();
  write(dir / "good.json", chain(""));
  auto g = flowd_cmd(dir, {"validate", "good.json"});
  EXPECT_EQ(g.code, 0) << g.err;
  EXPECT_TRUE(contains(g.out, "valid; 3 stages")) << g.out;

  write(dir / "syntax.json", "{\n  \"version\": 1,\n  \"stages\": {\n    \"a\": {\"op\" \"test.count\"}\n  }\n}\n");
  auto s = flowd_cmd(dir, {"validate", "syntax.json"});
  EXPECT_EQ(s.code, 2);
  EXPECT_TRUE(contains(s.err, "syntax.json:4:")) << s.err;

  write(dir / "bad.json", chain(R"("sleep_ms": -1, "colour": 1)"));
  auto b = flowd_cmd(dir, {"validate", "bad.json", "--set", "n=-3"});
  EXPECT_EQ(b.code, 2);
  EXPECT_TRUE(contains(b.err, "3 problems in bad.json")) << b.err;
  EXPECT_TRUE(contains(b.err, "/stages/step/params/sleep_ms: expected int >= 0, got -1")) << b.err;
  EXPECT_TRUE(contains(b.err, "/stages/step/params/colour: operator 'test.step' has no parameter 'colour'")) << b.err;
  EXPECT_TRUE(contains(b.err, "/stages/src/params/count: expected int >= 0, got -3")) << b.err;

  auto m = flowd_cmd(dir, {"validate", "missing.json"});
  EXPECT_EQ(m.code, 2);
  EXPECT_TRUE(contains(m.err, "missing.json: cannot open missing.json")) << m.err;
}

TEST(Cli, RunWritesOutputsAndReportsStages) {
  const auto dir = scratch();
  write(dir / "wf.json", chain(R"("sleep_ms": 1)"));
  auto r = flowd_cmd(dir, {"wf.json", "--cpu", "2", "--set", "n=12"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(flowd::test::lines(dir / "out" / "chain.txt").size(), 12u);
  EXPECT_TRUE(contains(r.err, "finished; outputs written")) << r.err;
  EXPECT_TRUE(contains(r.err, "12 source items")) << r.err;
  EXPECT_TRUE(temporaries(dir / "out").empty());
}

TEST(Cli, AFailingTaskExits3AndWritesNothing) {
  const auto dir = scratch();
  write(dir / "wf.json", chain(R"("fail_key": "item/5")"));
  auto r = flowd_cmd(dir, {"run", "wf.json"});
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(contains(r.err, "stage 'step' failed on item 'item/5': asked to fail on item/5")) << r.err;
  EXPECT_TRUE(contains(r.err, "no output was written")) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out" / "chain.txt"));
  if (fs::exists(dir / "out")) {
    EXPECT_TRUE(temporaries(dir / "out").empty());
  }
}

TEST(Cli, KeepGoingExits4AndWritesTheRest) {
  const auto dir = scratch();
  write(dir / "wf.json", chain(R"("fail_key": "item/5")"));
  auto r = flowd_cmd(dir, {"run", "wf.json", "--keep-going"});
  EXPECT_EQ(r.code, 4);
  EXPECT_EQ(flowd::test::lines(dir / "out" / "chain.txt").size(), 19u);
  EXPECT_TRUE(contains(r.err, "1 failed item(s)")) << r.err;
}

TEST(Cli, BadPluginsAreNamedWhenTheWorkflowNeedsThem) {
  const auto dir = scratch();
  fs::create_directories(dir / "broken");
  std::ofstream(dir / "broken" / "flowd-broken.so") << "\x7f" "ELF but not really";
  write(dir / "future.json", R"({"version": 1, "stages": {"a": {"op": "future.op"}}})");
  auto abi = flowd_cmd(dir, {"validate", "future.json", "-P", flowd::test::test_plugins("wrongabi"), "-P", "broken"});
  EXPECT_EQ(abi.code, 2);
  EXPECT_TRUE(contains(abi.err, "/stages/a/op: operator 'future.op' is in ")) << abi.err;
  EXPECT_TRUE(contains(abi.err, "flowd-wrongabi.so, which was refused: built for flowd plugin ABI 999")) << abi.err;
  EXPECT_TRUE(contains(abi.err, "flowd-broken.so: refused: not a valid shared library")) << abi.err;

  // Duplicates and shadowing across search-path entries: test_plugin_cli.cpp.

  write(dir / "nope.json", chain(""));
  auto missing_dir = flowd_cmd(dir, {"validate", "nope.json", "-P", "no/such/dir"});
  EXPECT_EQ(missing_dir.code, 2);
  EXPECT_TRUE(contains(missing_dir.err, "'no/such/dir' (from --plugin-path) does not exist")) << missing_dir.err;
}

TEST(Cli, WithAWarmCacheOnlyThePluginsInUseAreOpened) {
  const auto dir = scratch();
  write(dir / "wf.json", chain(""));
  auto cold = flowd_cmd(dir, {"validate", "wf.json", "-v"});
  ASSERT_EQ(cold.code, 0) << cold.err;
  EXPECT_TRUE(contains(cold.err, "reading the manifest of")) << cold.err;
  auto warm = flowd_cmd(dir, {"validate", "wf.json", "-v"});
  ASSERT_EQ(warm.code, 0) << warm.err;
  EXPECT_FALSE(contains(warm.err, "reading the manifest of")) << warm.err;
  EXPECT_TRUE(contains(warm.err, "opened plugin ")) << warm.err;
  EXPECT_TRUE(contains(warm.err, "flowd-testops.so")) << warm.err;
  EXPECT_FALSE(contains(warm.err, "flowd-image.so")) << warm.err;
}

TEST(Cli, CtrlCStopsCleanlyWithExit130AndNoOutput) {
  const auto dir = scratch();
  write(dir / "wf.json", chain(R"("sleep_ms": 50)", 400));
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::chdir(dir.c_str());
    ::setenv("FLOWD_PLUGIN_PATH", flowd::test::test_plugins("testops").c_str(), 1);
    ::setenv("FLOWD_CACHE_DIR", (dir / ".cache").c_str(), 1);
    ::freopen((dir / "stderr.txt").c_str(), "w", stderr);
    ::execl(FLOWD_BINARY, FLOWD_BINARY, "run", "wf.json", "--cpu", "2", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const auto err = slurp(dir / "stderr.txt");
  EXPECT_TRUE(contains(err, "interrupted")) << err;
  EXPECT_FALSE(fs::exists(dir / "out" / "chain.txt"));
}

namespace {

// The data of an HDF5 file without its attributes (provenance holds times).
std::string h5_data(const fs::path& file) {
  const fs::path dump = file.string() + ".dump";
  const std::string cmd = "h5dump -A 0 " + quote(file.string()) + " | tail -n +2 > " + quote(dump.string());
  if (std::system(cmd.c_str()) != 0) return "h5dump failed";
  return slurp(dump);
}

const std::string small_input = "input=synthetic:blobs?width=2048&height=1536&count=2&seed=11";

}  // namespace

TEST(Cli, EveryShippedWorkflowRunsWithNoArguments) {
  const auto dir = scratch();
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(FLOWD_SOURCE_DIR) / "workflows")) {
    if (e.path().extension() != ".json") continue;
    ++n;
    const fs::path cwd = dir / e.path().stem();
    fs::create_directories(cwd);
    auto r = flowd_cmd(cwd, {e.path().string(), "--no-progress"});
    EXPECT_EQ(r.code, 0) << e.path() << "\n" << r.err;
    ASSERT_TRUE(fs::exists(cwd / "out")) << e.path() << " wrote nothing under out/";
    EXPECT_FALSE(files_under(cwd / "out").empty()) << e.path();
    EXPECT_TRUE(temporaries(cwd / "out").empty()) << e.path();
  }
  EXPECT_GE(n, 1u);
}

TEST(Cli, MainJobResultsDoNotDependOnTheWorkerCount) {
  const auto dir = scratch();
  const std::string wf = (fs::path(FLOWD_SOURCE_DIR) / "workflows" / "default.json").string();
  for (const char* cpus : {"1", "2"}) {
    auto r = flowd_cmd(dir, {wf, "--cpu", cpus, "--set", small_input, "--set", std::string("output=out") + cpus, "--no-progress"});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const auto files = files_under(dir / "out1");
  EXPECT_EQ(files, files_under(dir / "out2"));
  EXPECT_GE(files.size(), 2u + 2 * 4);  // two HDF5 files and a mask per tile
  for (const auto& f : files) {
    if (fs::path(f).extension() == ".h5") {
      const auto a = h5_data(dir / "out1" / f), b = h5_data(dir / "out2" / f);
      EXPECT_NE(a.find("DATASET"), std::string::npos) << f << ": " << a.substr(0, 200);
      EXPECT_EQ(a, b) << f;
    } else if (fs::path(f).extension() == ".png") {
      EXPECT_EQ(slurp(dir / "out1" / f), slurp(dir / "out2" / f)) << f;
    }
  }
}

TEST(Cli, OneWorkflowFeedsAnotherThroughHdf5) {
  const auto dir = scratch();
  const std::string wf = (fs::path(FLOWD_SOURCE_DIR) / "workflows" / "default.json").string();
  ASSERT_EQ(flowd_cmd(dir, {wf, "--set", small_input, "--no-progress"}).code, 0);
  write(dir / "second.json", R"({
    "version": 1,
    "vars": {"regions": "out/default/regions.h5"},
    "stages": {
      "read":   {"op": "io.read_hdf5", "params": {"path": "${regions}", "dataset": "regions", "split": "key"}},
      "record": {"op": "test.record", "inputs": {"in": "read.data"}, "params": {"path": "out/second/keys.txt"}}
    }
  })");
  auto r = flowd_cmd(dir, {"second.json", "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto keys = flowd::test::lines(dir / "out" / "second" / "keys.txt");
  ASSERT_FALSE(keys.empty());
  EXPECT_LE(keys.size(), 2u * 4u);  // at most one item per tile of the first run
  for (const auto& k : keys) EXPECT_NE(k.find("/tile/"), std::string::npos) << k;
  EXPECT_EQ(keys.front(), "blobs-0/tile/0/0");
}

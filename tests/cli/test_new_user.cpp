// What a new user meets on the command line (issue 38, items 8, 9 and 11):
// each test fails on flowd before that issue.
#include <fstream>

#include <gtest/gtest.h>

#include "flowd/abi.hpp"
#include "support/cli.hpp"
#include "support/helpers.hpp"

namespace fs = std::filesystem;
using flowd::test::contains;
using flowd::test::flowd_cmd;
using flowd::test::Result;
using flowd::test::scratch;
using flowd::test::slurp;
using flowd::test::write;

namespace {

const char* counted_chain = R"({"version": 1, "stages": {
  "src": {"op": "test.count", "params": {"count": 6}},
  "step": {"op": "test.step", "inputs": {"in": "src.out"}},
  "sink": {"op": "test.record", "inputs": {"in": "step.out"}, "params": {"path": "out/counted_chain.txt"}}}})";

}  // namespace

TEST(NewUser, RunWithoutAFileSaysTheWorkflowFileIsMissing) {
  const auto r = flowd_cmd(scratch(), {"run"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "flowd: the workflow file is missing")) << r.err;
  EXPECT_FALSE(contains(r.err, "'--workflow'")) << r.err;
}

TEST(NewUser, AMistypedCommandIsNotTakenForAWorkflow) {
  const auto dir = scratch();
  const auto r = flowd_cmd(dir, {"plugns"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "'plugns' is neither a command nor a workflow file (did you mean 'flowd plugins'?)"))
      << r.err;
  const auto f = flowd_cmd(dir, {"frobnicate"});
  EXPECT_EQ(f.code, 1);
  EXPECT_TRUE(contains(f.err, "commands: run, validate, plugins")) << f.err;
  // A file is still run, with or without .json.
  write(dir / "wf", counted_chain);
  EXPECT_EQ(flowd_cmd(dir, {"wf", "--no-progress"}).code, 0);
}

TEST(NewUser, PluginsAndInspectTakeTheCommonQuietAndVerbose) {
  const auto dir = scratch();
  for (const char* flag : {"-q", "--quiet", "-v", "--verbose"}) {
    EXPECT_EQ(flowd_cmd(dir, {"plugins", flag}).code, 0) << flag;
    EXPECT_EQ(flowd_cmd(dir, {"inspect", "test.count", flag}).code, 0) << flag;
  }
}

TEST(NewUser, CpuIsOneOptionEverywhereAndZeroOrNoItemsIsRefused) {
  const auto dir = scratch();
  write(dir / "wf.json", counted_chain);
  EXPECT_EQ(flowd_cmd(dir, {"wf.json", "--cpus", "1", "--no-progress"}).code, 0);
  const auto zero = flowd_cmd(dir, {"wf.json", "--cpu", "0"});
  EXPECT_EQ(zero.code, 1);
  EXPECT_TRUE(contains(zero.err, "--cpu 0: a run needs at least 1 CPU worker")) << zero.err;
  const auto none = flowd_cmd(dir, {"wf.json", "--limit", "0"});
  EXPECT_EQ(none.code, 1);
  EXPECT_TRUE(contains(none.err, "--limit 0 would run no item")) << none.err;
  const auto worker = flowd_cmd(dir, {"worker", "--help"});
  EXPECT_TRUE(contains(worker.out, "--cpu")) << worker.out;
  const auto w0 = flowd_cmd(dir, {"worker", "--connect", "tcp://127.0.0.1:9", "--cpu", "0"});
  EXPECT_EQ(w0.code, 1);
  EXPECT_TRUE(contains(w0.err, "--cpu 0: a worker needs at least 1 CPU thread")) << w0.err;
}

TEST(NewUser, AskingForAGpuOnAMachineWithoutOneSaysThereIsNone) {
  if (fs::exists("/proc/driver/nvidia/version")) GTEST_SKIP() << "this machine has an NVIDIA driver";
  const auto dir = scratch();
  write(dir / "wf.json", counted_chain);
  const auto r = flowd_cmd(dir, {"wf.json", "--gpu", "1"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(contains(r.err, "this machine has no GPU")) << r.err;
  EXPECT_FALSE(contains(r.err, "driver version is insufficient")) << r.err;
}

TEST(NewUser, ValidateChecksThatTheInputsExist) {
  const auto dir = scratch();
  write(dir / "wf.json", R"({"version": 1, "stages": {
    "src": {"op": "io.read_images", "params": {"path": "slides"}},
    "files": {"op": "io.list_files", "params": {"dir": "synthetic:cvtree?proteomes=2&part=proteomes"}},
    "out": {"op": "io.write_image", "inputs": {"image": "src.image"}, "params": {"dir": "out"}},
    "list": {"op": "test.record", "inputs": {"in": "files.files"}, "params": {"path": "out/files.txt"}}}})");
  const auto r = flowd_cmd(dir, {"validate", "wf.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "/stages/src/params/path: input 'slides' does not exist (relative to the current folder"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "/stages/files/")) << "a synthetic set is not a file\n" << r.err;
  fs::create_directories(dir / "slides");
  EXPECT_EQ(flowd_cmd(dir, {"validate", "wf.json"}).code, 0);
}

TEST(NewUser, AGeneratedDataSetIsSaidWhenItIsMadeAndNotWhenItIsReused) {
  const auto dir = scratch();
  write(dir / "wf.json", R"({"version": 1, "stages": {
    "files": {"op": "io.list_files", "params": {"dir": "synthetic:cvtree?proteomes=2&proteins=20&seed=3&part=proteomes",
                                                 "extensions": [".faa"]}},
    "list": {"op": "test.record", "inputs": {"in": "files.files"}, "params": {"path": "out/files.txt"}}}})");
  const auto first = flowd_cmd(dir, {"wf.json", "--no-progress"});
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_TRUE(contains(first.err, "generating synthetic:cvtree?proteomes=2")) << first.err;
  EXPECT_TRUE(contains(first.err, "(first use; later runs reuse it)")) << first.err;
  EXPECT_TRUE(contains(first.err, "generated 3 files")) << first.err;  // two proteomes and the true tree
  const auto again = flowd_cmd(dir, {"wf.json", "--no-progress"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_FALSE(contains(again.err, "generating")) << again.err;
}

TEST(NewUser, TheRunsLastLineSaysWhereTheOutputsWent) {
  const auto dir = scratch();
  write(dir / "wf.json", counted_chain);
  const auto r = flowd_cmd(dir, {"wf.json", "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string last = r.err.substr(0, r.err.size() - 1);
  last = last.substr(last.rfind('\n') + 1);
  EXPECT_TRUE(contains(last, "outputs in out/: counted_chain.txt")) << r.err;
}

// The documented commands of docs/tools.md are built by `tools/setup.sh run`:
// its target flowd_tools holds every tool the page names.
TEST(NewUser, SetupRunBuildsEveryToolDocsToolsMdDocuments) {
  const std::string setup = slurp(fs::path(FLOWD_SOURCE_DIR) / "tools" / "setup.sh");
  EXPECT_TRUE(contains(setup, "--target flowd flowd_plugins flowd_tools")) << setup;
  const std::string cmake = slurp(fs::path(FLOWD_SOURCE_DIR) / "CMakeLists.txt");
  const auto at = cmake.find("add_custom_target(flowd_tools");
  ASSERT_NE(at, std::string::npos);
  const std::string target = cmake.substr(at, cmake.find(')', at) - at);
  const std::string doc = slurp(fs::path(FLOWD_SOURCE_DIR) / "docs" / "tools.md");
  for (std::size_t p = 0; (p = doc.find("### flowd-", p)) != std::string::npos; ++p) {
    const std::string tool = doc.substr(p + 4, doc.find('\n', p) - p - 4);
    if (tool.starts_with("flowd-bench-")) continue;  // benchmark drivers: tools/setup.sh build
    EXPECT_TRUE(contains(target, tool)) << tool << " is documented but not built by tools/setup.sh run";
  }
}

// docs/cli.md's example of a refused plugin names the engine's ABI.
TEST(NewUser, TheDocsNameTheCurrentPluginAbi) {
  const std::string cli = slurp(fs::path(FLOWD_SOURCE_DIR) / "docs" / "cli.md");
  EXPECT_TRUE(contains(cli, "engine uses ABI " + std::to_string(flowd::abi_version) + ";")) << "docs/cli.md";
}

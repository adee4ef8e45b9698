// The plugin side of the command line as an author meets it: refusals that
// say why, the search path's shadowing, `flowd inspect` and `flowd validate`
// output.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "flowd/abi.hpp"
#include "support/cli.hpp"
#include "support/helpers.hpp"

namespace fs = std::filesystem;
using flowd::test::write;
using flowd::test::contains;
using flowd::test::flowd_cmd;
using flowd::test::scratch;
using flowd::test::test_plugins;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

const char* one_stage = R"({"version": 1, "stages": {
  "src":  {"op": "test.count", "params": {"count": 2}},
  "op":   {"op": "OP", "inputs": {"in": "src.out"}},
  "sink": {"op": "test.record", "inputs": {"in": "op.out"}, "params": {"path": "out.txt"}}}})";

std::string using_op(const std::string& op) {
  std::string s = one_stage;
  s.replace(s.find("OP"), 2, op);
  return s;
}

// The prefix that makes the flowd process unable to bypass file permissions:
// empty for an ordinary user; for root, setpriv dropping the capabilities
// that override them. nullopt when neither is possible.
std::optional<std::string> without_dac_override() {
  if (::geteuid() != 0) return std::string();
  if (std::system("setpriv --bounding-set -dac_override,-dac_read_search true >/dev/null 2>&1") != 0)
    return std::nullopt;
  return std::string("setpriv --bounding-set -dac_override,-dac_read_search");
}

}  // namespace

TEST(PluginCli, APluginBuiltAgainstOtherSdkHeadersIsRefusedWithExit2) {
  const auto dir = scratch();
  write(dir / "wf.json", using_op("othersdk.touch"));
  auto r = flowd_cmd(dir, {"validate", "wf.json", "-P", test_plugins("othersdk")});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "/stages/op/op: operator 'othersdk.touch' is in ")) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "flowd-othersdk.so, which was refused: built against a different flowd SDK "
                       "(plugin's SDK headers "))
      << r.err;
  EXPECT_TRUE(contains(r.err, ", this engine's " + std::string(flowd::sdk_hash.substr(0, 12)) + ")")) << r.err;
  auto run = flowd_cmd(dir, {"run", "wf.json", "-P", test_plugins("othersdk"), "--no-progress"});
  EXPECT_EQ(run.code, 2) << run.err;
  EXPECT_FALSE(fs::exists(dir / "out.txt"));
}

TEST(PluginCli, InspectOnARefusedPluginSaysWhy) {
  const auto dir = scratch();
  auto sdk = flowd_cmd(dir, {"inspect", "othersdk", "-P", test_plugins("othersdk")});
  EXPECT_EQ(sdk.code, 2);
  EXPECT_TRUE(contains(sdk.err, "plugin 'othersdk' (")) << sdk.err;
  EXPECT_TRUE(contains(sdk.err, "flowd-othersdk.so) was refused: built against a different flowd SDK")) << sdk.err;
  EXPECT_FALSE(contains(sdk.err, "unknown operator")) << sdk.err;

  auto abi = flowd_cmd(dir, {"inspect", "future", "-P", test_plugins("wrongabi")});
  EXPECT_EQ(abi.code, 2);
  EXPECT_TRUE(contains(abi.err, "plugin 'future' (")) << abi.err;
  EXPECT_TRUE(contains(abi.err, "was refused: built for flowd plugin ABI 999")) << abi.err;

  auto op = flowd_cmd(dir, {"inspect", "baddefault.level", "-P", test_plugins("baddefault")});
  EXPECT_EQ(op.code, 2);
  EXPECT_TRUE(contains(op.err, "operator 'baddefault.level' is in ")) << op.err;
  EXPECT_TRUE(contains(op.err,
                       "declares parameter 'level' with default 999, which its own declaration refuses "
                       "(expected int in [0, 255], got 999)"))
      << op.err;

  // A file that is no plugin at all has no name but its file name.
  auto file = flowd_cmd(dir, {"inspect", "not-a-plugin", "-P", test_plugins("notplugin")});
  EXPECT_EQ(file.code, 2);
  EXPECT_TRUE(contains(file.err, "not-a-plugin.so) was refused: not a flowd plugin")) << file.err;
}

TEST(PluginCli, UnreadablePluginsAndFoldersAreNamedWithTheRealReason) {
  const auto prefix = without_dac_override();
  if (!prefix) GTEST_SKIP() << "running as root without setpriv able to drop CAP_DAC_OVERRIDE: root reads any file";
  const auto dir = scratch();
  fs::create_directories(dir / "locked");
  fs::copy_file(fs::path(test_plugins("testops")) / "flowd-testops.so", dir / "locked" / "flowd-locked.so");
  fs::create_directories(dir / "closed");
  ASSERT_EQ(::chmod((dir / "locked" / "flowd-locked.so").c_str(), 0), 0);
  ASSERT_EQ(::chmod((dir / "closed").c_str(), 0), 0);
  write(dir / "wf.json", using_op("test.step"));
  // The prefix goes in front of the binary: flowd_cmd's `env` runs it.
  auto r = flowd_cmd(dir, {"validate", "wf.json", "-P", "locked", "-P", "closed"}, *prefix);
  ::chmod((dir / "closed").c_str(), 0755);
  EXPECT_EQ(r.code, 0) << r.err;  // testops is still found through FLOWD_PLUGIN_PATH
  const auto so = fs::canonical(dir / "locked" / "flowd-locked.so").string();
  EXPECT_TRUE(contains(r.err, so + ": refused: cannot read " + so + ": Permission denied")) << r.err;
  EXPECT_FALSE(contains(r.err, "basic_ios")) << r.err;
  EXPECT_TRUE(contains(r.err, "plugin path 'closed' (from --plugin-path) cannot be read: Permission denied; skipped"))
      << r.err;
}

TEST(PluginCli, AMissingPluginPathEntryIsWarnedAbout) {
  const auto dir = scratch();
  write(dir / "wf.json", using_op("test.step"));
  auto r =
      flowd_cmd(dir, {"validate", "wf.json"}, "FLOWD_PLUGIN_PATH=" + test_plugins("testops") + ":/no/such/plugins");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "plugin path '/no/such/plugins' (from FLOWD_PLUGIN_PATH) does not exist; skipped"))
      << r.err;
}

// The issue's case: a plugin built in a build folder, also installed. `-P`
// comes first and wins; -v and `flowd plugins` say what it hides.
TEST(PluginCli, APluginPathEntryShadowsTheInstalledCopy) {
  const auto dir = scratch();
  fs::create_directories(dir / "build");
  fs::copy_file(fs::path(FLOWD_TEST_PLUGIN_DIR) / "flowd-image.so", dir / "build" / "flowd-image.so");
  write(dir / "wf.json", R"({"version": 1, "stages": {
    "read":  {"op": "io.read_images", "params": {"path": "synthetic:blobs?width=64&height=64&count=2&seed=1"}},
    "blur":  {"op": "image.gaussian", "inputs": {"image": "read.image"}},
    "write": {"op": "io.write_image", "inputs": {"image": "blur.image"}, "params": {"dir": "out"}}}})");
  auto v = flowd_cmd(dir, {"validate", "wf.json", "-P", "build", "-v"});
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_FALSE(contains(v.err, "provided by more than one plugin")) << v.err;
  const auto installed = fs::canonical(fs::path(FLOWD_TEST_PLUGIN_DIR) / "flowd-image.so").string();
  const auto built = fs::canonical(dir / "build" / "flowd-image.so").string();
  EXPECT_TRUE(contains(v.err, installed + " (from the default plugin directory): ")) << v.err;
  EXPECT_TRUE(contains(v.err, "image.gaussian")) << v.err;
  EXPECT_TRUE(contains(v.err, " shadowed by " + built + " (from --plugin-path), earlier on the plugin search path"))
      << v.err;
  auto run = flowd_cmd(dir, {"run", "wf.json", "-P", "build", "--no-progress", "-v"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(contains(run.err, "opened plugin " + built)) << run.err;
  EXPECT_FALSE(contains(run.err, "opened plugin " + installed)) << run.err;

  auto list = flowd_cmd(dir, {"plugins", "-P", "build"});
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_TRUE(contains(list.out, "shadowed by " + built)) << list.out;
  auto json = flowd_cmd(dir, {"plugins", "-P", "build", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  bool reported = false;
  const auto doc = flowd::Json::parse(json.out);
  for (const auto& p : doc["plugins"])
    if (p["file"] == installed)
      for (const auto& s : p.value("shadowed", flowd::Json::array()))
        reported |= s["operator"] == "image.gaussian" && s["by"] == built;
  EXPECT_TRUE(reported) << json.out;
}

TEST(PluginCli, TwoPluginsOfOneEntryDefiningAnOperatorStayAnError) {
  const auto dir = scratch();
  fs::create_directories(dir / "both");
  fs::copy_file(fs::path(test_plugins("testops")) / "flowd-testops.so", dir / "both" / "flowd-testops.so");
  fs::copy_file(fs::path(test_plugins("dup")) / "flowd-testdup.so", dir / "both" / "flowd-testdup.so");
  write(dir / "wf.json", using_op("test.step"));
  auto r = flowd_cmd(dir, {"validate", "wf.json", "-P", "both"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "operator 'test.step' is provided by more than one plugin")) << r.err;
  EXPECT_TRUE(contains(r.err, "flowd-testdup.so")) << r.err;
}

// Every column of `flowd inspect` starts at one position, at least two
// spaces after the longest entry of the column before.
TEST(PluginCli, InspectKeepsItsColumnsApart) {
  const auto dir = scratch();
  auto r = flowd_cmd(dir, {"inspect", "io.read_images"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "unchangeddefault")) << r.out;
  std::vector<std::string> params;
  bool in_params = false;
  for (const auto& l : lines_of(r.out)) {
    if (l == "Parameters")
      in_params = true;
    else if (in_params && l.size() > 2 && l[2] != ' ')
      params.push_back(l);  // not a description line
  }
  ASSERT_GE(params.size(), 3u) << r.out;
  std::size_t column = std::string::npos;
  for (const auto& l : params) {
    auto at = l.find("default ");
    if (at == std::string::npos) at = l.find("required");
    ASSERT_NE(at, std::string::npos) << l;
    EXPECT_EQ(l.substr(at - 2, 2), "  ") << l;
    if (column == std::string::npos) column = at;
    EXPECT_EQ(at, column) << "misaligned:\n" << r.out;
  }
  const auto mode =
      std::find_if(params.begin(), params.end(), [](const std::string& l) { return contains(l, "mode"); });
  ASSERT_NE(mode, params.end());
  EXPECT_TRUE(contains(*mode, "string, one of color|grey|unchanged  ")) << *mode;
}

TEST(PluginCli, ValidatePrintsABranchingGraphAsAGraph) {
  const auto dir = scratch();
  write(dir / "wf.json", R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": 3}},
    "a":    {"op": "test.step", "inputs": {"in": "src.out"}},
    "b":    {"op": "test.step", "inputs": {"in": "src.out"}},
    "join": {"op": "test.pair", "inputs": {"a": "a.out", "b": "b.out"}},
    "sink": {"op": "test.record", "inputs": {"in": "join.out"}, "params": {"path": "out.txt"}}}})");
  auto r = flowd_cmd(dir, {"validate", "wf.json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto l = lines_of(r.out);
  ASSERT_EQ(l.size(), 6u) << r.out;
  EXPECT_EQ(l[0], "wf.json: valid; 5 stages, in execution order:");
  EXPECT_EQ(l[1], "  src   test.count");
  EXPECT_EQ(l[2], "  a     test.step    in <- src.out");
  EXPECT_EQ(l[3], "  b     test.step    in <- src.out");
  EXPECT_EQ(l[4], "  join  test.pair    a <- a.out, b <- b.out  (joined by item key)");
  EXPECT_EQ(l[5], "  sink  test.record  in <- join.out");
}

// The guide's reduce example in its own workflow, and its result's key: the
// stage's name, since its finish leaves the key empty (plugin-sdk.md).
TEST(PluginCli, TheReduceExampleRunsInItsWorkflow) {
  const auto dir = scratch();
  const std::string example = std::string(FLOWD_SOURCE_DIR) + "/docs/examples/reduce-plugin/workflow.json";
  auto r = flowd_cmd(dir, {"run", example, "-P", test_plugins("areahist"), "--set", "output=out", "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(dir / "out" / "areas.h5"));

  write(dir / "keyed.json", R"({"version": 1, "stages": {
    "read":      {"op": "io.read_images", "params": {"path": "synthetic:blobs?width=128&height=128&count=3&seed=3"}},
    "grey":      {"op": "image.grey", "inputs": {"image": "read.image"}},
    "mask":      {"op": "image.threshold", "inputs": {"image": "grey.image"}, "params": {"invert": true}},
    "label":     {"op": "image.label", "inputs": {"mask": "mask.mask"}},
    "regions":   {"op": "image.region_stats", "inputs": {"image": "grey.image", "labels": "label.labels"}},
    "histogram": {"op": "example.area_histogram", "inputs": {"regions": "regions.regions"}},
    "record":    {"op": "test.record", "inputs": {"in": "histogram.histogram"}, "params": {"path": "keys.txt"}}}})");
  auto k = flowd_cmd(dir, {"run", "keyed.json", "-P", test_plugins("areahist"), "--no-progress"});
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_EQ(flowd::test::slurp(dir / "keys.txt"), "histogram\n");
}

// The sink example of docs/plugin-sdk.md: its files appear, with the folder's
// manifest, only when the run succeeds, and a failed run leaves none.
TEST(PluginCli, TheSinkExampleWritesItsFilesOnlyWhenTheRunSucceeds) {
  const auto dir = scratch();
  const std::string example = std::string(FLOWD_SOURCE_DIR) + "/docs/examples/sink-plugin/workflow.json";
  auto r = flowd_cmd(dir, {"run", example, "-P", test_plugins("summarysink"), "--set", "output=out", "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string summary = flowd::test::slurp(dir / "out" / "summary.tsv");
  EXPECT_EQ(summary.rfind("# workflow sha256 ", 0), 0u) << summary;
  EXPECT_EQ(std::count(summary.begin(), summary.end(), '\n'), 4) << summary;  // the header and 3 images
  EXPECT_TRUE(fs::is_regular_file(dir / "out" / ".flowd-manifest.json"));

  const std::string sink = R"("sink": {"op": "example.write_summary", "inputs": {"in": "src.out"},
                                       "params": {"path": "json/summary.tsv", "dir": "json/items"}})";
  write(dir / "json.json", R"({"version": 1, "stages": {"src": {"op": "test.count", "params": {"count": 3}}, )" + sink + "}}");
  auto j = flowd_cmd(dir, {"run", "json.json", "-P", test_plugins("summarysink"), "-P", test_plugins("testops"), "--no-progress"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(flowd::test::slurp(dir / "json" / "summary.tsv").substr(0, 1), "#");
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(fs::is_regular_file(dir / "json" / "items" / "item" / (std::to_string(i) + ".json"))) << i;

  write(dir / "fails.json",
        R"({"version": 1, "stages": {"src": {"op": "test.count", "params": {"count": 3, "fail_at": 2}}, )" + sink + "}}");
  fs::remove_all(dir / "json");
  auto f = flowd_cmd(dir, {"run", "fails.json", "-P", test_plugins("summarysink"), "-P", test_plugins("testops"), "--no-progress"});
  EXPECT_EQ(f.code, 3) << f.err;
  EXPECT_FALSE(fs::exists(dir / "json" / "summary.tsv"));
  EXPECT_FALSE(fs::exists(dir / "json" / "items" / "item" / "0.json"));
}

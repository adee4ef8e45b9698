// Bad input and waits that end, through the command line (issue 12): exit
// codes and the one message the user sees for hostile nesting, a directory
// or an unreadable file given as the workflow, workers that never come, a
// coordinator that never answers, an authorised keys file with no keys.
#include <fstream>
#include <unistd.h>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "support/cli.hpp"
#include "support/helpers.hpp"

namespace fs = std::filesystem;
using flowd::test::write;
using flowd::test::contains;
using flowd::test::flowd_cmd;
using flowd::test::scratch;

namespace {

const char* small = R"({
  "version": 1,
  "stages": {
    "src":  {"op": "test.count", "params": {"count": 3}},
    "sink": {"op": "test.record", "inputs": {"in": "src.out"}, "params": {"path": "out.txt"}}
  }
})";

}  // namespace

TEST(CliInput, DeepNestingIsRefusedWithExit2) {
  const auto dir = scratch();
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  write(dir / "deep.json",
        R"({"version": 1, "stages": {"src": {"op": "test.count", "params": {"count": )" + deep + "}}}}");
  for (const char* cmd : {"validate", "run"}) {
    const auto r = flowd_cmd(dir, {cmd, "deep.json"});
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "/stages/src/params/count/0/0/0/0/...(")) << r.err;
    EXPECT_TRUE(contains(r.err, "nested deeper than 256 levels")) << r.err;
    EXPECT_LT(r.err.size(), 2000u) << "one short message, not the document: " << r.err.size() << " bytes";
  }
  write(dir / "wf.json", small);
  const auto r = flowd_cmd(dir, {"validate", "wf.json", "--set", "src.count=" + std::string(15'000, '[')});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "--set src.count=[[[[")) << r.err;
  EXPECT_TRUE(contains(r.err, "nested deeper than 252 levels")) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.txt"));
}

TEST(CliInput, ADirectoryGivenAsTheWorkflowIsSaidSo) {
  const auto dir = scratch();
  fs::create_directories(dir / "wf");
  const auto r = flowd_cmd(dir, {"wf"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "wf is a directory, not a workflow file")) << r.err;
  EXPECT_FALSE(contains(r.err, "invalid JSON")) << r.err;
}

TEST(CliInput, AnUnreadableWorkflowSaysPermissionDenied) {
  const auto dir = scratch();
  write(dir / "wf.json", small);
  fs::path target = dir / "wf.json";
  ::chmod(target.c_str(), 0);
  if (std::ifstream(target)) {
    // Root reads any file: a sysfs attribute that is write-only refuses even
    // root a read, with EACCES.
    target = "/sys/bus/pci/rescan";
    if (!fs::exists(target) || std::ifstream(target))
      GTEST_SKIP() << "running as root and no write-only sysfs file to stand for an unreadable workflow";
  }
  const auto r = flowd_cmd(dir, {"validate", target.string()});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, target.string() + ": cannot open " + target.string() + ": Permission denied")) << r.err;
}

TEST(CliInput, WorkersThatNeverComeFailTheRunWithExit3) {
  const auto dir = scratch();
  write(dir / "wf.json", small);
  const auto r = flowd_cmd(dir, {"wf.json", "--listen", "tcp://127.0.0.1:*", "--expect", "2", "--wait-workers", "1"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "gave up waiting for workers after 1 s (--wait-workers): only 0 of 2 workers")) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.txt"));
  // A bad combination of options stays a bad command line.
  EXPECT_EQ(flowd_cmd(dir, {"wf.json", "--listen", "tcp://127.0.0.1:*"}).code, 1);
}

TEST(CliInput, AWorkerWhoseCoordinatorNeverAnswersExits3) {
  const auto dir = scratch();
  // The discard port: nobody listens there on a test machine.
  const auto r = flowd_cmd(dir, {"worker", "--connect", "tcp://127.0.0.1:9", "--join-timeout", "1"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "tcp://127.0.0.1:9")) << r.err;
}

TEST(CliInput, AnAuthorisedKeysFileWithNoKeysIsRefusedWithExit2) {
  const auto dir = scratch();
  write(dir / "wf.json", small);
  ASSERT_EQ(flowd_cmd(dir, {"keygen", "coordinator", "--out", "keys"}).code, 0);
  write(dir / "authorised_keys", "# nobody yet\n");
  const auto r =
      flowd_cmd(dir, {"wf.json", "--listen", "tcp://127.0.0.1:*", "--expect", "1", "--key", "keys/coordinator.key",
                      "--authorised-keys", "authorised_keys", "--wait-workers", "5"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "authorised keys file authorised_keys lists no keys")) << r.err;
}

// What a run leaves in its output folders when things go wrong: a full disk
// (a file-size limit on the flowd process stands in for it: writes past the
// limit fail with EFBIG, as they would with ENOSPC), a sink that fails after
// another one finished, a folder that holds other files or an earlier run's
// outputs, temporaries of killed runs, and a refused journalled run.
#include <chrono>
#include <fstream>
#include <signal.h>
#include <thread>
#include <unistd.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "support/cli.hpp"
#include "support/helpers.hpp"
#include "util/temp_files.hpp"

namespace fs = std::filesystem;
using flowd::test::files_under;
using flowd::test::temporaries;
using flowd::test::write;
using flowd::test::contains;
using flowd::test::flowd_cmd;
using flowd::test::Result;
using flowd::test::scratch;
using flowd::test::slurp;

namespace {

// flowd in `cwd` with no file larger than `max_file_bytes` (SIGXFSZ ignored,
// so a write past the limit fails with EFBIG like one on a full disk). The
// log goes to a folder of its own, outside the limit's way.
Result flowd_limited(const fs::path& cwd, std::vector<std::string> args, rlim_t max_file_bytes) {
  const fs::path log = cwd / "log";
  fs::create_directories(log);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::setenv("FLOWD_PLUGIN_PATH", flowd::test::test_plugins("testops").c_str(), 1);
    ::setenv("FLOWD_CACHE_DIR", (cwd / ".cache").c_str(), 1);
    if (!::freopen((log / "stdout.txt").c_str(), "w", stdout) || !::freopen((log / "stderr.txt").c_str(), "w", stderr))
      ::_exit(126);
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{max_file_bytes, RLIM_INFINITY};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::vector<char*> argv{const_cast<char*>(FLOWD_BINARY)};
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(FLOWD_BINARY, argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(log / "stdout.txt");
  r.err = slurp(log / "stderr.txt");
  return r;
}

std::string images_to(const std::string& sink) {
  return R"({"version": 1, "stages": {
    "src": {"op": "io.read_images", "params": {"path": "synthetic:blobs?width=384&height=384&count=3&seed=2"}},
    "out": )" +
         sink + R"(}})";
}

const std::vector<std::string> plain = {"--no-progress", "--no-perf-model", "--gpu", "none"};

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST(FullDisk, AnHdf5SinkEndsWithExit3OneMessageAndNoFile) {
  const auto dir = scratch();
  write(
      dir / "wf.json",
      images_to(
          R"({"op": "io.write_hdf5", "inputs": {"data": "src.image"}, "params": {"path": "out/images.h5", "compression": 0}})"));
  const auto r = flowd_limited(dir, std::vector<std::string>{"wf.json", "-j", "1"} + plain, 200 * 1024);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "'out/images.h5'")) << r.err;
  EXPECT_TRUE(contains(r.err, "File too large")) << r.err;
  EXPECT_FALSE(contains(r.err, "HDF5-DIAG")) << r.err;        // no raw error stack
  EXPECT_FALSE(contains(r.err, "file descriptor")) << r.err;  // no driver internals
  EXPECT_EQ(files_under(dir / "out"), std::vector<std::string>{});
}

// The table path writes the file when the run commits: the close of a file
// that could not be flushed used to leave HDF5 to crash at exit (139).
TEST(FullDisk, AFullDiskWhileCommittingATableEndsWithExit3NotACrash) {
  const auto dir = scratch();
  write(dir / "wf.json", R"({"version": 1, "stages": {
    "tiles": {"op": "io.read_tiles", "params": {"path": "synthetic:hne?width=512&height=512&count=2&seed=1", "tile": 256, "halo": 32, "mode": "color"}},
    "segment": {"op": "nuclei.segment", "inputs": {"image": "tiles.tile"}},
    "features": {"op": "nuclei.features", "inputs": {"image": "tiles.tile", "labels": "segment.labels"}},
    "table": {"op": "io.write_hdf5", "inputs": {"data": "features.features"}, "params": {"path": "out/features.h5", "dataset": "nuclei"}}
  }})");
  const auto r = flowd_limited(dir, std::vector<std::string>{"wf.json", "-j", "2"} + plain, 16 * 1024);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "writing 'out/features.h5': ")) << r.err;
  EXPECT_TRUE(contains(r.err, "File too large")) << r.err;
  EXPECT_FALSE(contains(r.err, "HDF5-DIAG")) << r.err;
  EXPECT_EQ(files_under(dir / "out"), std::vector<std::string>{});
}

TEST(FullDisk, AnImageSinkEndsWithExit3AndNoFile) {
  const auto dir = scratch();
  write(dir / "wf.json",
        images_to(R"({"op": "io.write_image", "inputs": {"image": "src.image"}, "params": {"dir": "out/img"}})"));
  const auto r = flowd_limited(dir, std::vector<std::string>{"wf.json", "-j", "1"} + plain, 64 * 1024);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "writing 'out/img/blobs-0.png': File too large")) << r.err;
  EXPECT_EQ(files_under(dir / "out"), std::vector<std::string>{});
}

// Two sinks: the first completes its file, the second fails: neither file
// appears, and what an earlier run wrote there stays as it was.
TEST(Outputs, EverySinkOfARunCommitsOrNone) {
  const auto dir = scratch();
  auto wf = [](bool fail) {
    return std::string(R"({"version": 1, "stages": {
      "src": {"op": "test.count", "params": {"count": 5}},
      "a": {"op": "test.record", "inputs": {"in": "src.out"}, "params": {"path": "out/a.txt"}},
      "b": {"op": "test.record", "inputs": {"in": "src.out"}, "params": {"path": "out/b.txt", "fail_commit": )") +
           (fail ? "true" : "false") + "}}}}";
  };
  write(dir / "ok.json", wf(false));
  ASSERT_EQ(flowd_cmd(dir, std::vector<std::string>{"ok.json"} + plain).code, 0);
  const std::string a_before = slurp(dir / "out" / "a.txt");
  write(dir / "out" / "a.txt", a_before + "marker of the earlier run\n");  // still flowd's file (same name)
  write(dir / "fail.json", wf(true));
  const auto r = flowd_cmd(dir, std::vector<std::string>{"fail.json", "--set", "src.count=7"} + plain);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "stage 'b' could not commit its output: commit refused (asked to fail)")) << r.err;
  EXPECT_TRUE(contains(r.err, "no output was written")) << r.err;
  EXPECT_EQ(slurp(dir / "out" / "a.txt"), a_before + "marker of the earlier run\n");
  EXPECT_EQ(files_under(dir / "out"), (std::vector<std::string>{".flowd-manifest.json", "a.txt", "b.txt"}));
}

TEST(Outputs, AFolderWithFilesFlowdDidNotWriteIsRefusedUnlessOverwrite) {
  const auto dir = scratch();
  write(dir / "out" / "img" / "holiday.png", "not flowd's");
  write(dir / "wf.json",
        images_to(R"({"op": "io.write_image", "inputs": {"image": "src.image"}, "params": {"dir": "out/img"}})"));
  const auto refused = flowd_cmd(dir, std::vector<std::string>{"wf.json"} + plain);
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_TRUE(contains(refused.err, "1 file(s) that no earlier flowd run wrote there ('out/img/holiday.png')"))
      << refused.err;
  EXPECT_TRUE(contains(refused.err, "--overwrite")) << refused.err;
  EXPECT_EQ(files_under(dir / "out"), std::vector<std::string>{"img/holiday.png"});

  const auto forced = flowd_cmd(dir, std::vector<std::string>{"wf.json", "--overwrite"} + plain);
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_TRUE(contains(forced.err, "--overwrite: the outputs hold 1 file(s)")) << forced.err;
  EXPECT_EQ(files_under(dir / "out" / "img"), (std::vector<std::string>{".flowd-manifest.json", "blobs-0.png",
                                                                        "blobs-1.png", "blobs-2.png", "holiday.png"}));
  // flowd's own outputs, listed in the manifest, never need --overwrite.
  fs::remove(dir / "out" / "img" / "holiday.png");
  const auto again = flowd_cmd(dir, std::vector<std::string>{"wf.json"} + plain);
  EXPECT_EQ(again.code, 0) << again.err;
}

// Issue 38: the guard held for sinks that fill a folder but not for those
// that write single files (cvtree, PRNU, the default workflow): their
// outputs went in beside a stranger's file. One rule now: the folder that
// gets the manifest, with its sub-folders. A --journal folder kept inside it
// is not a stranger.
TEST(Outputs, AFolderOfSingleFileOutputsWithAFileFlowdDidNotWriteIsRefusedToo) {
  const auto dir = scratch();
  write(dir / "out" / "holiday.png", "not flowd's");
  write(dir / "wf.json", R"({"version": 1, "stages": {
      "src": {"op": "test.count", "params": {"count": 3}},
      "a": {"op": "test.record", "inputs": {"in": "src.out"}, "params": {"path": "out/a.txt"}}}})");
  const auto refused = flowd_cmd(dir, std::vector<std::string>{"wf.json"} + plain);
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_TRUE(contains(refused.err, "1 file(s) that no earlier flowd run wrote there ('out/holiday.png')"))
      << refused.err;
  EXPECT_EQ(files_under(dir / "out"), std::vector<std::string>{"holiday.png"});
  // In a sub-folder of the output folder as well.
  fs::rename(dir / "out" / "holiday.png", dir / "holiday.png");
  write(dir / "out" / "old" / "notes.txt", "mine");
  const auto below = flowd_cmd(dir, std::vector<std::string>{"wf.json"} + plain);
  EXPECT_EQ(below.code, 2) << below.err;
  EXPECT_TRUE(contains(below.err, "('out/old/notes.txt')")) << below.err;
  fs::remove_all(dir / "out" / "old");
  // A journal inside the output folder: not refused, and resumable.
  const auto journalled = flowd_cmd(dir, std::vector<std::string>{"wf.json", "--journal", "out/journal"} + plain);
  EXPECT_EQ(journalled.code, 0) << journalled.err;
  const auto resumed =
      flowd_cmd(dir, std::vector<std::string>{"wf.json", "--journal", "out/journal", "--resume"} + plain);
  EXPECT_EQ(resumed.code, 0) << resumed.err;
}

// A run on other inputs into the same folders replaces the earlier run's
// outputs as a set: no stale image beside the new table.
TEST(Outputs, ARunReplacesTheEarlierRunsOutputsAsASet) {
  const auto dir = scratch();
  write(dir / "wf.json",
        R"({"version": 1, "vars": {"input": "synthetic:blobs?width=64&height=64&count=3&seed=2"}, "stages": {
    "src": {"op": "io.read_images", "params": {"path": "${input}"}},
    "img": {"op": "io.write_image", "inputs": {"image": "src.image"}, "params": {"dir": "out/labels"}},
    "h5": {"op": "io.write_hdf5", "inputs": {"data": "src.image"}, "params": {"path": "out/images.h5"}}
  }})");
  ASSERT_EQ(flowd_cmd(dir, std::vector<std::string>{"wf.json"} + plain).code, 0);
  EXPECT_EQ(files_under(dir / "out"),
            (std::vector<std::string>{".flowd-manifest.json", "images.h5", "labels/blobs-0.png", "labels/blobs-1.png",
                                      "labels/blobs-2.png"}));
  const auto again = flowd_cmd(
      dir, std::vector<std::string>{"wf.json", "--set", "input=synthetic:hne?width=64&height=64&count=1"} + plain);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(files_under(dir / "out"),
            (std::vector<std::string>{".flowd-manifest.json", "images.h5", "labels/hne-0.png"}));
  const std::string manifest = slurp(dir / "out" / ".flowd-manifest.json");
  EXPECT_TRUE(contains(manifest, "\"labels/hne-0.png\"")) << manifest;
  EXPECT_FALSE(contains(manifest, "blobs")) << manifest;
}

TEST(Outputs, TemporariesOfRunsThatAreGoneAreRemovedThoseOfLiveOnesKept) {
  const auto dir = scratch();
  flowd::TempOwner gone = flowd::TempOwner::self();
  gone.pid = ::fork();
  if (gone.pid == 0) ::_exit(0);
  ::waitpid(gone.pid, nullptr, 0);
  const fs::path stale = flowd::owned_temp_name(dir / "out" / "img" / "blobs-0.png", flowd::TempKind::work, gone);
  const fs::path live = flowd::owned_temp_name(dir / "out" / "img" / "blobs-1.png");  // this test process: alive
  write(stale, std::string(1000, 'x'));
  write(live, "y");
  write(dir / "wf.json",
        images_to(R"({"op": "io.write_image", "inputs": {"image": "src.image"}, "params": {"dir": "out/img"}})"));
  const auto r = flowd_cmd(dir, std::vector<std::string>{"wf.json"} + plain);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(contains(r.err, "removed 1 temporary file(s) left in 'out/img' by runs that ended without cleaning up"))
      << r.err;
}

// A run killed with SIGKILL leaves temporaries; resuming it (same folder)
// removes them, and the resumed run's outputs are complete.
TEST(Outputs, AResumedRunRemovesTheKilledRunsTemporaries) {
  const auto dir = scratch();
  write(dir / "wf.json", R"({"version": 1, "stages": {
    "src": {"op": "io.read_images", "params": {"path": "synthetic:blobs?width=64&height=64&count=30&seed=3"}},
    "slow": {"op": "test.step", "inputs": {"in": "src.image"}, "params": {"sleep_ms": 60}},
    "img": {"op": "io.write_image", "inputs": {"image": "slow.out"}, "params": {"dir": "out/img"}}
  }})");
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    ::setenv("FLOWD_PLUGIN_PATH", flowd::test::test_plugins("testops").c_str(), 1);
    ::setenv("FLOWD_CACHE_DIR", (dir / ".cache").c_str(), 1);
    if (!::freopen((dir / "killed.txt").c_str(), "w", stderr)) ::_exit(126);
    ::execl(FLOWD_BINARY, FLOWD_BINARY, "wf.json", "-j", "1", "--journal", "journal", "--no-progress",
            "--no-perf-model", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Killed once a few images are staged (bounded wait: 60 s).
  for (int i = 0; i < 6000 && temporaries(dir / "out").size() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before it was killed:\n" << slurp(dir / "killed.txt");
  ASSERT_GE(temporaries(dir / "out").size(), 3u);

  const auto r =
      flowd_cmd(dir, std::vector<std::string>{"wf.json", "-j", "2", "--journal", "journal", "--resume"} + plain);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(temporaries(dir / "out"), std::vector<std::string>{});
  EXPECT_EQ(files_under(dir / "out" / "img").size(), 31u);  // 30 images and the manifest
}

TEST(Journal, ARefusedJournalledRunCreatesNoJournal) {
  const auto dir = scratch();
  write(dir / "wf.json", R"({"version": 1, "stages": {
    "src": {"op": "test.count", "params": {"count": 4}},
    "sum": {"op": "test.sum", "inputs": {"in": "src.out"}},
    "rec": {"op": "test.record", "inputs": {"in": "sum.out"}, "params": {"path": "out/sum.txt"}}
  }})");
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto r = flowd_cmd(dir, std::vector<std::string>{"wf.json", "--journal", "journal"} + plain);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "stage 'sum' is a reduce")) << r.err;
    EXPECT_FALSE(contains(r.err, "already exists")) << r.err;
    EXPECT_FALSE(fs::exists(dir / "journal"));
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
}

// The run's output files: owner-tagged temporaries and stale ones, the
// two-phase commit across sinks (with injected rename failures), manifests
// and foreign files.
#include <cerrno>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

#include <sys/wait.h>

#include <gtest/gtest.h>

#include "runtime/output_manifest.hpp"
#include "runtime/output_set.hpp"
#include "support/helpers.hpp"
#include "util/durable.hpp"
#include "util/fs.hpp"
#include "util/temp_files.hpp"

using namespace flowd;
namespace fs = std::filesystem;

namespace {

// A pid that belonged to a process which has exited (and been reaped).
pid_t dead_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  int status = 0;
  ::waitpid(p, &status, 0);
  return p;
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string get(const fs::path& p) { return read_file(p); }

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (!e.is_directory()) out.push_back(e.path().lexically_relative(dir).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

bool has_temp(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (is_flowd_temp(e.path().filename().string())) return true;
  return false;
}

std::span<const std::uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

runtime::OutputSet::Options with_provenance() {
  runtime::OutputSet::Options o;
  o.provenance = {{"workflow_sha256", "abc"}};
  return o;
}

// Two sinks, one file each (a.txt, b.txt in `dir`), written and ready to
// commit.
std::unique_ptr<runtime::OutputSet> two_files(const fs::path& dir, runtime::OutputSet::Options o) {
  auto out = std::make_unique<runtime::OutputSet>(std::move(o), test::quiet_log());
  out->declare_file("first", dir / "a.txt");
  out->declare_file("second", dir / "b.txt");
  out->check_existing();
  out->write("first", dir / "a.txt", bytes("new a"));
  out->write("second", dir / "b.txt", bytes("new b"));
  return out;
}

// The two files committed with every rename going through `rename`. Returns
// the commit's error message.
template <class E>
std::string commit_two_files(const fs::path& dir, runtime::OutputSet::Rename rename) {
  runtime::OutputSet::Options o = with_provenance();
  o.rename = std::move(rename);
  const auto out = two_files(dir, std::move(o));
  try {
    out->commit();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "the commit should have failed";
  return "";
}

std::error_code plain_rename(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  return ec;
}

}  // namespace

TEST(TempFiles, NameCarriesItsOwner) {
  const TempOwner me = TempOwner::self();
  const fs::path t = owned_temp_name("out/features.h5");
  EXPECT_EQ(t.parent_path(), fs::path("out"));
  EXPECT_EQ(t.extension(), ".h5");
  const auto owner = temp_owner(t.filename().string());
  ASSERT_TRUE(owner) << t;
  EXPECT_EQ(*owner, me);
  EXPECT_TRUE(is_flowd_temp(t.filename().string()));
  EXPECT_FALSE(temp_owner("features.h5"));
  EXPECT_FALSE(temp_owner(".features.flowd-tmp-123-4f2a.h5"));  // an earlier, unowned form
  EXPECT_TRUE(is_flowd_temp(".features.flowd-tmp-123-4f2a.h5"));
}

TEST(TempFiles, StaleTemporariesGoThoseOfLiveOwnersStay) {
  const auto dir = test::scratch();
  const TempOwner me = TempOwner::self();
  TempOwner dead = me;
  dead.pid = dead_pid();
  TempOwner reused = me;  // our pid, but a process that started at another time
  reused.start = me.start + 12345;
  TempOwner elsewhere = dead;
  elsewhere.host = "another_host";
  TempOwner parent = me;
  parent.pid = ::getppid();
  parent.start = 0;  // unknown start: the pid alone decides

  const fs::path stale = owned_temp_name(dir / "a.png", TempKind::work, dead);
  const fs::path stale_old = owned_temp_name(dir / "sub" / "b.png", TempKind::previous, dead);
  const fs::path stale_reused = owned_temp_name(dir / "c.png", TempKind::work, reused);
  const fs::path mine = owned_temp_name(dir / "d.png", TempKind::work, me);
  const fs::path live = owned_temp_name(dir / "e.png", TempKind::work, parent);
  const fs::path remote = owned_temp_name(dir / "f.png", TempKind::work, elsewhere);
  for (const auto& p : {stale, stale_old, stale_reused, mine, live, remote})
    put(p, "x");
  put(dir / "a.png", "an output");

  EXPECT_FALSE(owner_alive(dead));
  EXPECT_FALSE(owner_alive(reused));
  EXPECT_TRUE(owner_alive(me));
  EXPECT_TRUE(owner_alive(elsewhere));

  const fs::path stale_sub = owned_temp_name(dir / "sub" / "g.png", TempKind::work, dead);
  put(stale_sub, "x");

  auto removed = remove_stale_temps(dir, /*recursive=*/false);
  EXPECT_EQ(removed.size(), 2u);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(stale_reused));
  EXPECT_TRUE(fs::exists(stale_sub));  // in a sub-folder: not without recursive
  removed = remove_stale_temps(dir, /*recursive=*/true);
  EXPECT_EQ(removed.size(), 1u);
  EXPECT_FALSE(fs::exists(stale_sub));
  // An earlier output set aside by a commit that never finished: reported, never removed.
  EXPECT_TRUE(fs::exists(stale_old));
  EXPECT_EQ(stale_temps(dir, true, TempKind::previous), std::vector<fs::path>{stale_old});
  for (const auto& p : {mine, live, remote, dir / "a.png"})
    EXPECT_TRUE(fs::exists(p)) << p;
}

TEST(OutputSet, CommitsEverySinksFilesWithAManifest) {
  const auto dir = test::scratch();
  {
    runtime::OutputSet out(with_provenance(), test::quiet_log());
    out.declare_folder("images", dir / "out" / "labels");
    out.declare_file("table", dir / "out" / "features.h5");
    out.check_existing();
    out.write("images", dir / "out" / "labels" / "a.png", bytes("A"));
    out.write("images", dir / "out" / "labels" / "x" / "b.png", bytes("B"));
    const fs::path t = out.stage("table", dir / "out" / "features.h5");
    put(t, "H5");
    EXPECT_FALSE(fs::exists(dir / "out" / "features.h5"));  // nothing in place before the commit
    out.commit();
  }
  EXPECT_EQ(names_in(dir / "out"),
            (std::vector<std::string>{".flowd-manifest.json", "features.h5", "labels/a.png", "labels/x/b.png"}));
  EXPECT_EQ(get(dir / "out" / "features.h5"), "H5");
  const auto m = runtime::OutputManifest::read(dir / "out");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->files.size(), 3u);
}

TEST(OutputSet, AFailedRenameUndoesTheWholeCommit) {
  const auto dir = test::scratch();
  put(dir / "a.txt", "old a");
  put(dir / "b.txt", "old b");
  put(dir / "c.txt", "only the earlier run wrote this");
  put(dir / ".flowd-manifest.json", R"({"flowd_manifest": 1, "files": ["a.txt", "b.txt", "c.txt"]})");
  int renames = 0;
  // The second sink's file fails to go into place, after the first's did.
  const std::string m = commit_two_files<Error>(dir, [&](const fs::path& from, const fs::path& to) {
    if (to == (dir / "b.txt").lexically_normal() && from.filename().string().find(".flowd-tmp-") != std::string::npos)
      return std::make_error_code(std::errc::no_space_on_device);
    ++renames;
    return plain_rename(from, to);
  });
  EXPECT_NE(m.find("b.txt"), std::string::npos) << m;
  EXPECT_NE(m.find("No space left on device"), std::string::npos) << m;
  EXPECT_NE(m.find("nothing was written"), std::string::npos) << m;
  EXPECT_GE(renames, 3);  // a.txt aside, new a.txt in, b.txt aside: then undone
  EXPECT_EQ(get(dir / "a.txt"), "old a");
  EXPECT_EQ(get(dir / "b.txt"), "old b");
  EXPECT_EQ(get(dir / "c.txt"), "only the earlier run wrote this");
  EXPECT_FALSE(has_temp(dir));
}

TEST(OutputSet, EveryFileIsFlushedInOneCallBeforeAnyTakesItsPlace) {
  const auto dir = test::scratch();
  put(dir / "a.txt", "old a");
  put(dir / ".flowd-manifest.json", R"({"flowd_manifest": 1, "files": ["a.txt"]})");
  runtime::OutputSet::Options o = with_provenance();
  std::vector<std::vector<fs::path>> calls;
  o.sync = [&](std::span<const fs::path> files) -> std::optional<SyncFailure> {
    calls.emplace_back(files.begin(), files.end());
    EXPECT_EQ(get(dir / "a.txt"), "old a");  // nothing renamed yet
    EXPECT_FALSE(fs::exists(dir / "b.txt"));
    return sync_files(files);
  };
  const auto out = two_files(dir, std::move(o));
  EXPECT_TRUE(calls.empty());  // writing a file does not flush it: the commit flushes them all
  out->commit();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].size(), 3u);  // a.txt, b.txt and the manifest
  for (const auto& f : calls[0]) {
    EXPECT_TRUE(is_flowd_temp(f.filename().string())) << f;
    EXPECT_FALSE(fs::exists(f)) << f;  // each renamed into place since
  }
  EXPECT_EQ(get(dir / "a.txt"), "new a");
  EXPECT_EQ(get(dir / "b.txt"), "new b");
}

TEST(OutputSet, AFileThatCannotBeFlushedFailsTheCommitNamingIt) {
  const auto dir = test::scratch();
  put(dir / "a.txt", "old a");
  put(dir / ".flowd-manifest.json", R"({"flowd_manifest": 1, "files": ["a.txt"]})");
  runtime::OutputSet::Options o = with_provenance();
  o.sync = [&](std::span<const fs::path> files) -> std::optional<SyncFailure> {
    for (const auto& f : files)
      if (f.filename().string().starts_with(".b.")) return SyncFailure{f, EIO};
    return std::nullopt;
  };
  const auto out = two_files(dir, std::move(o));
  try {
    out->commit();
    ADD_FAILURE() << "the commit should have failed";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "writing '" + (dir / "b.txt").string() + "': Input/output error; nothing was written");
  }
  EXPECT_EQ(get(dir / "a.txt"), "old a");
  EXPECT_FALSE(fs::exists(dir / "b.txt"));
  EXPECT_FALSE(has_temp(dir));
}

// prepare() is the first half of the commit, for runs whose sinks write on
// several nodes: every file flushed and nothing renamed; commit() then only
// renames. A prepare that fails leaves nothing, as a failed commit does.
TEST(OutputSet, PrepareFlushesEverythingAndRenamesNothingUntilTheCommit) {
  const auto dir = test::scratch();
  put(dir / "a.txt", "old a");
  put(dir / ".flowd-manifest.json", R"({"flowd_manifest": 1, "files": ["a.txt"]})");
  runtime::OutputSet::Options o = with_provenance();
  int flushes = 0;
  o.sync = [&](std::span<const fs::path> files) -> std::optional<SyncFailure> {
    ++flushes;
    return sync_files(files);
  };
  const auto out = two_files(dir, std::move(o));
  out->prepare();
  EXPECT_EQ(flushes, 1);
  EXPECT_EQ(get(dir / "a.txt"), "old a");
  EXPECT_FALSE(fs::exists(dir / "b.txt"));
  EXPECT_TRUE(has_temp(dir));
  out->prepare();  // once is enough
  out->commit();
  EXPECT_EQ(flushes, 1);
  EXPECT_EQ(get(dir / "a.txt"), "new a");
  EXPECT_EQ(get(dir / "b.txt"), "new b");
  EXPECT_FALSE(has_temp(dir));

  const auto dir2 = test::scratch();
  runtime::OutputSet::Options failing = with_provenance();
  failing.sync = [](std::span<const fs::path> files) -> std::optional<SyncFailure> {
    return SyncFailure{files.front(), ENOSPC};
  };
  const auto out2 = two_files(dir2, std::move(failing));
  EXPECT_THROW(out2->prepare(), Error);
  EXPECT_FALSE(has_temp(dir2));
  EXPECT_FALSE(fs::exists(dir2 / "a.txt"));
}

TEST(SyncFiles, FlushesFilesOfOneOrMoreFilesystemsAndNamesAMissingOne) {
  const auto dir = test::scratch();
  std::vector<fs::path> files;
  for (const char* name : {"a.png", "b.png", "sub/c.h5"}) {
    put(dir / name, std::string(100000, 'x'));
    files.push_back(dir / name);
  }
  // A second filesystem where there is one (tmpfs), so the files come in groups.
  if (fs::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0) {
    const fs::path shm = fs::path("/dev/shm") / ("flowd-sync-" + std::to_string(::getpid()));
    put(shm, "y");
    files.push_back(shm);
  }
  EXPECT_FALSE(sync_files(files));
  files.insert(files.begin() + 1, dir / "gone.png");
  const auto f = sync_files(files);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->file, dir / "gone.png");
  EXPECT_EQ(f->error, ENOENT);
  if (files.back().string().starts_with("/dev/shm/")) fs::remove(files.back());
  sync_dirs(std::vector<fs::path>{dir, dir / "sub", dir / "gone"});  // best effort: no throw for a missing folder
}

TEST(OutputSet, ARunReplacesThePreviousRunsFilesAsASet) {
  const auto dir = test::scratch();
  auto run = [&](const std::vector<std::string>& files) {
    runtime::OutputSet out(with_provenance(), test::quiet_log());
    out.declare_folder("images", dir / "labels");
    out.declare_file("table", dir / "features.h5");
    out.check_existing();
    for (const auto& f : files)
      out.write("images", dir / "labels" / f, bytes(f));
    out.write("table", dir / "features.h5", bytes("rows for " + std::to_string(files.size())));
    out.commit();
  };
  run({"hne-0.png", "hne-1.png", "deep/hne-2.png"});
  run({"other-0.png"});
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{".flowd-manifest.json", "features.h5", "labels/other-0.png"}));
  EXPECT_FALSE(fs::exists(dir / "labels" / "deep"));  // emptied by the replacement: removed
  EXPECT_EQ(get(dir / "features.h5"), "rows for 1");
}

TEST(OutputSet, FilesFlowdDidNotWriteAreRefusedUnlessOverwrite) {
  const auto dir = test::scratch();
  put(dir / "labels" / "mine.png", "a user's file");
  put(dir / "features.h5", "a user's table");
  {
    runtime::OutputSet out(with_provenance(), test::quiet_log());
    out.declare_folder("images", dir / "labels");
    out.declare_file("table", dir / "features.h5");
    try {
      out.check_existing();
      FAIL() << "foreign files should be refused";
    } catch (const runtime::OutputsRefused& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("2 file(s) that no earlier flowd run wrote"), std::string::npos) << m;
      EXPECT_NE(m.find("--overwrite"), std::string::npos) << m;
    }
  }
  runtime::OutputSet::Options o = with_provenance();
  o.overwrite = true;
  runtime::OutputSet out(std::move(o), test::quiet_log());
  out.declare_folder("images", dir / "labels");
  out.declare_file("table", dir / "features.h5");
  out.check_existing();
  out.write("table", dir / "features.h5", bytes("flowd's table"));
  out.commit();
  EXPECT_EQ(get(dir / "features.h5"), "flowd's table");
  EXPECT_EQ(get(dir / "labels" / "mine.png"), "a user's file");  // never removed: flowd did not write it
}

TEST(OutputSet, AbortLeavesNothingAndStagingOutsideTheOutputsIsRefused) {
  const auto dir = test::scratch();
  {
    runtime::OutputSet out(with_provenance(), test::quiet_log());
    out.declare_folder("images", dir / "new" / "labels");
    out.check_existing();
    out.write("images", dir / "new" / "labels" / "a.png", bytes("A"));
    (void)out.scratch("images", dir / "new" / "labels" / "rows.h5");
    EXPECT_THROW(out.stage("images", dir / "elsewhere.png"), Error);
    EXPECT_THROW(out.stage("other", dir / "new" / "labels" / "a.png"), Error);  // two stages, one file
    out.abort();
  }
  EXPECT_EQ(names_in(dir), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(dir / "new"));
}

TEST(OutputSet, WhenUndoingFailsTooTheMessageSaysWhatIsWhere) {
  const auto dir = test::scratch();
  put(dir / "a.txt", "old a");
  put(dir / ".flowd-manifest.json", R"({"flowd_manifest": 1, "files": ["a.txt"]})");
  const fs::path a = (dir / "a.txt").lexically_normal(), b = (dir / "b.txt").lexically_normal();
  // b never lands; the earlier a cannot be moved back.
  const std::string m = commit_two_files<runtime::OutputsMixed>(dir, [&](const fs::path& from, const fs::path& to) {
    if (to == b || (to == a && from.filename().string().find(".flowd-old-") != std::string::npos))
      return std::make_error_code(std::errc::io_error);
    return plain_rename(from, to);
  });
  EXPECT_NE(m.find("cannot move the finished '" + b.string() + "' into place"), std::string::npos) << m;
  EXPECT_NE(m.find("outputs are mixed"), std::string::npos) << m;
  EXPECT_NE(m.find("the earlier '" + a.string() + "' is at '"), std::string::npos) << m;
  EXPECT_NE(m.find(".a.flowd-old-"), std::string::npos) << m;
  EXPECT_EQ(get(dir / "a.txt"), "new a");  // as the message says
  bool kept = false;                       // the earlier a.txt, where the message says
  for (const auto& e : fs::directory_iterator(dir))
    kept |= e.path().filename().string().starts_with(".a.flowd-old-");
  EXPECT_TRUE(kept);
  EXPECT_FALSE(fs::exists(dir / "b.txt"));
}

TEST(OutputSet, AManifestThatIsNotFlowdsIsRefusedNamingIt) {
  const auto dir = test::scratch();
  put(dir / "labels" / ".flowd-manifest.json", "{ not json");
  runtime::OutputSet out(with_provenance(), test::quiet_log());
  out.declare_folder("images", dir / "labels");
  try {
    out.check_existing();
    FAIL() << "an unreadable manifest should be refused";
  } catch (const runtime::OutputsRefused& e) {
    const std::string m = e.what();
    EXPECT_NE(
        m.find("the output manifest '" + (dir / "labels" / ".flowd-manifest.json").string() + "' is not valid JSON"),
        std::string::npos)
        << m;
  }
}

// flowd run --journal DIR / --resume through the binary: a run killed with
// SIGKILL part-way writes nothing, and resuming it skips what it finished
// and writes what one uninterrupted process writes; with worker processes
// and in one process. Refusals: an existing journal without --resume,
// another workflow's journal, --resume without --journal.
#include <regex>

#include <gtest/gtest.h>

#include "flowd_process.hpp"

using namespace flowd;
using test::expected_output;
using test::pipeline;
using test::Process;
using test::write;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> quiet = {"--gpu", "none", "--no-progress", "--no-perf-model"};

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Gone, or a zombie waiting for whoever inherited it.
bool exited(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return true;
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
}

// Source items the journal records as finished.
int finished_records(const fs::path& journal_dir) {
  std::ifstream in(journal_dir / "journal.log");
  int n = 0;
  for (std::string line; std::getline(in, line);)
    if (line.find(" finished:src ") != std::string::npos) ++n;
  return n;
}

std::uint64_t skipped_in(const std::string& log) {
  static const std::regex re("resuming: ([0-9]+) source items finished by earlier runs were skipped");
  std::smatch m;
  return std::regex_search(log, m, re) ? std::stoull(m[1]) : 0;
}

// Starts a journalled run, kills it with SIGKILL once it has finished a few
// source items (and before it could finish all), then resumes it: the
// resumed run skips what the killed one finished and writes what one
// uninterrupted process writes.
void kill_then_resume(const std::vector<std::string>& how) {
  constexpr int items = 40;
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(items, 50));
  const std::string want = expected_output(dir, wf);
  ASSERT_FALSE(want.empty());
  const fs::path out = dir / "resumed.txt", journal = dir / "journal";
  const std::vector<std::string> args =
      std::vector<std::string>{wf.string(), "--set", "output=" + out.string(), "--journal", journal.string()} + how + quiet;

  std::vector<pid_t> workers;
  {
    Process run(dir, std::vector<std::string>{"run"} + args);
    for (int i = 0; i < 6000 && run.poll() < 0 && finished_records(journal) < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      for (const pid_t c : test::children_of(run.pid()))
        if (std::find(workers.begin(), workers.end(), c) == workers.end()) workers.push_back(c);
    }
    ASSERT_EQ(run.kill_and_wait(), 128 + SIGKILL) << "the run ended before it was killed:\n" << run.err();
  }
  const int finished_before = finished_records(journal);
  ASSERT_GE(finished_before, 3);
  ASSERT_LT(finished_before, items) << "killed too late to test anything";
  EXPECT_FALSE(fs::exists(out)) << "a killed run commits nothing";
  // Its workers notice the coordinator is gone and stop.
  for (const pid_t w : workers) {
    for (int i = 0; i < 6000 && !exited(w); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(exited(w)) << "worker " << w << " outlived its coordinator";
    if (!exited(w)) ::kill(w, SIGKILL);
  }

  // Without --resume the journal is refused, and left as it is.
  const std::string journal_text = test::slurp(journal / "journal.log");
  const auto refused = test::flowd_cmd(dir, args);
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("use --resume to continue it, or remove " + journal.string()), std::string::npos)
      << refused.err;
  EXPECT_EQ(test::slurp(journal / "journal.log"), journal_text);

  const auto resumed = test::flowd_cmd(dir, args + std::vector<std::string>{"--resume"});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(test::slurp(out), want);
  const std::uint64_t skipped = skipped_in(resumed.err);
  EXPECT_GE(skipped, static_cast<std::uint64_t>(finished_before)) << resumed.err;
  EXPECT_LT(skipped, static_cast<std::uint64_t>(items)) << resumed.err;

  // The journal stays after a successful run: resuming again computes
  // nothing and writes the same output from what the journal kept.
  fs::remove(out);
  const auto again = test::flowd_cmd(dir, args + std::vector<std::string>{"--resume"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(test::slurp(out), want);
  EXPECT_EQ(skipped_in(again.err), static_cast<std::uint64_t>(items)) << again.err;
}

}  // namespace

TEST(Resume, AKilledClusterRunResumesToWhatOneProcessWrites) {
  kill_then_resume({"--workers", "2", "--worker-cpus", "1"});
}

TEST(Resume, AKilledOneProcessRunResumesToWhatOneProcessWrites) { kill_then_resume({"--cpu", "2"}); }

TEST(Resume, RefusalsNameTheProblem) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(4, 0));
  const auto other = write(dir, "other.json", pipeline(5, 0));
  const fs::path journal = dir / "journal";
  const std::vector<std::string> opts =
      std::vector<std::string>{"--set", "output=" + (dir / "o.txt").string(), "--cpu", "1"} + quiet;

  const auto no_journal = test::flowd_cmd(dir, std::vector<std::string>{wf.string(), "--resume"} + opts);
  EXPECT_EQ(no_journal.code, 1) << no_journal.err;
  EXPECT_NE(no_journal.err.find("--resume needs --journal"), std::string::npos) << no_journal.err;

  const auto missing =
      test::flowd_cmd(dir, std::vector<std::string>{wf.string(), "--journal", journal.string(), "--resume"} + opts);
  EXPECT_EQ(missing.code, 2) << missing.err;
  EXPECT_NE(missing.err.find((journal / "journal.log").string() + "' does not exist"), std::string::npos)
      << missing.err;

  const auto first = test::flowd_cmd(dir, std::vector<std::string>{wf.string(), "--journal", journal.string()} + opts);
  ASSERT_EQ(first.code, 0) << first.err;
  const auto changed =
      test::flowd_cmd(dir, std::vector<std::string>{other.string(), "--journal", journal.string(), "--resume"} + opts);
  EXPECT_EQ(changed.code, 2) << changed.err;
  EXPECT_NE(changed.err.find((journal / "journal.log").string() + "' belongs to workflow"), std::string::npos)
      << changed.err;
}

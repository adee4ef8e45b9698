// Journal: records survive reopening, a torn last line is dropped with a
// warning, corruption before the end and another workflow's journal are
// refused with errors naming the file and line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "flowd/error.hpp"
#include "store/journal.hpp"
#include "fresh_path.hpp"

namespace {

namespace fs = std::filesystem;
using flowd::store::Journal;
using flowd::wire::ItemId;

fs::path journal_path(const std::string& name) { return flowd::store::test::fresh_path(name, ".journal"); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }

std::string error_of(const fs::path& p, const std::string& hash) {
  try {
    Journal::open(p, hash);
  } catch (const flowd::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Journal, AppendReopenDone) {
  const auto path = journal_path("basic");
  {
    Journal j = Journal::open(path, "sha-1");
    EXPECT_EQ(j.size(), 0u);
    EXPECT_TRUE(j.warnings().empty());
    j.record("segment", ItemId{"slide 3/tile/1", 0, 0}, "xxh64:abc");
    j.record("features", ItemId{"weird key%~\n\t", 2, -5}, "");
    EXPECT_TRUE(j.done("segment", ItemId{"slide 3/tile/1", 0, 0}));
    EXPECT_FALSE(j.done("features", ItemId{"slide 3/tile/1", 0, 0}));
  }
  Journal j = Journal::open(path, "sha-1");
  EXPECT_TRUE(j.warnings().empty());
  EXPECT_EQ(j.size(), 2u);
  EXPECT_TRUE(j.done("segment", ItemId{"slide 3/tile/1", 0, 0}));
  EXPECT_TRUE(j.done("features", ItemId{"weird key%~\n\t", 2, -5}));
  EXPECT_FALSE(j.done("features", ItemId{"weird key%~\n\t", 2, -4}));
  EXPECT_EQ(j.digest("segment", ItemId{"slide 3/tile/1", 0, 0}), "xxh64:abc");
  EXPECT_EQ(j.digest("features", ItemId{"weird key%~\n\t", 2, -5}), "");
  j.record("segment", ItemId{"slide 3/tile/1", 0, 0}, "xxh64:def");  // redone: the last record wins
  EXPECT_EQ(j.size(), 2u);
  EXPECT_EQ(j.digest("segment", ItemId{"slide 3/tile/1", 0, 0}), "xxh64:def");
  EXPECT_EQ(j.records().front().stage, "segment");
  // Header plus three records, one line each.
  const std::string text = slurp(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
}

TEST(Journal, TornLastLineIsDroppedWithAWarning) {
  const auto path = journal_path("torn");
  {
    Journal j = Journal::open(path, "h");
    j.record("s", ItemId{"a", 0, 0}, "d1");
    j.record("s", ItemId{"b", 0, 0}, "d2");
  }
  const std::string full = slurp(path);
  const std::string torn = Journal::format_line("done", "h", "s", ItemId{"c", 0, 0}, "d3");
  spit(path, full + torn.substr(0, torn.size() / 2));
  {
    Journal j = Journal::open(path, "h");
    ASSERT_EQ(j.warnings().size(), 1u);
    EXPECT_NE(j.warnings()[0].find("torn"), std::string::npos) << j.warnings()[0];
    EXPECT_EQ(j.size(), 2u);
    EXPECT_FALSE(j.done("s", ItemId{"c", 0, 0}));
    EXPECT_EQ(slurp(path), full);  // cut off, so the next record starts on a line of its own
    j.record("s", ItemId{"c", 0, 0}, "d3");
  }
  Journal j = Journal::open(path, "h");
  EXPECT_TRUE(j.warnings().empty());
  EXPECT_TRUE(j.done("s", ItemId{"c", 0, 0}));
}

TEST(Journal, DamagedLastCompleteLineIsDropped) {
  const auto path = journal_path("damaged-last");
  {
    Journal j = Journal::open(path, "h");
    j.record("s", ItemId{"a", 0, 0}, "d1");
    j.record("s", ItemId{"b", 0, 0}, "d2");
  }
  std::string text = slurp(path);
  text[text.size() - 5] = text[text.size() - 5] == '0' ? '1' : '0';  // in the checksum of the last record
  spit(path, text);
  Journal j = Journal::open(path, "h");
  ASSERT_EQ(j.warnings().size(), 1u);
  EXPECT_TRUE(j.done("s", ItemId{"a", 0, 0}));
  EXPECT_FALSE(j.done("s", ItemId{"b", 0, 0}));
}

TEST(Journal, CorruptLineInTheMiddleIsAnError) {
  const auto path = journal_path("corrupt");
  {
    Journal j = Journal::open(path, "h");
    j.record("s", ItemId{"a", 0, 0}, "d1");
    j.record("s", ItemId{"b", 0, 0}, "d2");
    j.record("s", ItemId{"c", 0, 0}, "d3");
  }
  std::string text = slurp(path);
  const auto line3 = text.find("done h s b ");
  ASSERT_NE(line3, std::string::npos);
  text[line3 + 9] = 'x';  // key "b" becomes "x": the checksum no longer matches
  spit(path, text);
  const std::string e = error_of(path, "h");
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("checksum"), std::string::npos) << e;
}

TEST(Journal, AnotherWorkflowIsRefused) {
  const auto path = journal_path("other");
  {
    Journal j = Journal::open(path, "workflow-A");
    j.record("s", ItemId{"a", 0, 0}, "d");
  }
  const std::string e = error_of(path, "workflow-B");
  EXPECT_NE(e.find("workflow-A"), std::string::npos) << e;
  EXPECT_NE(e.find("workflow-B"), std::string::npos) << e;
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
  EXPECT_TRUE(Journal::open(path, "workflow-A").done("s", ItemId{"a", 0, 0}));  // untouched
}

TEST(Journal, NotAJournalAndSecondWriterAreRefused) {
  const auto path = journal_path("foreign");
  spit(path, "hello world\nsecond line\n");
  EXPECT_NE(error_of(path, "h").find("line 1"), std::string::npos);

  const auto locked = journal_path("locked");
  Journal first = Journal::open(locked, "h");
  const std::string e = error_of(locked, "h");
  EXPECT_NE(e.find("in use"), std::string::npos) << e;
}

TEST(Journal, TornHeaderStartsAfresh) {
  const auto path = journal_path("torn-header");
  const std::string header = Journal::format_line("journal", "h", "", ItemId{}, "flowd-journal/1");
  spit(path, header.substr(0, 10));
  {
    Journal j = Journal::open(path, "h");
    EXPECT_EQ(j.warnings().size(), 1u);
    j.record("s", ItemId{"a", 0, 0}, "d");
  }
  Journal j = Journal::open(path, "h");
  EXPECT_TRUE(j.warnings().empty());
  EXPECT_TRUE(j.done("s", ItemId{"a", 0, 0}));
}

}  // namespace

// All-pairs stages in a run (runtime/allpairs_stage.cpp): the score table of
// a triangle, a triangle with its diagonal and a rectangle is exact for any
// worker count and cache size; a failed load or compare names the item and
// fails the run with nothing written; the workflow's all-pairs settings are
// checked with errors at their JSON pointers.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowd/keys.hpp"

#include "support/cli.hpp"

using namespace flowd;
using runtime::RunStatus;

namespace {

runtime::RunOptions workers(int n) {
  runtime::RunOptions o;
  o.cpu_workers = n;
  return o;
}

std::string pairs_workflow(int n, int m, const std::string& pairs, const std::string& settings, const std::string& out,
                     const std::string& params = "") {
  std::string w = R"({"version": 1, "stages": {
    "src": {"op": "test.count", "params": {"count": )" + std::to_string(n) + R"(}},)";
  if (m > 0) w += R"("src2": {"op": "test.count", "params": {"count": )" + std::to_string(m) + R"(, "prefix": "other"}},)";
  w += R"("ap": {"op": "test.pairs", "inputs": {"a": "src.out")" + std::string(m > 0 ? R"(, "b": "src2.out")" : "") +
       "}" + (pairs.empty() ? "" : R"(, "pairs": ")" + pairs + "\"") +
       (settings.empty() ? "" : R"(, "allpairs": )" + settings) + R"(, "params": {)" + params + R"(}},
    "sink": {"op": "test.record", "inputs": {"in": "ap.scores"}, "params": {"path": ")" + out + R"(", "rows": true}}
  }})";
  return w;
}

// The record sink's lines: "ap a,b,sum,product" for each pair, computed
// here. Items are in natural key order: item/0, item/1, ... (a, b indices).
std::vector<std::string> expected(int n, int m, bool diagonal) {
  std::vector<std::string> lines;
  const int cols = m > 0 ? m : n;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < cols; ++b) {
      if (m == 0 && (diagonal ? b < a : b <= a)) continue;
      const double x = 10.0 * a, y = 10.0 * b;
      std::ostringstream o;
      o << "ap " << a << "," << b << "," << x + y << "," << x * y;
      lines.push_back(o.str());
    }
  std::sort(lines.begin(), lines.end(), [](const std::string& p, const std::string& q) { return key_less(p, q); });
  return lines;
}


}  // namespace

TEST(AllPairsStage, EveryPairOnceForEachShapeWorkerCountAndCache) {
  const auto dir = test::scratch();
  const auto out = (dir / "out.txt").string();
  struct Case {
    int n, m;
    std::string pairs;
  };
  for (const Case& c : {Case{23, 0, ""}, Case{17, 0, "triangle-with-diagonal"}, Case{9, 14, ""}, Case{1, 0, ""}})
    for (int w : {1, 3})
      for (const std::string& settings : {std::string(), std::string(R"({"cache_items": 12, "leaf_pairs": 5})"),
                                         std::string(R"({"leaf_pairs": 1, "max_loads": 1})"),
                                         std::string(R"({"cache_items": 12, "load_ahead": false})")}) {
        SCOPED_TRACE(std::to_string(c.n) + "x" + std::to_string(c.m) + " " + c.pairs + " workers " +
                     std::to_string(w) + " " + settings);
        const auto r = test::run(pairs_workflow(c.n, c.m, c.pairs, settings, out), workers(w));
        ASSERT_EQ(r.status, RunStatus::succeeded) << (r.failures.empty() ? r.error : r.failures[0].describe());
        EXPECT_EQ(test::lines(out), expected(c.n, c.m, c.pairs == "triangle-with-diagonal"));
      }
}

TEST(AllPairsStage, AFailedLoadNamesTheItemAndWritesNothing) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  const auto r = test::run(pairs_workflow(12, 0, "", "", out.string(), R"("fail_load": 7)"), workers(2));
  ASSERT_EQ(r.status, RunStatus::failed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_EQ(r.failures[0].stage, "ap");
  EXPECT_EQ(r.failures[0].key, "item/7");
  EXPECT_NE(r.failures[0].message.find("cannot load item 7"), std::string::npos) << r.failures[0].message;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(AllPairsStage, AFailedCompareNamesBothItems) {
  const auto dir = test::scratch();
  const auto r = test::run(pairs_workflow(6, 0, "", "", (dir / "out.txt").string(), R"("fail_compare": 2)"), workers(2));
  ASSERT_EQ(r.status, RunStatus::failed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_EQ(r.failures[0].key, "item/2");
  EXPECT_NE(r.failures[0].message.find("comparing 'item/2' with 'item/"), std::string::npos) << r.failures[0].message;
}

TEST(AllPairsStage, SettingsAreCheckedAtTheirPointers) {
  EXPECT_NE(test::validation_problem(pairs_workflow(4, 0, "consecutive", "", "x")).find("/stages/ap/pairs"), std::string::npos);
  EXPECT_NE(test::validation_problem(pairs_workflow(4, 3, "triangle", "", "x")).find("(\"rectangle\")"), std::string::npos);
  EXPECT_NE(test::validation_problem(pairs_workflow(4, 0, "", R"({"cache_slots": 3})", "x")).find("/stages/ap/allpairs/cache_slots"),
            std::string::npos);
  EXPECT_NE(test::validation_problem(pairs_workflow(4, 0, "", R"({"leaf_pairs": 0})", "x")).find("expected an integer >= 1"),
            std::string::npos);
  EXPECT_EQ(test::validation_problem(pairs_workflow(4, 0, "triangle-with-diagonal", R"({"cache_items": 0, "max_loads": 2})", "x")),
            "(valid)");
  EXPECT_NE(test::validation_problem(pairs_workflow(4, 0, "", R"({"load_ahead": 1})", "x"))
                .find("/stages/ap/allpairs/load_ahead: expected true or false, got 1"),
            std::string::npos);
  EXPECT_EQ(test::validation_problem(pairs_workflow(4, 0, "", R"({"load_ahead": false, "cache_items": 3})", "x")), "(valid)");
}

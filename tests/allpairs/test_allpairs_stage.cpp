// All-pairs stages in a run (runtime/allpairs_stage.cpp): the score table of
// a triangle, a triangle with its diagonal and a rectangle is exact for any
// worker count and cache size; a failed load or compare names the item and
// fails the run with nothing written; the workflow's all-pairs settings are
// checked with errors at their JSON pointers.
#include <algorithm>
#include <cstdlib>
#include <fstream>
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
  EXPECT_NE(test::validation_problem(pairs_workflow(4, 0, "", R"({"peer_cache": "yes"})", "x"))
                .find("/stages/ap/allpairs/peer_cache: expected true or false"),
            std::string::npos);
  EXPECT_NE(test::validation_problem(pairs_workflow(4, 0, "", R"({"gpu_cache_items": -2})", "x"))
                .find("/stages/ap/allpairs/gpu_cache_items: expected an integer >= 0"),
            std::string::npos);
  EXPECT_EQ(test::validation_problem(pairs_workflow(4, 0, "", R"({"gpu_cache_items": 0})", "x")), "(valid)");
}

// Lanes on GPUs (runtime/allpairs_gpu.cpp), here simulated ones: each keeps
// the items it compares in a cache of its own, filled from the host cache;
// the table is exact, the summary gives the GPU caches' hit rate, and a GPU
// cache too small for a lane's items is refused naming the setting's size.
TEST(AllPairsStage, LanesOnSimulatedGpusReadTheirOwnCaches) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  for (const std::string settings : {R"({"gpu_cache_items": 4, "leaf_pairs": 6})", R"({"cache_items": 14, "gpu_cache_items": 9})"}) {
    SCOPED_TRACE(settings);
    std::ofstream(dir / "wf.json") << pairs_workflow(30, 0, "", settings, out.string(), R"("sleep_us": 100)");
    const auto r = test::flowd_cmd(dir, {"wf.json", "--cpu", "1", "--gpu", "sim:2", "--no-progress", "--no-perf-model"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(test::lines(out), expected(30, 0, false));
    EXPECT_NE(r.err.find("GPU caches ("), std::string::npos) << r.err;
  }
  // Bands of 14 - 2 x 3 lanes = 8 rows: a GPU lane pins 9 items.
  const auto refused = dir / "refused.txt";
  std::ofstream(dir / "wf.json") << pairs_workflow(30, 0, "", R"({"cache_items": 14, "gpu_cache_items": 5})",
                                                   refused.string());
  const auto r = test::flowd_cmd(dir, {"wf.json", "--cpu", "1", "--gpu", "sim:2", "--no-progress", "--no-perf-model"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("GPU's all-pairs cache of 5 slots is too small"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(refused)) << "nothing written";
}

// A cluster run (runtime/cluster_allpairs.cpp): the leaves run as jobs on the
// worker processes, whose caches last across jobs; the table is exact for
// every shape, node count and cache, with and without the peer cache.
TEST(AllPairsStage, AClusterRunComputesEveryPairOnTheWorkerNodes) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  struct Case {
    int n, m;
    std::string pairs, settings;
    const char* nodes;
  };
  for (const Case& c : {Case{23, 0, "", "", "1"}, Case{23, 0, "", "", "2"}, Case{17, 0, "triangle-with-diagonal", "", "3"},
                        Case{9, 14, "", "", "2"}, Case{30, 0, "", R"({"cache_items": 8, "leaf_pairs": 4})", "2"},
                        Case{30, 0, "", R"({"peer_cache": false, "load_ahead": false})", "2"}, Case{2, 0, "", "", "3"}}) {
    SCOPED_TRACE(std::to_string(c.n) + "x" + std::to_string(c.m) + " " + c.pairs + " " + c.settings + " nodes " +
                 c.nodes);
    std::ofstream(dir / "wf.json") << pairs_workflow(c.n, c.m, c.pairs, c.settings, out.string());
    const auto r = test::flowd_cmd(
        dir, {"wf.json", "--workers", c.nodes, "--worker-cpus", "2", "--cpu", "1", "--no-progress", "--no-perf-model"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(test::lines(out), expected(c.n, c.m, c.pairs == "triangle-with-diagonal"));
    const int nodes = std::min(std::atoi(c.nodes), c.n == 2 ? 1 : 99);  // one pair: one leaf, one node
    EXPECT_NE(r.err.find("on " + std::to_string(nodes) + " worker nodes: "), std::string::npos) << r.err;
    if (c.settings.find("peer_cache") != std::string::npos) {
      EXPECT_NE(r.err.find(": 0 items from the peer cache (0.0% of the misses; those ahead of the lanes count them too), 0 peers asked"), std::string::npos) << r.err;
    }
  }
}

// A load failing on a worker node fails the run naming the item and the
// node, with nothing written (the other node waiting for that item, if any,
// is not left waiting: the marker goes with the failed load).
TEST(AllPairsStage, AFailedLoadOnAWorkerNodeNamesTheItemAndNode) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  std::ofstream(dir / "wf.json") << pairs_workflow(20, 0, "", "", out.string(), R"("fail_load": 13)");
  const auto r = test::flowd_cmd(dir, {"wf.json", "--workers", "2", "--worker-cpus", "2", "--no-progress"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("cannot load item 13"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("item/13"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("on worker"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// The lines of expected(n, m) without item `gone` of the first set (and of
// the second, which is the first for a triangle): its row and column
// absent, the other items numbered as if it had never arrived.
std::vector<std::string> expected_without(int n, int m, int gone) {
  std::vector<std::string> lines;
  const int cols = m > 0 ? m : n;
  auto index = [&](int i) { return i - (i > gone ? 1 : 0); };
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < cols; ++b) {
      if (a == gone || (m == 0 && (b <= a || b == gone))) continue;
      const double x = 10.0 * a, y = 10.0 * b;
      std::ostringstream o;
      o << "ap " << index(a) << "," << (m > 0 ? b : index(b)) << "," << x + y << "," << x * y;
      lines.push_back(o.str());
    }
  std::sort(lines.begin(), lines.end(), [](const std::string& p, const std::string& q) { return key_less(p, q); });
  return lines;
}

// Issue 38: one item that could not be loaded failed the whole stage, and
// --keep-going wrote no matrix at all. Now the item is a failed item (exit
// 4, named) and the matrix is that of the others: in one process and on
// worker nodes, with a cache small enough that items are loaded again.
TEST(AllPairsStage, WithKeepGoingAnItemThatCannotBeLoadedLeavesItsRowAndColumnOut) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  struct Case {
    int n, m;
    std::vector<std::string> how;
  };
  const std::vector<Case> cases = {
      {20, 0, {"--cpu", "2"}},
      {20, 0, {"--workers", "2", "--worker-cpus", "2"}},
      {16, 6, {"--cpu", "2"}},
      {16, 6, {"--workers", "2", "--worker-cpus", "2"}},
  };
  for (const auto& c : cases) {
    for (const std::string& settings : {std::string(), std::string(R"({"cache_items": 8, "leaf_pairs": 4})")}) {
      SCOPED_TRACE(std::to_string(c.n) + "x" + std::to_string(c.m) + " " + c.how[0] + " " + settings);
      std::ofstream(dir / "wf.json") << pairs_workflow(c.n, c.m, "", settings, out.string(), R"("fail_load": 13)");
      std::vector<std::string> args{"wf.json", "-k", "--no-progress", "--no-perf-model"};
      args.insert(args.end(), c.how.begin(), c.how.end());
      const auto r = test::flowd_cmd(dir, args);
      ASSERT_EQ(r.code, 4) << r.err;
      EXPECT_NE(r.err.find("stage 'ap' failed on item 'item/13': cannot load item 13"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("items could not be loaded ('item/13'): the pairs are those of the other"),
                std::string::npos)
          << r.err;
      EXPECT_EQ(test::lines(out), expected_without(c.n, c.m, 13));
    }
  }
}

// A worker node dies in the middle of an all-pairs job (the first process to
// load item 17 aborts): the job's leaves and the rest of its stretch go to
// the other node, and the table is exact.
TEST(AllPairsStage, AWorkerNodeLostMidJobLeavesItsLeavesToTheOthers) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  const auto marker = dir / "crashed";
  std::ofstream(dir / "wf.json") << pairs_workflow(
      30, 0, "", R"({"leaf_pairs": 4})", out.string(),
      R"("sleep_us": 200, "crash_load": 17, "crash_marker": ")" + marker.string() + "\"");
  const auto r = test::flowd_cmd(
      dir, {"wf.json", "--workers", "2", "--worker-cpus", "2", "--cpu", "1", "--no-progress", "--no-perf-model"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(marker));
  EXPECT_EQ(test::lines(out), expected(30, 0, false));
  EXPECT_NE(r.err.find("was lost during an all-pairs job"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 node(s) lost during a job"), std::string::npos) << r.err;
}

// The peer cache: a node's later jobs ask the other node for the items its
// cache reported, so fewer items are loaded than without it. Each load and
// compare takes time here, so that the nodes' jobs overlap as real ones do.
TEST(AllPairsStage, ThePeerCacheServesItemsAnotherNodeLoaded) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  std::ofstream(dir / "wf.json") << pairs_workflow(40, 0, "", R"({"leaf_pairs": 6})", out.string(),
                                                   R"("sleep_us": 300)");
  const auto r = test::flowd_cmd(
      dir, {"wf.json", "--workers", "2", "--worker-cpus", "2", "--cpu", "1", "--no-progress", "--no-perf-model"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::lines(out), expected(40, 0, false));
  const auto at = r.err.find(" items from the peer cache");
  ASSERT_NE(at, std::string::npos) << r.err;
  const auto from = r.err.rfind(' ', at - 1);
  EXPECT_GT(std::stoi(r.err.substr(from + 1, at - from - 1)), 0) << r.err;
}

// A cache smaller than the set on worker nodes: the nodes run the bands plan
// (runtime/cluster_allpairs.cpp), each holding a band's rows while the
// columns stream past, so R stays near one process's 0.5 + n/(2h) rather
// than the Hilbert order's thrashing (R = 12 for CVTree, docs/benchmarks.md
// §14.3). 60 items, 20 slots, nodes of 2 lanes: bands of 16 rows, R ≈ 2.4
// on one node; each cut between the two nodes' stretches and each stolen
// stretch loads at most one band's rows again.
TEST(AllPairsStage, ASmallCacheOnWorkerNodesRunsBands) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  std::ofstream(dir / "wf.json") << pairs_workflow(60, 0, "", R"({"cache_items": 20, "peer_cache": false})",
                                                   out.string());
  const auto r = test::flowd_cmd(
      dir, {"wf.json", "--workers", "2", "--worker-cpus", "2", "--cpu", "1", "--no-progress", "--no-perf-model"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::lines(out), expected(60, 0, false));
  EXPECT_NE(r.err.find("(triangle, bands order)"), std::string::npos) << r.err;
  const auto at = r.err.find("; R = ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const double R = std::stod(r.err.substr(at + 6));
  EXPECT_LE(R, 4.0) << r.err;
}

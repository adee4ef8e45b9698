// Scan stages in a run: every strategy gives the sequential result for
// non-commutative operators, with one worker or several and on simulated
// GPUs; a combine reads other items by key; one element and none; errors name
// the stage; maps fed consecutive pairs of a series in natural key order.
#include <array>
#include <fstream>

#include <gtest/gtest.h>

#include "support/cli.hpp"

using namespace flowd;
using runtime::RunStatus;

namespace {

const char* strategies[] = {"sequential",    "dissemination",       "blelloch", "ladner-fischer",
                            "work-stealing", "static-hierarchical", "auto"};

std::string scan_workflow(const std::string& op, int count, const std::string& strategy, const std::string& out,
                          const std::string& scan_params = "", const std::string& element_params = "") {
  return R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": )" +
         std::to_string(count) + R"(}},
    "el":   {"op": "test.element", "inputs": {"in": "src.out"}, "params": {)" +
         element_params + R"(}},
    "scan": {"op": ")" +
         op + R"(", "strategy": ")" + strategy + R"(", "inputs": {"in": "el.out", "frames": "src.out"},
             "params": {"frames_prefix": "item")" +
         scan_params + R"(}},
    "sink": {"op": "test.record", "inputs": {"in": "scan.out"}, "params": {"path": ")" +
         out + R"("}}
  }})";
}

runtime::RunOptions workers(int n, const std::string& gpus = "none") {
  runtime::RunOptions o;
  o.cpu_workers = n;
  o.gpus = runtime::GpuSpec::parse(gpus);
  return o;
}

// The sink's lines for the prefix products / concatenations of elements
// 0..n−1, computed here one after another.
std::vector<std::string> expected(const std::string& op, int n, int identity_every = 0) {
  std::vector<std::string> lines;
  std::array<std::int64_t, 4> acc{};
  std::string s;
  for (std::int64_t i = 0; i < n; ++i) {
    std::array<std::int64_t, 4> m = {(i * 7 + 3) % 1009, (i * 5 + 1) % 1009, (i * 11 + 2) % 1009, (i * 13 + 4) % 1009};
    if (identity_every > 0 && i % identity_every == 0) m = {1, 0, 0, 1};
    acc = i == 0 ? m
                 : std::array<std::int64_t, 4>{
                       (acc[0] * m[0] + acc[1] * m[2]) % 1009, (acc[0] * m[1] + acc[1] * m[3]) % 1009,
                       (acc[2] * m[0] + acc[3] * m[2]) % 1009, (acc[2] * m[1] + acc[3] * m[3]) % 1009};
    s += std::to_string(i) + ",";
    Json j = {{"lo", 0}, {"hi", i}};
    if (op == "test.matmul2")
      j["m"] = Json::array({acc[0], acc[1], acc[2], acc[3]});
    else
      j["s"] = s;
    if (i == 0) {  // the first element is its own prefix: the element as test.element made it
      j = {{"lo", 0}, {"hi", 0}, {"m", Json::array({m[0], m[1], m[2], m[3]})}, {"s", "0,"}};
    }
    lines.push_back("item/" + std::to_string(i) + " " + j.dump());
  }
  return lines;
}


}  // namespace

TEST(ScanStage, EveryStrategyGivesTheSequentialResult) {
  const auto dir = test::scratch();
  for (const char* op : {"test.matmul2", "test.concat"})
    for (const char* strategy : strategies)
      for (int n : {1, 2, 3, 8, 37}) {
        SCOPED_TRACE(std::string(op) + " " + strategy + " n=" + std::to_string(n));
        const auto out = dir / "out.txt";
        const auto r = test::run(scan_workflow(op, n, strategy, out.string()), workers(3));
        ASSERT_EQ(r.status, RunStatus::succeeded) << (r.failures.empty() ? r.error : r.failures[0].describe());
        EXPECT_EQ(test::lines(out), expected(op, n));
      }
}

TEST(ScanStage, OneWorkerAndSimulatedGpusGiveTheSameResult) {
  const auto dir = test::scratch();
  for (const char* strategy : {"dissemination", "work-stealing"})
    for (const auto& opts : {workers(1), workers(2, "sim:1")}) {
      SCOPED_TRACE(std::string(strategy) + " " + opts.gpus.str());
      const auto out = dir / "out.txt";
      const auto r = test::run(scan_workflow("test.matmul2", 40, strategy, out.string(), R"(, "sleep_ms": 1)"), opts);
      ASSERT_EQ(r.status, RunStatus::succeeded) << (r.failures.empty() ? r.error : r.failures[0].describe());
      EXPECT_EQ(test::lines(out), expected("test.matmul2", 40));
    }
}

// A cluster run: the elements are made by worker processes and the scan's
// lanes include the coordinator's (simulated) GPU, whose combines must place
// operands other nodes hold (failed before: "cannot be placed on a GPU of the
// coordinator").
TEST(ScanStage, AClusterRunScansItemsOtherNodesMadeOnEveryLane) {
  const auto dir = test::scratch();
  std::ofstream(dir / "wf.json") << scan_workflow("test.matmul2", 24, "work-stealing", (dir / "out.txt").string());
  const auto r = test::flowd_cmd(dir, {"wf.json", "--workers", "2", "--worker-cpus", "1", "--cpu", "2", "--gpu",
                                       "sim:1", "--no-progress", "--no-perf-model"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::lines(dir / "out.txt"), expected("test.matmul2", 24));
}

// A cluster run's work-stealing scan runs on the worker nodes, one rank
// each, their threads its lanes; the coordinator does the global step. The
// combines read items by key that the coordinator holds (the source's), so
// the workers pull those when asked. Non-commutative operators give the
// sequential result for any series length, one node or two.
TEST(ScanStage, AClusterRunScansOnTheWorkerNodesAsRanks) {
  const auto dir = test::scratch();
  for (const char* op : {"test.matmul2", "test.concat"})
    for (int n : {1, 2, 7, 40})
      for (const char* nodes : {"1", "2"}) {
        SCOPED_TRACE(std::string(op) + " n=" + std::to_string(n) + " workers=" + nodes);
        std::ofstream(dir / "wf.json") << scan_workflow(op, n, "work-stealing", (dir / "out.txt").string());
        const auto r = test::flowd_cmd(
            dir, {"wf.json", "--workers", nodes, "--worker-cpus", "2", "--cpu", "1", "--no-progress", "--no-perf-model"});
        ASSERT_EQ(r.code, 0) << r.err;
        EXPECT_EQ(test::lines(dir / "out.txt"), expected(op, n));
        const int ranks = std::min(n, std::atoi(nodes));
        // Two lanes per node and the coordinator's, for the global step.
        const std::string lanes = std::to_string(2 * ranks + 1) + " lanes";
        EXPECT_NE(r.err.find(lanes), std::string::npos) << r.err;
        if (ranks > 1) {
          EXPECT_NE(r.err.find(", 2 ranks"), std::string::npos) << r.err;
        }
      }
}

// A worker node dies in the middle of its rank's job: the job is not run
// elsewhere (another node has its own segment), and what the dead node made
// is not recomputed; the run fails naming the node, writes nothing, and
// does not hang.
TEST(ScanStage, AWorkerNodeLostDuringTheScanFailsTheRunNamingIt) {
  const auto dir = test::scratch();
  std::ofstream(dir / "wf.json") << scan_workflow("test.concat", 30, "work-stealing", (dir / "out.txt").string(),
                                                  R"(, "crash_at": 23)");
  const auto r = test::flowd_cmd(dir, {"wf.json", "--workers", "2", "--worker-cpus", "2", "--no-progress"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("job of rank 1 on worker"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("which is gone"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out.txt"));
}

TEST(ScanStage, TheStaticHierarchicalScanRunsOnTheWorkerNodesToo) {
  const auto dir = test::scratch();
  std::ofstream(dir / "wf.json") << scan_workflow("test.matmul2", 41, "static-hierarchical", (dir / "out.txt").string());
  const auto r = test::flowd_cmd(dir, {"wf.json", "--workers", "2", "--worker-cpus", "3", "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::lines(dir / "out.txt"), expected("test.matmul2", 41));
  EXPECT_NE(r.err.find("static-hierarchical"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("7 lanes, "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("elements stolen"), std::string::npos) << r.err;
}

TEST(ScanStage, AFailingCombineOnAWorkerNodeFailsTheRunNamingTheElementAndNode) {
  const auto dir = test::scratch();
  std::ofstream(dir / "wf.json") << scan_workflow("test.concat", 30, "work-stealing", (dir / "out.txt").string(),
                                                  R"(, "fail_at": 23)");
  const auto r = test::flowd_cmd(dir, {"wf.json", "--workers", "2", "--worker-cpus", "2", "--no-progress"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("item/23"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("asked to fail at 23"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("job of rank 1 on worker"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out.txt"));
}

TEST(ScanStage, TheIdentityShortcutGivesTheSameResult) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  for (const char* strategy : {"sequential", "blelloch", "work-stealing"}) {
    const auto r =
        test::run(scan_workflow("test.matmul2", 30, strategy, out.string(), "", R"("identity_every": 4)"), workers(2));
    ASSERT_EQ(r.status, RunStatus::succeeded);
    EXPECT_EQ(test::lines(out), expected("test.matmul2", 30, 4)) << strategy;
  }
}

TEST(ScanStage, AnEmptySeriesProducesNothing) {
  const auto dir = test::scratch();
  const auto out = dir / "out.txt";
  const auto r = test::run(scan_workflow("test.concat", 0, "auto", out.string()), workers(2));
  ASSERT_EQ(r.status, RunStatus::succeeded);
  EXPECT_TRUE(test::lines(out).empty());
  EXPECT_FALSE(r.config.contains("scans"));
}

TEST(ScanStage, TheReportSaysWhatEachScanDid) {
  const auto dir = test::scratch();
  const auto r = test::run(scan_workflow("test.concat", 16, "dissemination", (dir / "o.txt").string()), workers(2));
  ASSERT_EQ(r.status, RunStatus::succeeded);
  ASSERT_TRUE(r.config.contains("scans"));
  const Json& s = r.config["scans"][0];
  EXPECT_EQ(s["stage"], "scan");
  EXPECT_EQ(s["strategy"], "dissemination");
  EXPECT_EQ(s["elements"], 16);
  EXPECT_EQ(s["combines"], 49);  // 16·4 − 16 + 1
  EXPECT_EQ(s["depth"], 4);
  std::uint64_t lane_combines = 0;
  for (const auto& l : s["lanes"])
    lane_combines += l["combines"].get<std::uint64_t>();
  EXPECT_EQ(lane_combines, 49u);

  const auto ws = test::run(scan_workflow("test.concat", 16, "auto", (dir / "o.txt").string()), workers(2));
  ASSERT_EQ(ws.status, RunStatus::succeeded);
  EXPECT_EQ(ws.config["scans"][0]["strategy"], "work-stealing");
  EXPECT_EQ(ws.config["scans"][0]["lanes"].size(), 2u);

  // One worker: work stealing would chain every element twice.
  const auto one = test::run(scan_workflow("test.concat", 16, "auto", (dir / "o.txt").string()), workers(1));
  ASSERT_EQ(one.status, RunStatus::succeeded);
  EXPECT_EQ(one.config["scans"][0]["strategy"], "sequential");
  EXPECT_EQ(one.config["scans"][0]["combines"], 15);
}

TEST(ScanStage, AFailingCombineFailsTheRunNamingTheStageAndElement) {
  const auto dir = test::scratch();
  for (const char* strategy : {"sequential", "ladner-fischer", "work-stealing"}) {
    const auto r = test::run(scan_workflow("test.concat", 20, strategy, (dir / "o.txt").string(), R"(, "fail_at": 13)"),
                             workers(2));
    ASSERT_EQ(r.status, RunStatus::failed) << strategy;
    ASSERT_FALSE(r.failures.empty());
    EXPECT_EQ(r.failures[0].stage, "scan");
    EXPECT_EQ(r.failures[0].key, "item/13");
    EXPECT_NE(r.failures[0].message.find("asked to fail at 13"), std::string::npos) << r.failures[0].message;
    EXPECT_FALSE(std::filesystem::exists(dir / "o.txt"));
  }
}

TEST(ScanStage, AMissingItemByKeyFailsTheCombine) {
  const auto dir = test::scratch();
  std::string json = scan_workflow("test.concat", 5, "sequential", (dir / "o.txt").string());
  json.replace(json.find(R"("frames_prefix": "item")"), 23, R"("frames_prefix": "frame")");
  const auto bad = test::run(json, workers(1));
  ASSERT_EQ(bad.status, RunStatus::failed);
  EXPECT_NE(bad.failures.at(0).message.find("no item with key 'frame/1' arrived on input 'frames'"), std::string::npos)
      << bad.failures[0].message;
}

TEST(ScanStage, StrategiesAreCheckedWhenTheWorkflowIsValidated) {
  const auto dir = test::scratch();
  const std::string out = (dir / "o.txt").string();
  EXPECT_NE(test::validation_problem(scan_workflow("test.concat", 3, "fastest", out))
                .find("/stages/scan/strategy: unknown scan strategy 'fastest'; strategies: sequential, dissemination, "
                      "blelloch, ladner-fischer, work-stealing, static-hierarchical, auto"),
            std::string::npos);
  std::string on_map = scan_workflow("test.concat", 3, "auto", out);
  on_map.replace(on_map.find(R"("op": "test.element")"), 20, R"("op": "test.element", "strategy": "blelloch")");
  EXPECT_NE(
      test::validation_problem(on_map).find("/stages/el/strategy: only scan stages take a strategy; 'test.element' is a map operator"),
      std::string::npos)
      << test::validation_problem(on_map);
}

namespace {

std::string pairs_workflow(int count, const std::string& inputs, const std::string& pairs, const std::string& out) {
  return R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": )" +
         std::to_string(count) + R"(, "reverse": true}},
    "pair": {"op": "test.consecutive", "pairs": ")" +
         pairs + R"(", "inputs": )" + inputs + R"(},
    "sink": {"op": "test.record", "inputs": {"in": "pair.out"}, "params": {"path": ")" +
         out + R"("}}
  }})";
}

}  // namespace

TEST(Pairs, AMapGetsEveryConsecutivePairInNaturalKeyOrder) {
  const auto dir = test::scratch();
  const auto out = dir / "o.txt";
  const std::string both = R"({"first": "src.out", "second": "src.out"})";
  const auto r = test::run(pairs_workflow(12, both, "consecutive", out.string()), workers(3));
  ASSERT_EQ(r.status, RunStatus::succeeded);
  std::vector<std::string> want;
  for (int i = 1; i < 12; ++i)
    want.push_back("item/" + std::to_string(i) + " " + Json{{"first", i - 1}, {"second", i}}.dump());
  EXPECT_EQ(test::lines(out), want);  // item/9 then item/10, not item/1 then item/10

  ASSERT_EQ(test::run(pairs_workflow(1, both, "consecutive", out.string()), workers(2)).status, RunStatus::succeeded);
  EXPECT_TRUE(test::lines(out).empty());
}

// "consecutive-with-first": (x_0, x_0) first, then the consecutive pairs;
// one item makes one task.
TEST(Pairs, WithFirstPairsTheFirstItemWithItselfFirst) {
  const auto dir = test::scratch();
  const auto out = dir / "o.txt";
  const std::string both = R"({"first": "src.out", "second": "src.out"})";
  ASSERT_EQ(test::run(pairs_workflow(12, both, "consecutive-with-first", out.string()), workers(3)).status,
            RunStatus::succeeded);
  std::vector<std::string> want{"item/0 " + Json{{"first", 0}, {"second", 0}}.dump()};
  for (int i = 1; i < 12; ++i)
    want.push_back("item/" + std::to_string(i) + " " + Json{{"first", i - 1}, {"second", i}}.dump());
  EXPECT_EQ(test::lines(out), want);
  ASSERT_EQ(test::run(pairs_workflow(1, both, "consecutive-with-first", out.string()), workers(2)).status,
            RunStatus::succeeded);
  const std::vector<std::string> one{"item/0 " + Json{{"first", 0}, {"second", 0}}.dump()};
  EXPECT_EQ(test::lines(out), one);
}

TEST(Pairs, BadPairingsAreRefusedAtTheirPointer) {
  const auto dir = test::scratch();
  const std::string out = (dir / "o.txt").string();
  const std::string both = R"({"first": "src.out", "second": "src.out"})";
  EXPECT_NE(
      test::validation_problem(pairs_workflow(3, both, "all", out))
          .find("/stages/pair/pairs: unknown pairing 'all'; pairings: \"consecutive\", \"consecutive-with-first\""),
      std::string::npos);
  const std::string json = R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": 3}},
    "other": {"op": "test.count", "params": {"count": 3}},
    "pair": {"op": "test.consecutive", "pairs": "consecutive", "inputs": {"first": "src.out", "second": "other.out"}},
    "sink": {"op": "test.record", "inputs": {"in": "pair.out"}, "params": {"path": ")" +
                           out + R"("}}
  }})";
  EXPECT_NE(test::validation_problem(json).find("/stages/pair/pairs: a stage fed consecutive pairs connects its inputs 'first' and "
                               "'second' (and no other) to the same \"stage.port\""),
            std::string::npos)
      << test::validation_problem(json);
}

TEST(ScanStage, InspectShowsThePatternAndTheStrategies) {
  const auto dir = test::scratch();
  const auto r = test::flowd_cmd(dir, {"inspect", "test.matmul2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Pattern       scan\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Strategies    sequential, dissemination, blelloch, ladner-fischer, work-stealing, "
                       "static-hierarchical, auto (the stage's \"strategy\"; default auto)"),
            std::string::npos)
      << r.out;
}

namespace {

void write_file(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string cli_workflow(const std::string& strategy, const std::string& scan_params = "") {
  return R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": 8}},
    "el":   {"op": "test.element", "inputs": {"in": "src.out"}},
    "scan": {"op": "test.concat", "strategy": ")" +
         strategy + R"(", "inputs": {"in": "el.out"}, "params": {)" + scan_params + R"(}},
    "sink": {"op": "test.record", "inputs": {"in": "scan.out"}, "params": {"path": "out/scan.txt"}}
  }})";
}

}  // namespace

TEST(ScanStage, TheCommandLineRunsAScanAndLogsWhatItDid) {
  const auto dir = test::scratch();
  write_file(dir / "wf.json", cli_workflow("dissemination"));
  const auto r = test::flowd_cmd(dir, {"wf.json", "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("[scan] scan of 8 elements: dissemination, 17 combines, depth 3, "), std::string::npos) << r.err;
  EXPECT_EQ(test::lines(dir / "out" / "scan.txt").size(), 8u);
}

TEST(ScanStage, TheCommandLineRefusesBadScansWithTheirExitCodes) {
  const auto dir = test::scratch();
  write_file(dir / "wf.json", cli_workflow("fastest"));
  auto r = test::flowd_cmd(dir, {"wf.json", "--no-progress"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("/stages/scan/strategy: unknown scan strategy 'fastest'; strategies: sequential, dissemination, "
                       "blelloch, ladner-fischer, work-stealing, static-hierarchical, auto"),
            std::string::npos)
      << r.err;

  // The series is not journalled: a resumable run is refused before anything exists.
  write_file(dir / "wf.json", cli_workflow("auto"));
  r = test::flowd_cmd(dir, {"wf.json", "--journal", "journal", "--no-progress"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(
      r.err.find("stage 'scan' is a scan: the series it collects is not kept, so this run cannot be journalled or "
                 "resumed (--journal/--resume)"),
      std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "journal"));

  write_file(dir / "wf.json", cli_workflow("blelloch", R"("fail_at": 5)"));
  r = test::flowd_cmd(dir, {"wf.json", "--no-progress"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("stage 'scan' failed on item 'item/5': asked to fail at 5"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "scan.txt"));
}

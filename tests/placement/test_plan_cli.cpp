// `flowd plan` and `flowd run --stage-profile` (engine/cli/cmd_plan.cpp): a
// profile measured by a run plans a chain of test stages; the plan is
// printed beside the defaults and written as JSON; a bad sites file or a
// profile missing a stage is refused (exit 2) naming what is wrong;
// `flowd calibrate --transfer` measures what a sites file's hosts pay per MB;
// the plan says how far it holds when that figure is off.
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "flowd/item.hpp"
#include "support/cli.hpp"

using namespace flowd;

namespace {

// count → double → record: a source, a map, a sink.
const char* chain_workflow(const std::string& out) {
  static std::string w;
  w = R"({"version": 1, "stages": {
    "src": {"op": "test.count", "params": {"count": 20}},
    "twice": {"op": "test.double", "inputs": {"in": "src.out"}},
    "sink": {"op": "test.record", "inputs": {"in": "twice.out"}, "params": {"path": ")" + out + R"("}}}})";
  return w.c_str();
}

// A slow link and a fast compute site: the map belongs next to the data
// only when it shrinks what it sends; here it does not, so the plan runs it
// where the compute is.
const char* sites_json = R"({"version": 1,
  "sites": [{"name": "data"}, {"name": "compute", "nodes": 8, "speed": 2}, {"name": "client"}],
  "links": [{"from": "data", "to": "compute", "bandwidth_mb_s": 1, "latency_ms": 1},
            {"from": "compute", "to": "client", "bandwidth_mb_s": 100}]})";

}  // namespace

TEST(PlanCli, AMeasuredProfilePlansTheChainBesideTheDefaults) {
  const auto dir = test::scratch();
  std::ofstream(dir / "wf.json") << chain_workflow((dir / "out.txt").string());
  std::ofstream(dir / "sites.json") << sites_json;
  const auto run = test::flowd_cmd(dir, {"wf.json", "--stage-profile", "profile.json", "--no-progress", "--no-perf-model"});
  ASSERT_EQ(run.code, 0) << run.err;
  const Json prof = Json::parse(test::slurp(dir / "profile.json"));
  EXPECT_EQ(prof["source_items"], 20);
  for (const char* s : {"src", "twice", "sink"}) EXPECT_TRUE(prof["stages"].contains(s)) << prof.dump();
  EXPECT_DOUBLE_EQ(prof["stages"]["twice"]["items_out"].get<double>(), 1.0);
  EXPECT_GT(prof["stages"]["src"]["bytes_out"].get<double>(), 0.0);

  // Heavier stages by hand, so that the plan does not hang on timing noise:
  // 50 ms of compute per item in the map, 100 kB per item everywhere.
  Json p = prof;
  for (const char* s : {"src", "twice", "sink"}) {
    p["stages"][s]["bytes_out"] = 1e5;
    p["stages"][s]["seconds"] = std::string(s) == "twice" ? 0.05 : 0.0;
  }
  p["stages"]["src"]["input_bytes"] = 1e5;
  std::ofstream(dir / "heavy.json") << p.dump();
  const auto plan = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "sites.json", "--profile", "heavy.json",
                                          "--items", "100", "--write", "plan.json"});
  ASSERT_EQ(plan.code, 0) << plan.err;
  for (const char* want : {"search: exhaustive", "planned", "everything at data (the data site)",
                           "everything at compute (the most compute)", "demand-driven (today's default, modelled)"})
    EXPECT_NE(plan.out.find(want), std::string::npos) << want << "\n" << plan.out;
  const Json written = Json::parse(test::slurp(dir / "plan.json"));
  EXPECT_EQ(written["stages"]["twice"], "compute") << written.dump();
  EXPECT_EQ(written["items"], 100);
  EXPECT_EQ(written["method"], "exhaustive");

  // --fix holds a stage where the plan would not put it.
  const auto fixed = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "sites.json", "--profile", "heavy.json",
                                           "--items", "100", "--fix", "twice=data", "--write", "fixed.json"});
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  EXPECT_EQ(Json::parse(test::slurp(dir / "fixed.json"))["stages"]["twice"], "data");

  // Slow links, and results nobody reads further: the sink stays at the
  // client, which receives the results; --fix puts it (and so where its
  // files are written) at the data site, and everything follows it there
  // (5.0 s against 10.1 s with the sink at the client).
  std::ofstream(dir / "slow-client.json") << R"({"version": 1,
    "sites": [{"name": "data"}, {"name": "compute", "nodes": 8, "speed": 2}, {"name": "client"}],
    "links": [{"from": "data", "to": "compute", "bandwidth_mb_s": 1},
              {"from": "compute", "to": "client", "bandwidth_mb_s": 1}]})";
  Json quiet = p;
  quiet["stages"]["sink"]["bytes_out"] = 0;
  std::ofstream(dir / "quiet.json") << quiet.dump();
  const auto kept = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "slow-client.json", "--profile", "quiet.json",
                                          "--items", "100", "--write", "kept.json"});
  ASSERT_EQ(kept.code, 0) << kept.err;
  const Json at_client = Json::parse(test::slurp(dir / "kept.json"));
  EXPECT_EQ(at_client["stages"]["sink"], "client") << at_client.dump();
  EXPECT_NEAR(at_client["predicted_seconds"].get<double>(), 10.1, 0.2) << at_client.dump();
  const auto moved = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "slow-client.json", "--profile", "quiet.json",
                                           "--items", "100", "--fix", "sink=data", "--write", "moved.json"});
  ASSERT_EQ(moved.code, 0) << moved.err;
  const Json at_data = Json::parse(test::slurp(dir / "moved.json"));
  EXPECT_EQ(at_data["stages"]["sink"], "data") << at_data.dump();
  EXPECT_EQ(at_data["stages"]["twice"], "data") << at_data.dump();
  EXPECT_NEAR(at_data["predicted_seconds"].get<double>(), 5.0, 0.1) << at_data.dump();

  // --sites without --placement: the run sets the modelled default beside
  // what it measured.
  const auto unplaced = test::flowd_cmd(dir, {"wf.json", "--sites", "sites.json", "--profile", "heavy.json",
                                              "--no-progress", "--no-perf-model"});
  ASSERT_EQ(unplaced.code, 0) << unplaced.err;
  EXPECT_NE(unplaced.err.find("placement: none (demand-driven), modelled "), std::string::npos) << unplaced.err;
}

TEST(PlanCli, ThePlanSaysHowFarItHoldsForAHostsCostOfMovingItems) {
  // Two sites on one host of two cores. The map (0.1 s an item) takes the
  // data site's one node 0.1 s an item; at compute (two nodes) 0.05 s, but
  // its 1 MB input then costs the host both ends: (0.1 + 2 MB · c) / 2,
  // which reaches 0.1 s at c = 50 ms/MB. At 20 ms/MB it goes to compute;
  // above 50, back by its data.
  const auto dir = test::scratch();
  std::ofstream(dir / "wf.json") << chain_workflow((dir / "out.txt").string());
  std::ofstream(dir / "sites.json") << R"({"version": 1,
    "sites": [{"name": "data"}, {"name": "compute", "nodes": 2}],
    "links": [{"from": "data", "to": "compute", "bandwidth_mb_s": 1000000}],
    "hosts": [{"name": "box", "cores": 2, "sites": ["data", "compute"], "transfer_cpu_ms_per_mb": 20}]})";
  std::ofstream(dir / "profile.json") << R"({"version": 1, "source_items": 1000000, "stages": {
    "src": {"seconds": 0, "bytes_out": 1000000, "items_out": 1, "input_bytes": 0},
    "twice": {"seconds": 0.1, "bytes_out": 0, "items_out": 1, "input_bytes": 0},
    "sink": {"seconds": 0, "bytes_out": 0, "items_out": 1, "input_bytes": 0}}})";
  const auto plan = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "sites.json", "--profile", "profile.json",
                                          "--fix", "src=data", "--write", "plan.json"});
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_EQ(Json::parse(test::slurp(dir / "plan.json"))["stages"]["twice"], "compute") << plan.out;
  EXPECT_NE(plan.out.find("how far the plan holds"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("host box (20 ms/MB at each end; 2 MB an item"), std::string::npos) << plan.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(plan.out, m, std::regex(R"(the same plan from ([0-9.]+) ms/MB \(as far as tried\) to ([0-9.]+) ms/MB\n)")))
      << plan.out;
  EXPECT_DOUBLE_EQ(std::stod(m[1].str()), 2.5) << "an eighth of 20: nothing changes below";
  EXPECT_GT(std::stod(m[2].str()), 49.4);
  EXPECT_LE(std::stod(m[2].str()), 50.0);
  EXPECT_NE(plan.out.find("ms/MB: twice@data ("), std::string::npos) << plan.out;

  // No figure for the host: nothing to say.
  std::ofstream(dir / "free.json") << R"({"version": 1,
    "sites": [{"name": "data"}, {"name": "compute", "nodes": 2}],
    "links": [{"from": "data", "to": "compute", "bandwidth_mb_s": 1000000}],
    "hosts": [{"name": "box", "cores": 2, "sites": ["data", "compute"]}]})";
  const auto free = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "free.json", "--profile", "profile.json"});
  ASSERT_EQ(free.code, 0) << free.err;
  EXPECT_EQ(free.out.find("how far the plan holds"), std::string::npos) << free.out;
}

TEST(PlanCli, AProfileSaysHowBurstyEachSourceIs) {
  // Items in bursts of four (the first of each made in 100 ms, the others
  // at once), as a tile reader that decodes a whole image on its first
  // tile; then a steady source, each item in 20 ms.
  const auto dir = test::scratch();
  auto workflow = [&](const std::string& count_params) {
    std::ofstream(dir / "wf.json") << R"({"version": 1, "stages": {
      "src": {"op": "test.count", "params": {"count": 8, )" + count_params + R"(}},
      "twice": {"op": "test.double", "inputs": {"in": "src.out"}},
      "sink": {"op": "test.record", "inputs": {"in": "twice.out"}, "params": {"path": "out.txt"}}}})";
  };
  workflow(R"("slow_every": 4, "slow_ms": 100)");
  const auto bursty = test::flowd_cmd(dir, {"wf.json", "--stage-profile", "bursty.json", "--no-progress", "--no-perf-model"});
  ASSERT_EQ(bursty.code, 0) << bursty.err;
  const Json b = Json::parse(test::slurp(dir / "bursty.json"));
  // Two calls of 100 ms among nine (the last finds nothing): about 4.5.
  ASSERT_TRUE(b["stages"]["src"].contains("burst")) << b.dump();
  EXPECT_GT(b["stages"]["src"]["burst"].get<double>(), 3.0) << b.dump();
  EXPECT_LT(b["stages"]["src"]["burst"].get<double>(), 6.0) << b.dump();
  EXPECT_FALSE(b["stages"]["twice"].contains("burst")) << "only sources are bursty: " << b.dump();
  workflow(R"("slow_every": 1, "slow_ms": 20)");
  const auto steady = test::flowd_cmd(dir, {"wf.json", "--stage-profile", "steady.json", "--no-progress", "--no-perf-model"});
  ASSERT_EQ(steady.code, 0) << steady.err;
  const Json s = Json::parse(test::slurp(dir / "steady.json"));
  EXPECT_LT(s["stages"]["src"].value("burst", 1.0), 1.6) << s.dump();
}

TEST(PlanCli, BadSitesAndIncompleteProfilesAreRefusedNamingTheProblem) {
  const auto dir = test::scratch();
  std::ofstream(dir / "wf.json") << chain_workflow((dir / "out.txt").string());
  std::ofstream(dir / "sites.json") << R"({"version": 1, "sites": [{"name": "a"}, {"name": "b"}],
    "links": [{"from": "a", "to": "b", "bandwidth_mb_s": 0}]})";
  std::ofstream(dir / "profile.json") << R"({"version": 1, "stages": {"src": {"seconds": 0.1}}})";
  const auto bad_sites = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "sites.json", "--profile", "profile.json"});
  EXPECT_EQ(bad_sites.code, 2);
  EXPECT_NE(bad_sites.err.find("/links/0/bandwidth_mb_s: must be greater than 0"), std::string::npos) << bad_sites.err;
  std::ofstream(dir / "sites.json") << sites_json;
  const auto partial = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "sites.json", "--profile", "profile.json"});
  EXPECT_EQ(partial.code, 2);
  EXPECT_NE(partial.err.find("no costs for 'twice', 'sink'"), std::string::npos) << partial.err;
  std::ofstream(dir / "profile.json") << R"({"version": 1, "stages": {"src": {"seconds": -1, "colour": 2, "burst": 0.5}}})";
  const auto wrong = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "sites.json", "--profile", "profile.json"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.err.find("/stages/src/seconds: expected a number, at least 0"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("/stages/src/colour: unknown key"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("/stages/src/burst: expected a number, at least 1"), std::string::npos) << wrong.err;
  std::ofstream(dir / "ok.json") << R"({"version": 1, "stages": {"src": {"seconds": 0}, "twice": {"seconds": 0.1},
    "sink": {"seconds": 0}}})";
  const auto bad_fix = test::flowd_cmd(dir, {"plan", "wf.json", "--sites", "sites.json", "--profile", "ok.json",
                                             "--fix", "twice=moon"});
  EXPECT_EQ(bad_fix.code, 2);
  EXPECT_NE(bad_fix.err.find("--fix twice=moon: no site 'moon'"), std::string::npos) << bad_fix.err;
}

TEST(PlanCli, CalibrateTransferMeasuresTheCpuOfMovingItems) {
  const auto dir = test::scratch();
  const auto r = test::flowd_cmd(dir, {"calibrate", "--transfer", "--transfer-mb", "1", "--transfer-fetches", "8"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto at = r.out.find("transfer_cpu_ms_per_mb ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double ms = std::stod(r.out.substr(at + 23));
  // Moving a MB costs something, and far less than a second.
  EXPECT_GT(ms, 0.0) << r.out;
  EXPECT_LT(ms, 1000.0) << r.out;
  EXPECT_NE(r.out.find("MB/s"), std::string::npos) << r.out;
  // A workflow or --transfer, one of them; sizes that make sense.
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"calibrate"}, {"calibrate", "wf.json", "--transfer"}, {"calibrate", "--transfer", "--transfer-mb", "0"}}) {
    const auto b = test::flowd_cmd(dir, bad);
    EXPECT_EQ(b.code, 1) << b.err;
    EXPECT_FALSE(b.err.empty());
  }
}

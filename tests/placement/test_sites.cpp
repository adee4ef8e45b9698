// The sites file (engine/placement/sites.hpp): the shipped example reads,
// and every problem of a bad one is reported at its JSON pointer, together.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "placement/sites.hpp"
#include "workflow/diagnostics.hpp"

using namespace flowd;
using placement::parse_sites;

namespace {

// Every "where: message" of a refused description, or "(accepted)".
std::string problems(const std::string& text) {
  try {
    parse_sites(Json::parse(text), "s.json");
  } catch (const workflow::ValidationError& e) {
    std::string all;
    for (const auto& d : e.diagnostics()) all += d.where + ": " + d.message + "\n";
    return all;
  }
  return "(accepted)";
}

}  // namespace

TEST(Sites, TheShippedChainReads) {
  const auto s = placement::load_sites(std::filesystem::path(FLOWD_SOURCE_DIR) / "workflows/sites/chain.json");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.sites[0].name, "storage");
  EXPECT_EQ(s.sites[1].label, "site:cluster");
  EXPECT_EQ(s.sites[1].nodes, 4);
  EXPECT_DOUBLE_EQ(s.sites[2].speed, 0.8);
  ASSERT_EQ(s.links.size(), 2u);
  EXPECT_DOUBLE_EQ(s.links[0].bandwidth, 12.5e6);
  EXPECT_DOUBLE_EQ(s.links[0].latency, 0.002);
  EXPECT_DOUBLE_EQ(s.links[0].message_overhead, 0.0005);
  EXPECT_EQ(s.find("cluster"), 1u);
  EXPECT_EQ(s.find("nowhere"), 3u);
}

TEST(Sites, EveryProblemAtItsPointer) {
  const std::string p = problems(R"({"version": 2, "extra": 1,
    "sites": [{"name": "a", "speed": 0}, {"name": "a", "nodes": 0, "colour": "red"}, {"name": "c", "label": ""}],
    "links": [{"from": "a", "to": "c", "bandwidth_mb_s": -1},
              {"from": "x", "to": "c", "bandwidth_mb_s": 10, "latency_ms": "fast"}]})");
  for (const char* want : {"/version: expected 1", "/extra: unknown key", "/sites/0/speed: must be greater than 0",
                           "/sites/1/name: the site \"a\" is named twice", "/sites/1/nodes: expected a whole number",
                           "/sites/1/colour: unknown key", "/sites/2/label: expected a non-empty node label",
                           "/links/0/to: expected \"a\"", "/links/0/bandwidth_mb_s: must be greater than 0",
                           "/links/1/from: expected \"a\"", "/links/1/latency_ms: expected a number"})
    EXPECT_NE(p.find(want), std::string::npos) << want << "\nin:\n" << p;
}

TEST(Sites, AChainNeedsTwoSitesAndALinkBetweenEachTwo) {
  EXPECT_NE(problems(R"({"version": 1, "sites": [{"name": "a"}], "links": []})").find("/sites: expected a list of at least two"),
            std::string::npos);
  EXPECT_NE(problems(R"({"version": 1, "sites": [{"name": "a"}, {"name": "b"}], "links": []})")
                .find("/links: expected 1 links"),
            std::string::npos);
  EXPECT_NE(problems(R"({"version": 1, "sites": [{"name": "a"}, {"name": "b"}], "links": [{"from": "a", "to": "b"}]})")
                .find("/links/0: missing \"bandwidth_mb_s\""),
            std::string::npos);
  EXPECT_EQ(problems(R"({"version": 1, "sites": [{"name": "a"}, {"name": "b"}],
                         "links": [{"from": "a", "to": "b", "bandwidth_mb_s": 1}]})"),
            "(accepted)");
}

TEST(Sites, AnUnreadableOrMalformedFileIsNamed) {
  try {
    placement::load_sites("/nonexistent/sites.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/sites.json"), std::string::npos) << e.what();
  }
  const auto bad = std::filesystem::path(FLOWD_TEST_TMP) / "placement-bad-sites.json";
  std::filesystem::create_directories(bad.parent_path());
  { std::ofstream(bad) << "{\"version\": 1,\n  \"sites\": [\n"; }
  try {
    placement::load_sites(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("placement-bad-sites.json"), std::string::npos) << e.what();
  }
}

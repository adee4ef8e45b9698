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

TEST(Sites, HostsNameTheSitesThatShareAMachine) {
  const auto s = parse_sites(Json::parse(R"({"version": 1,
    "sites": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
    "links": [{"from": "a", "to": "b", "bandwidth_mb_s": 1}, {"from": "b", "to": "c", "bandwidth_mb_s": 1}],
    "hosts": [{"name": "vm", "cores": 2, "sites": ["a", "c"], "transfer_cpu_ms_per_mb": 4.5}]})"), "s.json");
  ASSERT_EQ(s.hosts.size(), 1u);
  EXPECT_EQ(s.hosts[0].name, "vm");
  EXPECT_DOUBLE_EQ(s.hosts[0].cores, 2);
  EXPECT_EQ(s.hosts[0].sites, (std::vector<std::size_t>{0, 2}));
  EXPECT_DOUBLE_EQ(s.hosts[0].transfer_cpu, 4.5e-9);  // seconds per byte
  const std::string p = problems(R"({"version": 1,
    "sites": [{"name": "a"}, {"name": "b"}],
    "links": [{"from": "a", "to": "b", "bandwidth_mb_s": 1}],
    "hosts": [{"name": "vm", "cores": 0, "sites": ["a", "x"], "ram": 4},
              {"name": "vm", "cores": 1, "sites": ["a"], "transfer_cpu_ms_per_mb": -1}, {"cores": 1, "sites": []}, 7]})");
  for (const char* want : {"/hosts/0/cores: must be greater than 0", "/hosts/0/sites/1: expected the name of one of the sites",
                           "/hosts/0/ram: unknown key", "/hosts/1/name: the host \"vm\" is named twice",
                           "/hosts/1/sites/0: the site \"a\" is on host \"vm\" already",
                           "/hosts/1/transfer_cpu_ms_per_mb: must be at least 0",
                           "/hosts/2/name: expected a non-empty name", "/hosts/2/sites: expected a list",
                           "/hosts/3: expected an object"})
    EXPECT_NE(p.find(want), std::string::npos) << want << "\nin:\n" << p;
  EXPECT_NE(problems(R"({"version": 1, "sites": [{"name": "a"}, {"name": "b"}],
                         "links": [{"from": "a", "to": "b", "bandwidth_mb_s": 1}], "hosts": {}})")
                .find("/hosts: expected a list of hosts"),
            std::string::npos);
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

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "net/cluster/labels.hpp"

namespace cl = flowd::net::cluster;
using nlohmann::json;

namespace {

cl::StageLabels stage(const char* text) {
  auto p = cl::parse_stage_labels(json::parse(text), "/stages/0/labels");
  EXPECT_TRUE(p.ok()) << text << ": " << (p.errors.empty() ? "" : p.errors[0].pointer + " " + p.errors[0].message);
  return p.value;
}

cl::NodeLabels node(std::vector<std::string> names, std::int64_t rank = 0) { return {std::move(names), rank}; }

// pointer -> message, to assert on both.
std::vector<std::pair<std::string, std::string>> stage_errors(const char* text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : cl::parse_stage_labels(json::parse(text), "/stages/3/labels").errors) {
    out.emplace_back(e.pointer, e.message);
  }
  return out;
}

}  // namespace

TEST(LabelsParse, NodeForms) {
  auto p = cl::parse_node_labels(json::parse(R"(["gpu", "site:amsterdam"])"), "/nodes/0/labels");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value.names, (std::vector<std::string>{"gpu", "site:amsterdam"}));
  EXPECT_EQ(p.value.rank, 0);

  p = cl::parse_node_labels(json::parse(R"({"names": ["gpu"], "rank": 8})"), "/nodes/0/labels");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value.rank, 8);
  EXPECT_EQ(cl::site_of(p.value), std::nullopt);
  EXPECT_EQ(cl::site_of(node({"gpu", "site:delft"})), "delft");
}

TEST(LabelsParse, NodeErrorsAtPointers) {
  auto p = cl::parse_node_labels(json::parse(R"({"names": ["gpu", 3, "", "a b", "gpu"], "rank": 1.5, "ranks": 1})"),
                                 "/nodes/1/labels");
  ASSERT_EQ(p.errors.size(), 6u);
  std::set<std::string> pointers;
  for (const auto& e : p.errors) pointers.insert(e.pointer);
  EXPECT_EQ(pointers, (std::set<std::string>{"/nodes/1/labels/names/1", "/nodes/1/labels/names/2",
                                             "/nodes/1/labels/names/3", "/nodes/1/labels/names/4",
                                             "/nodes/1/labels/rank", "/nodes/1/labels/ranks"}));

  p = cl::parse_node_labels(json::parse(R"(["site:a", "site:b"])"), "/nodes/2/labels");
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].pointer, "/nodes/2/labels");
  EXPECT_NE(p.errors[0].message.find("at most one \"site:\" label"), std::string::npos);

  p = cl::parse_node_labels(json::parse(R"("gpu")"), "/nodes/3/labels");
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].pointer, "/nodes/3/labels");
}

TEST(LabelsParse, StageForms) {
  const auto s = stage(R"({"all": ["gpu"], "any": ["cuda", "rocm"], "prefer": ["site:amsterdam", "site:delft"],
                           "anywhere": true, "rank": "biggest"})");
  EXPECT_EQ(s.all, (std::vector<std::string>{"gpu"}));
  EXPECT_EQ(s.any, (std::vector<std::string>{"cuda", "rocm"}));
  EXPECT_EQ(s.prefer, (std::vector<std::string>{"site:amsterdam", "site:delft"}));
  EXPECT_TRUE(s.anywhere);
  EXPECT_EQ(s.rank, cl::RankPolicy::biggest);

  const auto shorthand = stage(R"(["gpu", "dataset:sn"])");
  EXPECT_EQ(shorthand.all, (std::vector<std::string>{"gpu", "dataset:sn"}));
  EXPECT_EQ(stage("{}").rank, cl::RankPolicy::any);
}

TEST(LabelsParse, StageErrorsAtPointers) {
  using E = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(stage_errors(R"({"prefered": ["a"]})"),
            (E{{"/stages/3/labels/prefered",
                "unknown key \"prefered\" (stage labels have \"all\", \"any\", \"prefer\", \"anywhere\", \"rank\")"}}));
  EXPECT_EQ(stage_errors(R"({"prefer": ["a", "b", "a"]})"), (E{{"/stages/3/labels/prefer/2", "label 'a' appears twice"}}));
  EXPECT_EQ(stage_errors(R"({"anywhere": true})"),
            (E{{"/stages/3/labels/anywhere", "\"anywhere\" is the fallback for \"prefer\", which is missing or empty"}}));
  EXPECT_EQ(stage_errors(R"({"prefer": ["a"], "anywhere": "yes"})"),
            (E{{"/stages/3/labels/anywhere", "\"anywhere\" must be true or false, got string"}}));
  EXPECT_EQ(stage_errors(R"({"rank": "largest"})"),
            (E{{"/stages/3/labels/rank", "\"rank\" must be \"biggest\", \"smallest\" or \"any\", got \"largest\""}}));
  EXPECT_EQ(stage_errors(R"({"all": "gpu"})"),
            (E{{"/stages/3/labels/all", "expected an array of label strings, got string"}}));
  EXPECT_EQ(stage_errors(R"({"any": []})").size(), 1u);
  EXPECT_EQ(stage_errors(R"(42)"), (E{{"/stages/3/labels", "stage labels must be an array of required labels or an object, got number"}}));
  // Every error is reported, not just the first; "~" and "/" are escaped.
  const auto many = stage_errors(R"({"all": [1], "a/b~c": 0, "rank": 3})");
  ASSERT_EQ(many.size(), 3u);
  std::set<std::string> pointers;
  for (const auto& e : many) pointers.insert(e.first);
  EXPECT_EQ(pointers, (std::set<std::string>{"/stages/3/labels/all/0", "/stages/3/labels/a~1b~0c", "/stages/3/labels/rank"}));
}

TEST(LabelsMatch, AllAndAny) {
  const auto s = stage(R"({"all": ["gpu", "big"], "any": ["cuda", "rocm"]})");
  EXPECT_TRUE(cl::can_run(s, node({"gpu", "big", "rocm"})));
  EXPECT_FALSE(cl::can_run(s, node({"gpu", "rocm"})));        // misses "big"
  EXPECT_FALSE(cl::can_run(s, node({"gpu", "big", "opencl"})));  // none of "any"
  EXPECT_TRUE(cl::can_run(stage("{}"), node({})));
  EXPECT_EQ(cl::preference(s, node({"gpu", "big", "cuda"})), 0);
}

TEST(LabelsMatch, PreferenceOrderAndAnywhereFallback) {
  // The Constellation experiment: tile comparisons prefer the site holding
  // the data, then a neighbour; with "anywhere" any idle site may help.
  const auto located = stage(R"({"prefer": ["site:amsterdam", "site:delft"]})");
  const auto fallback = stage(R"({"prefer": ["site:amsterdam", "site:delft"], "anywhere": true})");
  const auto ams = node({"site:amsterdam"});
  const auto delft = node({"site:delft"});
  const auto leiden = node({"site:leiden"});

  EXPECT_EQ(cl::preference(located, ams), 0);
  EXPECT_EQ(cl::preference(located, delft), 1);
  EXPECT_EQ(cl::preference(located, leiden), std::nullopt);
  EXPECT_FALSE(cl::can_run(located, leiden));

  EXPECT_EQ(cl::preference(fallback, ams), 0);
  EXPECT_EQ(cl::preference(fallback, delft), 1);
  EXPECT_EQ(cl::preference(fallback, leiden), 2);
  EXPECT_TRUE(cl::can_run(fallback, leiden));

  // Requirements still hold with the fallback.
  const auto gpu_fallback = stage(R"({"all": ["gpu"], "prefer": ["site:amsterdam"], "anywhere": true})");
  EXPECT_FALSE(cl::can_run(gpu_fallback, leiden));
  EXPECT_EQ(cl::preference(gpu_fallback, node({"gpu", "site:leiden"})), 1);
}

TEST(LabelsPick, PreferenceThenRankThenId) {
  const std::vector<cl::Executor> nodes = {
      {"n3", node({"site:delft"}, 64)},
      {"n2", node({"site:amsterdam"}, 8)},
      {"n1", node({"site:amsterdam"}, 16)},
      {"n4", node({"site:leiden"}, 128)},
      {"n0", node({"site:amsterdam"}, 16)},
  };
  auto s = stage(R"({"prefer": ["site:amsterdam", "site:delft"], "rank": "biggest"})");
  EXPECT_EQ(nodes[*cl::pick_executor(s, nodes)].id, "n0");  // n0 and n1 tie at 16: smaller id
  s.rank = cl::RankPolicy::smallest;
  EXPECT_EQ(nodes[*cl::pick_executor(s, nodes)].id, "n2");
  s.rank = cl::RankPolicy::any;
  EXPECT_EQ(nodes[*cl::pick_executor(s, nodes)].id, "n0");

  // Preference beats rank: the biggest node (n4) is not preferred at all.
  s = stage(R"({"prefer": ["site:delft"], "anywhere": true, "rank": "biggest"})");
  EXPECT_EQ(nodes[*cl::pick_executor(s, nodes)].id, "n3");
  // Order of candidates does not matter.
  std::vector<cl::Executor> reversed(nodes.rbegin(), nodes.rend());
  s = stage(R"({"prefer": ["site:amsterdam"], "rank": "biggest"})");
  EXPECT_EQ(reversed[*cl::pick_executor(s, reversed)].id, "n0");

  EXPECT_EQ(cl::pick_executor(stage(R"(["gpu"])"), nodes), std::nullopt);
  EXPECT_EQ(cl::pick_executor(s, std::span<const cl::Executor>()), std::nullopt);
}

TEST(StealOrder, SameSiteFirstAndDeterministic) {
  std::vector<cl::Executor> others;
  for (int i = 0; i < 12; ++i) {
    const char* site = i % 3 == 0 ? "site:amsterdam" : (i % 3 == 1 ? "site:delft" : "gpu");  // "gpu": no site
    others.push_back({"n" + std::to_string(i), node({site})});
  }
  const auto order = cl::steal_victim_order(std::string("amsterdam"), others, 42);
  ASSERT_EQ(order.size(), others.size());
  EXPECT_EQ(std::set<std::size_t>(order.begin(), order.end()).size(), others.size());  // a permutation
  for (std::size_t k = 0; k < order.size(); ++k) {
    EXPECT_EQ(cl::site_of(others[order[k]].labels) == std::optional<std::string>("amsterdam"), k < 4) << k;
  }
  EXPECT_EQ(order, cl::steal_victim_order(std::string("amsterdam"), others, 42));

  // Different seeds spread thieves over different victims.
  std::set<std::vector<std::size_t>> distinct;
  for (std::uint64_t seed = 0; seed < 20; ++seed) distinct.insert(cl::steal_victim_order(std::string("amsterdam"), others, seed));
  EXPECT_GT(distinct.size(), 10u);

  // Fixed result for a fixed seed, on every platform (own shuffle).
  const std::vector<cl::Executor> four = {{"a", node({"site:x"})}, {"b", node({"site:y"})},
                                          {"c", node({"site:x"})}, {"d", node({})}};
  const auto fixed = cl::steal_victim_order(std::string("x"), four, 7);
  EXPECT_EQ(std::set<std::size_t>(fixed.begin(), fixed.begin() + 2), (std::set<std::size_t>{0, 2}));
  EXPECT_EQ(fixed, cl::steal_victim_order(std::string("x"), four, 7));

  // A thief without a site: one shuffled group.
  const auto nosite = cl::steal_victim_order(std::nullopt, four, 7);
  EXPECT_EQ(std::set<std::size_t>(nosite.begin(), nosite.end()), (std::set<std::size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(cl::steal_victim_order(std::string("x"), {}, 1).empty());
}

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "flowd/item.hpp"

#include "workflow/labels.hpp"
#include "support/labels.hpp"

namespace cl = flowd::workflow;
using flowd::Json;

namespace {

using flowd::test::stage_labels;
using flowd::test::node_labels;

// pointer -> message, to assert on both.
std::vector<std::pair<std::string, std::string>> stage_errors(const char* text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : cl::parse_stage_labels(Json::parse(text), "/stages/3/labels").errors) {
    out.emplace_back(e.pointer, e.message);
  }
  return out;
}

}  // namespace

TEST(LabelsParse, NodeForms) {
  auto p = cl::parse_node_labels(Json::parse(R"(["gpu", "site:amsterdam"])"), "/nodes/0/labels");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value.names, (std::vector<std::string>{"gpu", "site:amsterdam"}));
  EXPECT_EQ(p.value.rank, 0);

  p = cl::parse_node_labels(Json::parse(R"({"names": ["gpu"], "rank": 8})"), "/nodes/0/labels");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value.rank, 8);
  EXPECT_EQ(cl::site_of(p.value), std::nullopt);
  EXPECT_EQ(cl::site_of(node_labels({"gpu", "site:delft"})), "delft");
}

TEST(LabelsParse, NodeErrorsAtPointers) {
  auto p = cl::parse_node_labels(Json::parse(R"({"names": ["gpu", 3, "", "a b", "gpu"], "rank": 1.5, "ranks": 1})"),
                                 "/nodes/1/labels");
  ASSERT_EQ(p.errors.size(), 6u);
  std::set<std::string> pointers;
  for (const auto& e : p.errors) pointers.insert(e.pointer);
  EXPECT_EQ(pointers, (std::set<std::string>{"/nodes/1/labels/names/1", "/nodes/1/labels/names/2",
                                             "/nodes/1/labels/names/3", "/nodes/1/labels/names/4",
                                             "/nodes/1/labels/rank", "/nodes/1/labels/ranks"}));

  p = cl::parse_node_labels(Json::parse(R"(["site:a", "site:b"])"), "/nodes/2/labels");
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].pointer, "/nodes/2/labels");
  EXPECT_NE(p.errors[0].message.find("at most one \"site:\" label"), std::string::npos);

  p = cl::parse_node_labels(Json::parse(R"("gpu")"), "/nodes/3/labels");
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].pointer, "/nodes/3/labels");
}

TEST(LabelsParse, StageForms) {
  const auto s = stage_labels(R"({"all": ["gpu"], "any": ["cuda", "rocm"], "prefer": ["site:amsterdam", "site:delft"],
                           "anywhere": true, "rank": "biggest"})");
  EXPECT_EQ(s.all, (std::vector<std::string>{"gpu"}));
  EXPECT_EQ(s.any, (std::vector<std::string>{"cuda", "rocm"}));
  EXPECT_EQ(s.prefer, (std::vector<std::string>{"site:amsterdam", "site:delft"}));
  EXPECT_TRUE(s.anywhere);
  EXPECT_EQ(s.rank, cl::RankPolicy::biggest);

  const auto shorthand = stage_labels(R"(["gpu", "dataset:sn"])");
  EXPECT_EQ(shorthand.all, (std::vector<std::string>{"gpu", "dataset:sn"}));
  EXPECT_EQ(stage_labels("{}").rank, cl::RankPolicy::any);
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
  const auto s = stage_labels(R"({"all": ["gpu", "big"], "any": ["cuda", "rocm"]})");
  EXPECT_TRUE(cl::can_run(s, node_labels({"gpu", "big", "rocm"})));
  EXPECT_FALSE(cl::can_run(s, node_labels({"gpu", "rocm"})));        // misses "big"
  EXPECT_FALSE(cl::can_run(s, node_labels({"gpu", "big", "opencl"})));  // none of "any"
  EXPECT_TRUE(cl::can_run(stage_labels("{}"), node_labels({})));
  EXPECT_EQ(cl::preference(s, node_labels({"gpu", "big", "cuda"})), 0);
}

TEST(LabelsMatch, PreferenceOrderAndAnywhereFallback) {
  // The Constellation experiment: tile comparisons prefer the site holding
  // the data, then a neighbour; with "anywhere" any idle site may help.
  const auto located = stage_labels(R"({"prefer": ["site:amsterdam", "site:delft"]})");
  const auto fallback = stage_labels(R"({"prefer": ["site:amsterdam", "site:delft"], "anywhere": true})");
  const auto ams = node_labels({"site:amsterdam"});
  const auto delft = node_labels({"site:delft"});
  const auto leiden = node_labels({"site:leiden"});

  EXPECT_EQ(cl::preference(located, ams), 0);
  EXPECT_EQ(cl::preference(located, delft), 1);
  EXPECT_EQ(cl::preference(located, leiden), std::nullopt);
  EXPECT_FALSE(cl::can_run(located, leiden));

  EXPECT_EQ(cl::preference(fallback, ams), 0);
  EXPECT_EQ(cl::preference(fallback, delft), 1);
  EXPECT_EQ(cl::preference(fallback, leiden), 2);
  EXPECT_TRUE(cl::can_run(fallback, leiden));

  // Requirements still hold with the fallback.
  const auto gpu_fallback = stage_labels(R"({"all": ["gpu"], "prefer": ["site:amsterdam"], "anywhere": true})");
  EXPECT_FALSE(cl::can_run(gpu_fallback, leiden));
  EXPECT_EQ(cl::preference(gpu_fallback, node_labels({"gpu", "site:leiden"})), 1);
}

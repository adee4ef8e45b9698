#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "net/cluster/placement.hpp"
#include "support/labels.hpp"

namespace cl = flowd::net::cluster;
namespace wf = flowd::workflow;
using nlohmann::json;

namespace {

using flowd::test::stage_labels;
using flowd::test::node_labels;

}  // namespace

TEST(LabelsPick, PreferenceThenRankThenId) {
  const std::vector<cl::Executor> nodes = {
      {"n3", node_labels({"site:delft"}, 64)},
      {"n2", node_labels({"site:amsterdam"}, 8)},
      {"n1", node_labels({"site:amsterdam"}, 16)},
      {"n4", node_labels({"site:leiden"}, 128)},
      {"n0", node_labels({"site:amsterdam"}, 16)},
  };
  auto s = stage_labels(R"({"prefer": ["site:amsterdam", "site:delft"], "rank": "biggest"})");
  EXPECT_EQ(nodes[*cl::pick_executor(s, nodes)].id, "n0");  // n0 and n1 tie at 16: smaller id
  s.rank = wf::RankPolicy::smallest;
  EXPECT_EQ(nodes[*cl::pick_executor(s, nodes)].id, "n2");
  s.rank = wf::RankPolicy::any;
  EXPECT_EQ(nodes[*cl::pick_executor(s, nodes)].id, "n0");

  // Preference beats rank: the biggest node (n4) is not preferred at all.
  s = stage_labels(R"({"prefer": ["site:delft"], "anywhere": true, "rank": "biggest"})");
  EXPECT_EQ(nodes[*cl::pick_executor(s, nodes)].id, "n3");
  // Order of candidates does not matter.
  std::vector<cl::Executor> reversed(nodes.rbegin(), nodes.rend());
  s = stage_labels(R"({"prefer": ["site:amsterdam"], "rank": "biggest"})");
  EXPECT_EQ(reversed[*cl::pick_executor(s, reversed)].id, "n0");

  EXPECT_EQ(cl::pick_executor(stage_labels(R"(["gpu"])"), nodes), std::nullopt);
  EXPECT_EQ(cl::pick_executor(s, std::span<const cl::Executor>()), std::nullopt);
}

TEST(StealOrder, SameSiteFirstAndDeterministic) {
  std::vector<cl::Executor> others;
  for (int i = 0; i < 12; ++i) {
    const char* site = i % 3 == 0 ? "site:amsterdam" : (i % 3 == 1 ? "site:delft" : "gpu");  // "gpu": no site
    others.push_back({"n" + std::to_string(i), node_labels({site})});
  }
  const auto order = cl::steal_victim_order(std::string("amsterdam"), others, 42);
  ASSERT_EQ(order.size(), others.size());
  EXPECT_EQ(std::set<std::size_t>(order.begin(), order.end()).size(), others.size());  // a permutation
  for (std::size_t k = 0; k < order.size(); ++k) {
    EXPECT_EQ(wf::site_of(others[order[k]].labels) == std::optional<std::string>("amsterdam"), k < 4) << k;
  }
  EXPECT_EQ(order, cl::steal_victim_order(std::string("amsterdam"), others, 42));

  // Different seeds spread thieves over different victims.
  std::set<std::vector<std::size_t>> distinct;
  for (std::uint64_t seed = 0; seed < 20; ++seed) distinct.insert(cl::steal_victim_order(std::string("amsterdam"), others, seed));
  EXPECT_GT(distinct.size(), 10u);

  // Fixed result for a fixed seed, on every platform (own shuffle).
  const std::vector<cl::Executor> four = {{"a", node_labels({"site:x"})}, {"b", node_labels({"site:y"})},
                                          {"c", node_labels({"site:x"})}, {"d", node_labels({})}};
  const auto fixed = cl::steal_victim_order(std::string("x"), four, 7);
  EXPECT_EQ(std::set<std::size_t>(fixed.begin(), fixed.begin() + 2), (std::set<std::size_t>{0, 2}));
  EXPECT_EQ(fixed, cl::steal_victim_order(std::string("x"), four, 7));

  // A thief without a site: one shuffled group.
  const auto nosite = cl::steal_victim_order(std::nullopt, four, 7);
  EXPECT_EQ(std::set<std::size_t>(nosite.begin(), nosite.end()), (std::set<std::size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(cl::steal_victim_order(std::string("x"), {}, 1).empty());
}

// The placement cost model and planner (engine/placement): predictions by
// hand on a three-site chain, the exhaustive search and the min-max DP
// against a brute force written here on random chains, and a diamond.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "placement/planner.hpp"

using namespace flowd::placement;
namespace placement = flowd::placement;  // flowd::Placement (an array's) is another

namespace {

// A (1 node), B (2 nodes), C (1 node at half speed); A→B 10 MB/s, 10 ms,
// 1 ms a message; B→C 100 MB/s, 2 ms. A source reading 4 MB an item, a
// 0.4 s segmentation that keeps 100 kB, a sink writing 10 kB; 100 items.
Problem hand_problem() {
  Problem p;
  p.sites.sites = {{"A", "site:A", 1, 1.0}, {"B", "site:B", 2, 1.0}, {"C", "site:C", 1, 0.5}};
  p.sites.links = {{10e6, 0.010, 0.001}, {100e6, 0.002, 0.0}};
  StageCost src{"src", 0.01, 4e6, 1, {1}, true, 4e6, false};
  StageCost seg{"seg", 0.4, 1e5, 1, {2}, false, 0, false};
  StageCost sink{"sink", 0.02, 1e4, 1, {}, false, 0, true};
  p.stages = {src, seg, sink};
  p.items = 100;
  return p;
}

}  // namespace

TEST(PlacementModel, PredictionsByHand) {
  const Problem p = hand_problem();
  // Read at A, segment at B, write at C: the 4 MB items fill link A→B
  // (0.4 s + 1 ms each), the bottleneck.
  const Prediction a = predict(p, {0, 1, 2});
  EXPECT_NEAR(a.site_seconds[0], 0.01, 1e-12);
  EXPECT_NEAR(a.site_seconds[1], 0.2, 1e-12);
  EXPECT_NEAR(a.site_seconds[2], 0.04, 1e-12);
  EXPECT_NEAR(a.link_seconds[0], 0.401, 1e-12);
  EXPECT_NEAR(a.link_seconds[1], 0.001, 1e-12);
  EXPECT_EQ(a.bottleneck_name, "link A -> B");
  EXPECT_NEAR(a.total, 99 * 0.401 + (0.01 + 0.2 + 0.04 + 0.401 + 0.001 + 0.012), 1e-9);
  // Everything at A: its one node is the bottleneck (0.43 s); the results
  // cross both links.
  const Prediction b = predict(p, {0, 0, 0});
  EXPECT_EQ(b.bottleneck_name, "site A");
  EXPECT_NEAR(b.link_seconds[0], 1e4 / 10e6 + 0.001, 1e-12);
  EXPECT_NEAR(b.link_bytes[1], 1e4, 1e-9);
  EXPECT_NEAR(b.total, 99 * 0.43 + (0.43 + 0.002 + 1e-4 + 0.012), 1e-9);
  // Read at B, segment back at A, write at C: the tiles go back over
  // B -> A, and the labels forward over A -> B -> C.
  const Prediction c = predict(p, {1, 0, 2});
  EXPECT_NEAR(c.link_seconds[0], 0.401 + 0.011, 1e-12);  // A -> B: input, then labels
  EXPECT_NEAR(c.link_seconds[2], 0.401, 1e-12);          // B -> A: tiles
  EXPECT_NEAR(c.link_seconds[1], 0.001, 1e-12);          // B -> C
  EXPECT_NEAR(c.link_seconds[3], 0.0, 1e-12);            // C -> B: nothing
  EXPECT_EQ(c.bottleneck_name, "link A -> B");
  // The source runs on one of B's two nodes: 0.01 s, not 0.01 / 2.
  EXPECT_NEAR(c.site_seconds[1], 0.01, 1e-12);
  EXPECT_NEAR(c.total, 99 * 0.412 + (0.4 + 0.01 + 0.04 + 0.412 + 0.401 + 0.001 + 0.022), 1e-9);
  // Sites that do not exist, or a fixed stage elsewhere.
  EXPECT_FALSE(feasible(p, {3, 0, 2}));
  Problem fixed = p;
  fixed.fixed = {std::nullopt, std::nullopt, std::size_t{0}};
  EXPECT_FALSE(feasible(fixed, {0, 1, 2}));
  EXPECT_TRUE(feasible(fixed, {0, 1, 0}));
}

TEST(PlacementModel, SitesOnOneHostShareItsCores) {
  // A and C on one machine of 1 core: read at A, segment at B, write at C
  // puts 0.01 + 0.02 / 0.5 = 0.05 s an item on it, below the link's 0.401.
  Problem p = hand_problem();
  p.sites.hosts = {{"box", 1.0, {0, 2}}};
  const Prediction a = predict(p, {0, 1, 2});
  ASSERT_EQ(a.host_seconds.size(), 1u);
  EXPECT_NEAR(a.host_seconds[0], 0.01 + 0.02 / 0.5, 1e-12);
  EXPECT_EQ(a.bottleneck_name, "link A -> B");
  // Everything at A and C: 0.41 + 0.04 s an item on the one core, above
  // site A's own 0.41 s. The host is a capacity: it does not add to an
  // item's way through (the Σ part).
  const Prediction b = predict(p, {0, 0, 2});
  EXPECT_NEAR(b.host_seconds[0], 0.41 + 0.04, 1e-12);
  EXPECT_EQ(b.bottleneck_name, "host box");
  const Prediction b_alone = predict(hand_problem(), {0, 0, 2});
  EXPECT_EQ(b_alone.bottleneck_name, "site A");
  const double sum = b_alone.total - 99 * b_alone.bottleneck;
  EXPECT_NEAR(b.total, 99 * 0.45 + sum, 1e-9);
  // With two cores the host no longer binds.
  p.sites.hosts[0].cores = 2;
  EXPECT_EQ(predict(p, {0, 0, 2}).bottleneck_name, "site A");
}

TEST(PlacementModel, AHostsCpuPaysForWhatItsSitesSendAndReceive) {
  // All three sites on one core that spends 10 ms of CPU per MB at each
  // end of a crossing.
  Problem p = hand_problem();
  p.sites.coordinator = 2;  // flowd run at C, which receives the results
  p.sites.hosts = {{"box", 1.0, {0, 1, 2}, 10e-3 / 1e6}};
  // Read at A, segment at B, write at C: the 4 MB input crosses A -> B
  // (paid by A and by B), the 100 kB labels B -> C (by B and C): 8.2 MB,
  // 0.082 s, on top of 0.01 + 0.4 + 0.02 / 0.5 s of compute.
  const Prediction a = predict(p, {0, 1, 2});
  EXPECT_NEAR(a.host_seconds[0], 0.45 + 0.082, 1e-12);
  EXPECT_EQ(a.bottleneck_name, "host box");
  // Everything at A: only the sink's 10 kB of results go to C, passing B,
  // which forwards them at the network's level and pays nothing.
  const Prediction b = predict(p, {0, 0, 0});
  EXPECT_NEAR(b.host_seconds[0], 0.43 + 2e4 * 1e-8, 1e-12);
  // The links' own times do not change.
  EXPECT_NEAR(a.link_seconds[0], predict(hand_problem(), {0, 1, 2}).link_seconds[0], 1e-15);
  // Segment at C too: on a worker node there, while the sink runs in the
  // coordinator's process at C. The 100 kB labels cross no link but move
  // between two processes on C, which pays both ends (+2e5 B); the input
  // crosses A -> C (paid by A and C).
  const Prediction c = predict(p, {0, 2, 2});
  EXPECT_NEAR(c.host_seconds[0], 0.01 + 0.42 / 0.5 + (8e6 + 2e5) * 1e-8, 1e-12);
  EXPECT_NEAR(c.link_seconds[1], predict(hand_problem(), {0, 2, 2}).link_seconds[1], 1e-15);
  // With the coordinator at A instead, the source and the sink at A run in
  // its process and segment on a worker node at A: the 4 MB items and the
  // 100 kB labels move between the two (A pays both ends of each), the
  // sink's results leave for C as before.
  p.sites.coordinator = 0;
  EXPECT_NEAR(predict(p, {0, 0, 0}).host_seconds[0], 0.43 + (8e6 + 2e5) * 1e-8 + 2e4 * 1e-8, 1e-12);
  p.sites.coordinator = 2;
  // On two cores, the same work over two.
  p.sites.hosts[0].cores = 2;
  EXPECT_NEAR(predict(p, {0, 1, 2}).host_seconds[0], (0.45 + 0.082) / 2, 1e-12);
  p.sites.hosts[0].cores = 1;
  // Read and segment at B, whose two worker nodes share the segmentation:
  // half of its tasks pull the 4 MB item from the other node (B pays both
  // ends, +4e6 B on average), besides the input crossing A -> B and the
  // labels B -> C.
  EXPECT_NEAR(predict(p, {1, 1, 2}).host_seconds[0], 0.45 + (8e6 + 4e6 + 2e5) * 1e-8, 1e-12);
  // A site of one node moves nothing between its nodes.
  p.sites.sites[1].nodes = 1;
  EXPECT_NEAR(predict(p, {1, 1, 2}).host_seconds[0], 0.45 + (8e6 + 2e5) * 1e-8, 1e-12);
}

TEST(PlacementModel, ABurstySourceDelaysTheStreamsEnds) {
  // The source makes its 4 MB items in bursts of 4: one call of 4 × 10 ms,
  // then three at once.
  Problem p = hand_problem();
  p.stages[0].burst = 4;
  // Read at A, segment at B, write at C: the bottleneck (link A → B, 0.401
  // s an item) is slower than the source (0.01 s), so only the first item's
  // wait counts: 3 × 0.01 s more.
  const Prediction a = predict(p, {0, 1, 2});
  EXPECT_NEAR(a.burst_seconds, 3 * 0.01, 1e-12);
  EXPECT_NEAR(a.total, predict(hand_problem(), {0, 1, 2}).total + 0.03, 1e-9);
  // A slow source (1 s an item) ahead of that link: the last four items
  // reach the link at once and leave 0.401 s apart.
  p.stages[0].seconds = 1.0;
  Problem steady = p;
  steady.stages[0].burst = 1;
  const Prediction b = predict(p, {0, 1, 2});
  EXPECT_NEAR(b.burst_seconds, 3 * 0.401, 1e-12);
  EXPECT_NEAR(b.total, predict(steady, {0, 1, 2}).total + 3 * 0.401, 1e-9);
  // Everything at A: what the source's own site does meanwhile is the
  // source's work, and the slowest of the rest is the results' link (1 kB
  // per item and 1 ms a message: 0.002 s).
  const Prediction c = predict(p, {0, 0, 0});
  EXPECT_NEAR(c.burst_seconds, 3 * (1e4 / 10e6 + 0.001), 1e-12);
  // A host the source's site is on shares its work too: not counted.
  p.sites.hosts = {{"box", 1.0, {0, 1, 2}, 0.0}};
  EXPECT_NEAR(predict(p, {0, 1, 2}).burst_seconds, 3 * 0.401, 1e-12);
  // One the source is not on counts: B's and C's one core takes 0.4 + 0.02
  // / 0.5 = 0.44 s an item, more than the link.
  p.sites.hosts = {{"box", 1.0, {1, 2}, 0.0}};
  const Prediction d = predict(p, {0, 1, 2});
  EXPECT_NEAR(d.host_seconds[0], 0.44, 1e-12);
  EXPECT_NEAR(d.burst_seconds, 3 * 0.44, 1e-12);
}

TEST(PlacementPlanner, TheBestOfTheHandChain) {
  const Problem p = hand_problem();
  // Everything on B: the input crosses A→B (the bottleneck either way),
  // and B's two nodes compute faster than A's one or C's slow one.
  for (const Plan& plan : {plan_exhaustive(p), plan_dp(p)}) {
    SCOPED_TRACE(plan.method);
    EXPECT_EQ(plan.where, (placement::Placement{1, 1, 1}));
    EXPECT_NEAR(plan.predicted.total, 99 * 0.401 + (0.215 + 0.401 + 1e-4 + 0.012), 1e-9);
  }
  EXPECT_EQ(plan(p).method, "exhaustive");
  EXPECT_EQ(plan(p, 1).method, "min-max DP");
  EXPECT_EQ(fused_groups(p, {1, 1, 1}), (std::vector<std::vector<std::size_t>>{{0, 1, 2}}));
  EXPECT_EQ(fused_groups(p, {0, 1, 1}), (std::vector<std::vector<std::size_t>>{{0}, {1, 2}}));
}

namespace {

// The total of a chain placement, from the formula directly: stage i reads
// stage i − 1; stage 0, the source, reads the input at site 0 on one node
// of its site; the last writes results that go to the last site.
double reference_total(const Problem& p, const placement::Placement& w) {
  const std::size_t m = p.sites.size(), n = p.stages.size();
  // Directed links: forward j (site j to j + 1), backward m − 1 + j.
  std::vector<double> site(m, 0), serial(m, 0), link(2 * (m - 1), 0), bytes(2 * (m - 1), 0);
  auto add = [&](std::size_t from, std::size_t to, double b, double items) {
    for (std::size_t j = std::min(from, to); j < std::max(from, to); ++j) {
      const std::size_t d = to > from ? j : m - 1 + j;
      link[d] += b / p.sites.links[j].bandwidth + items * p.sites.links[j].message_overhead;
      bytes[d] += b + items;
    }
  };
  add(0, w[0], p.stages[0].input_bytes, 1);
  for (std::size_t i = 0; i < n; ++i) {
    site[w[i]] += p.stages[i].seconds / (p.sites.sites[w[i]].speed * p.sites.sites[w[i]].nodes);
    if (p.stages[i].source) serial[w[i]] += p.stages[i].seconds / p.sites.sites[w[i]].speed;
    add(w[i], i + 1 < n ? w[i + 1] : m - 1, p.stages[i].bytes_out, p.stages[i].items_out);
  }
  for (std::size_t j = 0; j < m; ++j) site[j] = std::max(site[j], serial[j]);
  double worst = 0, sum = 0;
  for (double s : site) worst = std::max(worst, s), sum += s;
  for (std::size_t d = 0; d < link.size(); ++d) {
    worst = std::max(worst, link[d]);
    sum += link[d] + (bytes[d] > 0 ? p.sites.links[d % (m - 1)].latency : 0);
  }
  return (static_cast<double>(p.items) - 1) * worst + sum;
}

Problem random_chain(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> stages(1, 6), sites(2, 4), nodes(1, 4);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Problem p;
  const int m = sites(rng), n = stages(rng);
  for (int j = 0; j < m; ++j) p.sites.sites.push_back({"s" + std::to_string(j), "", nodes(rng), 0.25 + 2 * u(rng)});
  for (int j = 0; j + 1 < m; ++j) p.sites.links.push_back({1e6 * (0.5 + 50 * u(rng)), 0.01 * u(rng), 0.002 * u(rng)});
  for (int i = 0; i < n; ++i) {
    StageCost s;
    s.name = "st" + std::to_string(i);
    s.seconds = u(rng) < 0.2 ? 0.0 : u(rng);
    s.bytes_out = 1e6 * u(rng) * u(rng) * 4;
    s.items_out = 1 + std::floor(3 * u(rng));
    if (i + 1 < n) s.consumers = {static_cast<std::size_t>(i + 1)};
    s.source = i == 0;
    s.input_bytes = i == 0 ? 1e6 * 8 * u(rng) : 0;
    s.sink = i + 1 == n;
    p.stages.push_back(s);
  }
  p.items = 1 + static_cast<std::uint64_t>(200 * u(rng));
  return p;
}

}  // namespace

TEST(PlacementPlanner, BothSearchesFindTheBruteForceOptimumOnRandomChains) {
  std::mt19937_64 rng(17);
  for (int t = 0; t < 300; ++t) {
    const Problem p = random_chain(rng);
    SCOPED_TRACE("chain " + std::to_string(t) + ": " + std::to_string(p.stages.size()) + " stages on " +
                 std::to_string(p.sites.size()) + " sites");
    // Brute force over every placement with the reference formula: the best
    // of all, and the best of those where every item flows forward.
    double best = INFINITY, best_forward = INFINITY;
    placement::Placement w(p.stages.size(), 0);
    for (;;) {
      const double r = reference_total(p, w);
      EXPECT_NEAR(predict(p, w).total, r, 1e-9 * std::max(1.0, r)) << "the model agrees with the formula";
      best = std::min(best, r);
      if (std::is_sorted(w.begin(), w.end())) best_forward = std::min(best_forward, r);
      std::size_t i = 0;
      while (i < w.size() && ++w[i] == p.sites.size()) w[i++] = 0;
      if (i == w.size()) break;
    }
    const Plan e = plan_exhaustive(p), d = plan_dp(p);
    EXPECT_NEAR(e.predicted.total, best, 1e-9 * best);
    EXPECT_NEAR(d.predicted.total, best_forward, 1e-9 * best_forward);
    EXPECT_TRUE(std::is_sorted(d.where.begin(), d.where.end()));
    EXPECT_NEAR(predict(p, d.where).total, d.predicted.total, 1e-12 * best);
  }
}

// A diamond (src → a, src → b, a + b → sink): the branches may sit on
// different sites, which the exhaustive search tries and the DP (contiguous
// in one order) may not; the DP is never better, and the exhaustive search
// is the best of every placement. With the source and the sink fixed to
// the last site (a coordinator there), both keep them there.
TEST(PlacementPlanner, ADiamondIsSearchedWholeByTheExhaustiveSearch) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int t = 0; t < 50; ++t) {
    Problem p = random_chain(rng);
    p.stages.resize(1);
    p.stages[0].consumers = {1, 2};
    p.stages[0].sink = false;
    p.stages.push_back({"a", u(rng), 1e6 * u(rng), 1, {3}, false, 0, false});
    p.stages.push_back({"b", u(rng), 1e6 * u(rng), 1, {3}, false, 0, false});
    p.stages.push_back({"sink", 0.1 * u(rng), 1e4, 1, {}, false, 0, true});
    const Plan e = plan_exhaustive(p), d = plan_dp(p);
    EXPECT_LE(e.predicted.total, d.predicted.total * (1 + 1e-12));
    Problem pinned = p;
    const std::size_t last = p.sites.size() - 1;
    pinned.fixed = {last, std::nullopt, std::nullopt, last};
    for (const Plan& f : {plan_exhaustive(pinned), plan_dp(pinned)}) {
      EXPECT_EQ(f.where[0], last) << f.method;
      EXPECT_EQ(f.where[3], last) << f.method;
    }
    placement::Placement w(4, 0);
    for (;;) {
      if (feasible(p, w)) {
        EXPECT_LE(e.predicted.total, predict(p, w).total * (1 + 1e-12));
      }
      std::size_t i = 0;
      while (i < w.size() && ++w[i] == p.sites.size()) w[i++] = 0;
      if (i == w.size()) break;
    }
  }
}

TEST(PlacementPlanner, BadProblemsAreRefusedNamingTheStage) {
  Problem p = hand_problem();
  p.stages[1].consumers = {0};
  try {
    plan(p);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'seg'"), std::string::npos) << e.what();
  }
  p = hand_problem();
  p.stages[2].seconds = -1;
  EXPECT_THROW(plan(p), std::invalid_argument);
}

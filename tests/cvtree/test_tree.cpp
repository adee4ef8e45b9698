// Neighbour-joining against trees it must recover exactly (additive
// matrices), Wikipedia's worked example and the documented tie-breaking; the
// Newick reader and writer; the Robinson-Foulds distance against a plain
// set-of-splits reference.
#include "tree.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace flowd::cvtree {
namespace {

// ---------------------------------------------------------------- helpers

// An unrooted tree with branch lengths: nodes 0..leaves-1 are the leaves.
struct TestTree {
  std::size_t leaves = 0;
  std::vector<std::vector<std::pair<std::size_t, double>>> adjacent;
  std::vector<std::string> names;
};

// A random binary unrooted tree: three leaves round a centre, then each
// further leaf hung from the middle of a random edge. Lengths in [0.05, 1].
TestTree random_tree(std::size_t leaves, std::mt19937_64& rng) {
  TestTree t;
  t.leaves = leaves;
  t.adjacent.resize(leaves);
  for (std::size_t i = 0; i < leaves; ++i)
    t.names.push_back("t" + std::to_string(i));
  auto length = [&] { return 0.05 + 0.95 * static_cast<double>(rng() % 1000000) / 1e6; };
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  auto link = [&](std::size_t a, std::size_t b, double len) {
    t.adjacent[a].emplace_back(b, len);
    t.adjacent[b].emplace_back(a, len);
    edges.emplace_back(a, b);
  };
  auto unlink = [&](std::size_t a, std::size_t b) {
    auto drop = [&](std::size_t x, std::size_t y) {
      auto& adj = t.adjacent[x];
      adj.erase(std::find_if(adj.begin(), adj.end(), [&](const auto& e) { return e.first == y; }));
    };
    drop(a, b);
    drop(b, a);
  };
  const std::size_t centre = t.adjacent.size();
  t.adjacent.emplace_back();
  for (std::size_t i = 0; i < std::min<std::size_t>(leaves, 3); ++i)
    link(centre, i, length());
  for (std::size_t leaf = 3; leaf < leaves; ++leaf) {
    const std::size_t e = rng() % edges.size();
    const auto [a, b] = edges[e];
    edges.erase(edges.begin() + static_cast<std::ptrdiff_t>(e));
    unlink(a, b);
    const std::size_t mid = t.adjacent.size();
    t.adjacent.emplace_back();
    link(a, mid, length());
    link(mid, b, length());
    link(mid, leaf, length());
  }
  return t;
}

// Path lengths between the leaves, row-major.
std::vector<double> path_lengths(const TestTree& t) {
  const std::size_t n = t.leaves;
  std::vector<double> d(n * n, 0.0);
  for (std::size_t from = 0; from < n; ++from) {
    std::vector<double> dist(t.adjacent.size(), -1.0);
    std::vector<std::size_t> stack{from};
    dist[from] = 0.0;
    while (!stack.empty()) {
      const std::size_t v = stack.back();
      stack.pop_back();
      for (const auto& [w, len] : t.adjacent[v])
        if (dist[w] < 0.0) {
          dist[w] = dist[v] + len;
          stack.push_back(w);
        }
    }
    for (std::size_t to = 0; to < n; ++to)
      d[from * n + to] = dist[to];
  }
  return d;
}

// The tree hung from `root`, children in a shuffled order.
ParsedTree rooted_at(const TestTree& t, std::size_t root, std::mt19937_64& rng) {
  ParsedTree out;
  struct Item {
    std::size_t v, from, parent;
    double length;
  };
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<Item> stack{{root, none, none, 0.0}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const std::size_t index = out.nodes.size();
    NewickNode& node = out.nodes.emplace_back();
    if (it.v < t.leaves) node.name = t.names[it.v];
    if (it.parent != none) {
      node.length = it.length;
      out.nodes[it.parent].children.push_back(index);
    }
    auto next = t.adjacent[it.v];
    std::shuffle(next.begin(), next.end(), rng);
    for (const auto& [w, len] : next)
      if (w != it.from) stack.push_back({w, it.v, index, len});
  }
  return out;
}

// Path lengths between the named leaves of a parsed tree, in the order of
// `names`; every branch must have a length.
std::vector<double> path_lengths(const ParsedTree& tree, const std::vector<std::string>& names) {
  TestTree t;
  t.leaves = names.size();
  t.names = names;
  t.adjacent.resize(names.size());
  std::map<std::size_t, std::size_t> node_to_vertex;
  for (std::size_t v = 0; v < tree.nodes.size(); ++v) {
    const NewickNode& node = tree.nodes[v];
    if (node.children.empty()) {
      const auto at = std::find(names.begin(), names.end(), node.name);
      EXPECT_NE(at, names.end()) << node.name;
      node_to_vertex[v] = static_cast<std::size_t>(at - names.begin());
    } else {
      node_to_vertex[v] = t.adjacent.size();
      t.adjacent.emplace_back();
    }
  }
  for (std::size_t v = 0; v < tree.nodes.size(); ++v)
    for (const std::size_t c : tree.nodes[v].children) {
      EXPECT_TRUE(tree.nodes[c].length.has_value());
      const double len = tree.nodes[c].length.value_or(0.0);
      t.adjacent[node_to_vertex[v]].emplace_back(node_to_vertex[c], len);
      t.adjacent[node_to_vertex[c]].emplace_back(node_to_vertex[v], len);
    }
  return path_lengths(t);
}

std::vector<std::string> leaf_names(const ParsedTree& tree) {
  std::vector<std::string> names;
  for (const NewickNode& node : tree.nodes)
    if (node.children.empty()) names.push_back(node.name);
  std::sort(names.begin(), names.end());
  return names;
}

// Expects `f` to throw std::invalid_argument whose message holds `part`.
template <class F>
void expect_invalid(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no exception, expected one containing: " << part;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "message: " << e.what() << "\nexpected: " << part;
  }
}

std::string nj(const std::vector<double>& d, const std::vector<std::string>& names) {
  return neighbour_joining(d, names.size(), names);
}

// ---------------------------------------------------------------- neighbour-joining

TEST(CvtreeNeighbourJoining, RecoversRandomAdditiveTrees) {
  std::mt19937_64 rng(20240611);
  for (std::size_t n = 4; n <= 30; ++n)
    for (int rep = 0; rep < 3; ++rep) {
      const TestTree truth = random_tree(n, rng);
      const std::vector<double> d = path_lengths(truth);
      const std::string newick = neighbour_joining(d, n, truth.names);
      const ParsedTree got = parse_newick(newick);
      SCOPED_TRACE(newick);
      EXPECT_EQ(leaf_names(got), leaf_names(rooted_at(truth, n, rng)));
      EXPECT_EQ(robinson_foulds(got, rooted_at(truth, n, rng)), 0u) << "n = " << n;
      // Binary and unrooted: a root of three, every other inner node two.
      EXPECT_EQ(got.nodes[0].children.size(), 3u);
      std::size_t inner = 0;
      for (std::size_t v = 1; v < got.nodes.size(); ++v)
        if (!got.nodes[v].children.empty()) {
          EXPECT_EQ(got.nodes[v].children.size(), 2u);
          ++inner;
        }
      EXPECT_EQ(inner, n - 3);
      // Every branch length recovered: the path lengths of the output are the input matrix.
      const std::vector<double> back = path_lengths(got, truth.names);
      for (std::size_t k = 0; k < n * n; ++k)
        EXPECT_NEAR(back[k], d[k], 1e-9) << "n = " << n << ", entry " << k;
    }
}

TEST(CvtreeNeighbourJoining, InputOrderDoesNotChangeAnAdditiveTree) {
  std::mt19937_64 rng(7);
  for (const std::size_t n : {5u, 12u, 30u}) {
    const TestTree truth = random_tree(n, rng);
    const std::vector<double> d = path_lengths(truth);
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i)
      order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<double> permuted(n * n);
    std::vector<std::string> names(n);
    for (std::size_t i = 0; i < n; ++i) {
      names[i] = truth.names[order[i]];
      for (std::size_t j = 0; j < n; ++j)
        permuted[i * n + j] = d[order[i] * n + order[j]];
    }
    EXPECT_EQ(robinson_foulds(parse_newick(nj(d, truth.names)), parse_newick(nj(permuted, names))), 0u);
  }
}

// Wikipedia, "Neighbor joining", the worked example.
TEST(CvtreeNeighbourJoining, WikipediaExample) {
  const std::vector<double> d = {0, 5, 9, 9, 8,   //
                                 5, 0, 10, 10, 9,  //
                                 9, 10, 0, 8, 7,   //
                                 9, 10, 8, 0, 3,   //
                                 8, 9, 7, 3, 0};
  const std::vector<std::string> names = {"a", "b", "c", "d", "e"};
  // Q(a, b) = -50 is the unique minimum: a and b join first at u with 2 and 3.
  // Then Q(c, u) = Q(d, e) = -28 tie; the active order is c, d, e, u, and
  // (c, u) = positions (0, 3) comes before (d, e) = (1, 2): c and u join at v
  // with 4 and 3 (the article makes the same choice). d, e and v are left:
  // d 2, e 1, v 2 from the centre.
  EXPECT_EQ(nj(d, names), "(d:2,e:1,(c:4,(a:2,b:3):3):2);");

  const ParsedTree t = parse_newick(nj(d, names));
  const ParsedTree expected = parse_newick("((a,b),c,(d,e));");
  EXPECT_EQ(robinson_foulds(t, expected), 0u);
  // The tree is additive: it gives back the matrix.
  const std::vector<double> back = path_lengths(t, names);
  for (std::size_t k = 0; k < d.size(); ++k)
    EXPECT_DOUBLE_EQ(back[k], d[k]) << k;
}

TEST(CvtreeNeighbourJoining, TiesJoinTheEarliestPairInActiveOrder) {
  // All distances equal: every Q ties at each step. Step 1 joins (a, b) into
  // u (1, 1); then c, d, e, u all tie at Q = -6 and (c, d) joins into w (1, 1);
  // left e, u, w with d(e, u) = d(e, w) = 1, d(u, w) = 0.
  const std::vector<std::string> names = {"a", "b", "c", "d", "e"};
  std::vector<double> d(25, 2.0);
  for (std::size_t i = 0; i < 5; ++i)
    d[i * 5 + i] = 0.0;
  const std::string first = nj(d, names);
  EXPECT_EQ(first, "(e:1,(a:1,b:1):0,(c:1,d:1):0);");
  for (int run = 0; run < 5; ++run)
    EXPECT_EQ(nj(d, names), first);

  // With four taxa Q(i, j) = Q(k, l) for complementary pairs always. Here the
  // tree is ((a, d), (b, c)), so (a, d) and (b, c) tie for the minimum; the
  // rule takes (a, d), positions (0, 3), over (b, c), (1, 2), though the
  // latter has the smaller second index.
  const std::vector<std::string> four = {"a", "b", "c", "d"};
  const std::vector<double> d4 = {0, 4, 4, 2,  //
                                  4, 0, 2, 4,  //
                                  4, 2, 0, 4,  //
                                  2, 4, 4, 0};
  EXPECT_EQ(nj(d4, four), "(b:1,c:1,(a:1,d:1):2);");
}

TEST(CvtreeNeighbourJoining, OneTwoAndThreeTaxa) {
  EXPECT_EQ(neighbour_joining(std::vector<double>{0.0}, 1, std::vector<std::string>{"only"}), "only;");
  EXPECT_EQ(nj({0, 3, 3, 0}, {"a", "b"}), "(a:1.5,b:1.5);");
  EXPECT_EQ(nj({0, 0, 0, 0}, {"a", "b"}), "(a:0,b:0);");
  EXPECT_EQ(nj({0, 3, 4, 3, 0, 5, 4, 5, 0}, {"a", "b", "c"}), "(a:1,b:2,c:3);");
  // Lengths print with 17 significant digits.
  EXPECT_EQ(nj({0, 0.2, 0.2, 0}, {"a", "b"}), "(a:0.10000000000000001,b:0.10000000000000001);");
}

TEST(CvtreeNeighbourJoining, KeepsNegativeBranchLengths) {
  // Not a metric (1 + 1 < 5): the three-point formula puts a at -1.5.
  EXPECT_EQ(nj({0, 1, 1, 1, 0, 5, 1, 5, 0}, {"a", "b", "c"}), "(a:-1.5,b:2.5,c:2.5);");
}

TEST(CvtreeNeighbourJoining, NearlySymmetricInputUsesTheMean) {
  const double up = 1.0;
  const double down = 1.0 + 4e-16;  // within 1e-12 relative
  const std::string t = nj({0, up, down, 0}, {"a", "b"});
  const ParsedTree p = parse_newick(t);
  EXPECT_EQ(p.nodes[1].length, (up + down) / 4.0);
}

TEST(CvtreeNeighbourJoining, RejectsBadInput) {
  const std::vector<std::string> ab = {"a", "b"};
  const std::vector<std::string> abc = {"a", "b", "c"};
  const std::vector<double> ok3 = {0, 1, 2, 1, 0, 3, 2, 3, 0};
  expect_invalid([&] { neighbour_joining({}, 0, {}); }, "no taxa");
  expect_invalid([&] { neighbour_joining(std::vector<double>{0, 1, 1}, 2, ab); }, "has 3 entries, n * n expected for n = 2");
  expect_invalid([&] { neighbour_joining(ok3, 3, ab); }, "2 names for n = 3");
  expect_invalid([&] { nj(ok3, {"a", "", "c"}); }, "name 1 is empty");
  expect_invalid([&] { nj(ok3, {"x", "y", "x"}); }, "names 0 and 2 are both 'x'");

  auto with = [&](std::size_t i, std::size_t j, double v) {
    std::vector<double> d = ok3;
    d[i * 3 + j] = v;
    return d;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  expect_invalid([&] { nj(with(0, 1, nan), abc); }, "d(0, 1) (row 0, column 1) is not finite");
  expect_invalid([&] { nj(with(1, 2, inf), abc); }, "d(1, 2) (row 1, column 2) is not finite: inf");
  expect_invalid([&] { nj(with(2, 0, -inf), abc); }, "d(2, 0) (row 2, column 0) is not finite: -inf");
  expect_invalid([&] { nj(with(2, 0, -1.0), abc); }, "d(2, 0) (row 2, column 0) is negative: -1");
  expect_invalid([&] { nj(with(1, 1, 0.5), abc); }, "d(1, 1) (row 1, column 1) is on the diagonal and not zero: 0.5");
  expect_invalid([&] { nj(with(2, 1, 3.0 + 1e-9), abc); },
                 "d(1, 2) (row 1, column 2) = 3 and d(2, 1) = 3.0000000010000001 differ by more than 1e-12 relative");
  expect_invalid([&] { nj(with(1, 0, 0.0), abc); }, "d(0, 1) (row 0, column 1) = 1 and d(1, 0) = 0 differ");
  expect_invalid([&] { nj({0, 1e308, 1e308, 0}, ab); }, "too large");
  EXPECT_NO_THROW(nj(with(2, 1, 3.0 * (1 + 1e-13)), abc));
}

// ---------------------------------------------------------------- Newick

TEST(CvtreeNewick, ParsesTheStructure) {
  const ParsedTree t = parse_newick("(A:0.1,B:0.2,(C:0.3,D:0.4):0.05);");
  ASSERT_EQ(t.nodes.size(), 6u);
  EXPECT_EQ(t.nodes[0].children, (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_FALSE(t.nodes[0].length.has_value());
  EXPECT_EQ(t.nodes[1].name, "A");
  EXPECT_EQ(t.nodes[1].length, 0.1);
  EXPECT_EQ(t.nodes[2].name, "B");
  EXPECT_EQ(t.nodes[3].name, "");
  EXPECT_EQ(t.nodes[3].length, 0.05);
  EXPECT_EQ(t.nodes[3].children, (std::vector<std::size_t>{4, 5}));
  EXPECT_EQ(t.nodes[4].name, "C");
  EXPECT_EQ(t.nodes[5].length, 0.4);
  EXPECT_EQ(to_newick(t), "(A:0.10000000000000001,B:0.20000000000000001,(C:0.29999999999999999,D:0.40000000000000002):"
                          "0.050000000000000003);");
}

TEST(CvtreeNewick, WhitespaceCommentsLabelsAndOptionalLengths) {
  const ParsedTree t = parse_newick(" ( A : 1 ,[a comment] 'B b' :2e-1,\n(c,d)inner:+3 ) root:0 ; \n");
  ASSERT_EQ(t.nodes.size(), 6u);
  EXPECT_EQ(t.nodes[0].name, "root");
  EXPECT_EQ(t.nodes[0].length, 0.0);
  EXPECT_EQ(t.nodes[1].name, "A");
  EXPECT_EQ(t.nodes[1].length, 1.0);
  EXPECT_EQ(t.nodes[2].name, "B b");
  EXPECT_EQ(t.nodes[2].length, 0.2);
  EXPECT_EQ(t.nodes[3].name, "inner");
  EXPECT_EQ(t.nodes[3].length, 3.0);
  EXPECT_FALSE(t.nodes[4].length.has_value());
  EXPECT_EQ(to_newick(t), "(A:1,'B b':0.20000000000000001,(c,d)inner:3)root:0;");
  // Underscores stay underscores; a single leaf is a tree.
  EXPECT_EQ(parse_newick("(a_b,c);").nodes[1].name, "a_b");
  const ParsedTree one = parse_newick("only;");
  ASSERT_EQ(one.nodes.size(), 1u);
  EXPECT_EQ(one.nodes[0].name, "only");
  EXPECT_EQ(parse_newick("(,);").nodes.size(), 3u);
}

TEST(CvtreeNewick, RoundTrips) {
  for (const char* text : {"(A:1,B:2,(C:3,D:4):5);", "((a,b),(c,d));", "(a,(b,(c,(d,e)x)y)z)r;", "leaf:2;",
                           "('a b':1,'it''s':2,'(x)':3,'p:q':4,'s;t':5,'u,v':6,'[w]':7,'tab\there':8);",
                           "(a:-1.5,b:0,c:0.25,d:1e+20);"}) {
    const ParsedTree t = parse_newick(text);
    EXPECT_EQ(to_newick(t), text);
    EXPECT_EQ(to_newick(parse_newick(to_newick(t))), text);
  }
  const ParsedTree q = parse_newick("('a b','it''s');");
  EXPECT_EQ(q.nodes[1].name, "a b");
  EXPECT_EQ(q.nodes[2].name, "it's");

  // Lengths come back as the same doubles.
  std::mt19937_64 rng(3);
  ParsedTree t;
  t.nodes.emplace_back();
  for (int i = 0; i < 200; ++i) {
    NewickNode leaf;
    leaf.name = "n" + std::to_string(i);
    leaf.length = std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 80) - 100);
    t.nodes[0].children.push_back(t.nodes.size());
    t.nodes.push_back(leaf);
  }
  const ParsedTree back = parse_newick(to_newick(t));
  ASSERT_EQ(back.nodes.size(), t.nodes.size());
  for (std::size_t v = 1; v < t.nodes.size(); ++v)
    EXPECT_EQ(back.nodes[v].length, t.nodes[v].length) << v;
}

TEST(CvtreeNewick, NeighbourJoiningQuotesNamesThatNeedIt) {
  const std::vector<std::string> names = {"Homo sapiens", "it's", "a(b)", "x:y", "plain_name", "semi;colon", "c,d",
                                          "[br]"};
  std::mt19937_64 rng(11);
  TestTree truth = random_tree(names.size(), rng);
  truth.names = names;
  const std::string text = nj(path_lengths(truth), names);
  EXPECT_NE(text.find("'Homo sapiens':"), std::string::npos) << text;
  EXPECT_NE(text.find("'it''s':"), std::string::npos) << text;
  EXPECT_NE(text.find("'[br]':"), std::string::npos) << text;
  EXPECT_NE(text.find("plain_name:"), std::string::npos) << text;
  EXPECT_EQ(text.find("'plain_name'"), std::string::npos) << text;
  const ParsedTree t = parse_newick(text);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(leaf_names(t), sorted);
  EXPECT_EQ(robinson_foulds(t, rooted_at(truth, names.size(), rng)), 0u);
}

TEST(CvtreeNewick, ErrorsGiveTheOffset) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"", "unexpected end of text, expected ';' at offset 0"},
      {"(a,b)", "unexpected end of text, expected ';' at offset 5"},
      {"(a,b", "unexpected end of text, expected ',' or ')' at offset 4"},
      {"(a,b));", "expected ';', found ')' at offset 5"},
      {"(a:x,b);", "expected a branch length after ':' at offset 3"},
      {"(a: ,b);", "expected a branch length after ':' at offset 4"},
      {"('abc,b);", "unterminated quoted name at offset 1"},
      {"(a,b);x", "text after the closing ';' at offset 6"},
      {"(a,b); ;", "text after the closing ';' at offset 7"},
      {"(a b,c);", "expected ',' or ')', found 'b' at offset 3"},
      {"(a;b);", "expected ',' or ')', found ';' at offset 2"},
      {"(a,b)[unclosed;", "unterminated comment at offset 5"},
      {"(a:inf,b);", "branch length is not finite at offset 3"},
      {"(a:nan,b);", "branch length is not finite at offset 3"},
      {"(a:1e999,b);", "branch length out of range at offset 3"},
      {"(a,'b'c);", "expected ',' or ')', found 'c' at offset 6"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    expect_invalid([&] { parse_newick(text); }, std::string("parse_newick: ") + message);
  }
}

TEST(CvtreeNewick, ToNewickRejectsWhatIsNotATree) {
  ParsedTree empty;
  expect_invalid([&] { to_newick(empty); }, "no nodes");
  ParsedTree backwards;
  backwards.nodes.resize(2);
  backwards.nodes[1].children = {0};
  expect_invalid([&] { to_newick(backwards); }, "node 1 lists child 0");
  ParsedTree orphan;
  orphan.nodes.resize(3);
  orphan.nodes[0].children = {1};
  expect_invalid([&] { to_newick(orphan); }, "node 2 has no parent");
  ParsedTree shared;
  shared.nodes.resize(3);
  shared.nodes[0].children = {1, 2};
  shared.nodes[1].children = {2};
  expect_invalid([&] { to_newick(shared); }, "node 2 has two parents");
}

// ---------------------------------------------------------------- Robinson-Foulds

std::size_t rf(const char* a, const char* b) { return robinson_foulds(parse_newick(a), parse_newick(b)); }

// The splits as sets of names, each the side without the smallest name.
std::set<std::set<std::string>> reference_splits(const ParsedTree& t) {
  const std::vector<std::string> all = leaf_names(t);
  std::vector<std::set<std::string>> below(t.nodes.size());
  for (std::size_t v = t.nodes.size(); v-- > 0;) {
    if (t.nodes[v].children.empty()) below[v].insert(t.nodes[v].name);
    for (const std::size_t c : t.nodes[v].children)
      below[v].insert(below[c].begin(), below[c].end());
  }
  std::set<std::set<std::string>> out;
  for (std::size_t v = 1; v < t.nodes.size(); ++v) {
    std::set<std::string> side = below[v];
    if (side.count(all.front())) {
      std::set<std::string> other;
      for (const std::string& name : all)
        if (!side.count(name)) other.insert(name);
      side = other;
    }
    if (side.size() >= 2 && side.size() + 2 <= all.size()) out.insert(side);
  }
  return out;
}

std::size_t reference_rf(const ParsedTree& a, const ParsedTree& b) {
  const auto sa = reference_splits(a);
  const auto sb = reference_splits(b);
  std::size_t only = 0;
  for (const auto& s : sa)
    only += sb.count(s) ? 0 : 1;
  for (const auto& s : sb)
    only += sa.count(s) ? 0 : 1;
  return only;
}

TEST(CvtreeRobinsonFoulds, SmallKnownCases) {
  EXPECT_EQ(rf("((A,B),(C,D));", "((A,B),(C,D));"), 0u);
  EXPECT_EQ(rf("((A,B),(C,D));", "((A,C),(B,D));"), 2u);
  EXPECT_EQ(rf("((A,B),(C,D));", "((A,D),(C,B));"), 2u);
  // Rooting, child order, lengths and inner labels do not matter.
  EXPECT_EQ(rf("((A,B),(C,D));", "(A,B,(C,D));"), 0u);
  EXPECT_EQ(rf("((A:1,B:2)x:3,(C,D));", "((D,C),(B,A)y);"), 0u);
  EXPECT_EQ(rf("((A,B),(C,D));", "(((A,B)),C,D);"), 0u);  // a node with one child repeats a split
  // Five leaves: AB|CDE against AC|BDE, DE|ABC in both.
  EXPECT_EQ(rf("((A,B),C,(D,E));", "((A,C),B,(D,E));"), 2u);
  // A star has no non-trivial split: its distance to a binary tree is n - 3.
  EXPECT_EQ(rf("(A,B,C,D,E,F);", "((A,B),(C,D),(E,F));"), 3u);
  // Six leaves with no split in common: the maximum.
  EXPECT_EQ(rf("((A,B),(C,D),(E,F));", "((A,C),(B,E),(D,F));"), max_robinson_foulds(6));
  // Three leaves or fewer have no non-trivial splits.
  EXPECT_EQ(rf("(A,B,C);", "((A,B),C);"), 0u);
  EXPECT_EQ(rf("(A,B);", "(B,A);"), 0u);
  EXPECT_EQ(rf("A;", "A;"), 0u);
}

TEST(CvtreeRobinsonFoulds, Maximum) {
  EXPECT_EQ(max_robinson_foulds(0), 0u);
  EXPECT_EQ(max_robinson_foulds(1), 0u);
  EXPECT_EQ(max_robinson_foulds(2), 0u);
  EXPECT_EQ(max_robinson_foulds(3), 0u);
  EXPECT_EQ(max_robinson_foulds(4), 2u);
  EXPECT_EQ(max_robinson_foulds(10), 14u);
  EXPECT_EQ(max_robinson_foulds(1000), 1994u);
}

TEST(CvtreeRobinsonFoulds, MatchesASetReferenceOnRandomTrees) {
  // Across the 64-leaf word boundary of the bitsets.
  std::mt19937_64 rng(99);
  for (const std::size_t n : {4u, 7u, 20u, 63u, 64u, 65u, 128u, 150u})
    for (int rep = 0; rep < 3; ++rep) {
      const TestTree x = random_tree(n, rng);
      const TestTree y = random_tree(n, rng);
      const std::size_t inner = x.adjacent.size() - 1;
      const ParsedTree x1 = rooted_at(x, n, rng);
      const ParsedTree x2 = rooted_at(x, inner, rng);  // rerooted elsewhere
      const ParsedTree y1 = rooted_at(y, n, rng);
      EXPECT_EQ(robinson_foulds(x1, x2), 0u) << n;
      const std::size_t d = robinson_foulds(x1, y1);
      EXPECT_EQ(d, reference_rf(x1, y1)) << n;
      EXPECT_EQ(d, robinson_foulds(y1, x1)) << n;
      EXPECT_EQ(d % 2, 0u) << n;  // binary trees each have n - 3 splits
      EXPECT_LE(d, max_robinson_foulds(n)) << n;
      // Rooted at a leaf: the leaf is then the root, an inner node's name.
      // The same splits remain once the leaf is hung back as a child.
      ParsedTree at_leaf = rooted_at(x, 0, rng);
      at_leaf.nodes[0].name.clear();
      NewickNode leaf0;
      leaf0.name = x.names[0];
      at_leaf.nodes[0].children.push_back(at_leaf.nodes.size());
      at_leaf.nodes.push_back(leaf0);
      EXPECT_EQ(robinson_foulds(at_leaf, x1), 0u) << n;
      EXPECT_EQ(reference_rf(at_leaf, y1), d) << n;
    }
}

TEST(CvtreeRobinsonFoulds, LeafSetsMustMatch) {
  expect_invalid([] { rf("((A,B),(C,D));", "((A,B),(C,E));"); },
                 "robinson_foulds: leaf 'D' is in the first tree but not in the second");
  expect_invalid([] { rf("((A,B),(C,E));", "((A,B),(C,D));"); },
                 "robinson_foulds: leaf 'D' is in the second tree but not in the first");
  expect_invalid([] { rf("((A,B),(C,D));", "((A,B),(C,D),E);"); }, "leaf 'E' is in the second tree but not in the first");
  expect_invalid([] { rf("((A,B),(C,D),Z);", "((A,B),(C,D));"); }, "leaf 'Z' is in the first tree but not in the second");
  expect_invalid([] { rf("((A,B),(C,A));", "((A,B),(C,D));"); }, "leaf 'A' appears more than once in the first tree");
  expect_invalid([] { rf("((A,B),(C,D));", "((A,B),(C,));"); }, "leaf node 6 of the second tree has no name");
  ParsedTree broken;
  broken.nodes.resize(2);
  expect_invalid([&] { robinson_foulds(parse_newick("(A,B);"), broken); }, "robinson_foulds (second tree): node 1");
}

}  // namespace
}  // namespace flowd::cvtree

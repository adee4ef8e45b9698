// The pair matrix's decomposition (sched/allpairs_plan.hpp): for the
// triangle, the triangle with its diagonal and the rectangle, of any size,
// every pair is in exactly one leaf, leaves hold at least T pairs, and
// leaves follow the Hilbert curve (consecutive cells are neighbours).
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sched/allpairs_plan.hpp"

using namespace flowd::sched;

namespace {

const char* name(PairShape s) {
  return s == PairShape::triangle ? "triangle" : s == PairShape::triangle_with_diagonal ? "with diagonal" : "rectangle";
}

// The pairs of the shape, counted directly.
std::uint64_t expected_pairs(PairShape s, std::uint32_t rows, std::uint32_t cols) {
  std::uint64_t n = 0;
  for (std::uint32_t i = 0; i < rows; ++i)
    for (std::uint32_t j = 0; j < cols; ++j)
      n += s == PairShape::rectangle || (s == PairShape::triangle ? i < j : i <= j);
  return n;
}

}  // namespace

TEST(AllPairsPlan, EveryPairIsInExactlyOneLeafOfAtLeastTPairs) {
  struct Size {
    PairShape shape;
    std::uint32_t rows, cols;
  };
  std::vector<Size> sizes;
  for (auto s : {PairShape::triangle, PairShape::triangle_with_diagonal})
    for (std::uint32_t n : {1u, 2u, 3u, 5u, 7u, 16u, 33u, 100u}) sizes.push_back({s, n, n});
  for (auto [r, c] : std::vector<std::pair<std::uint32_t, std::uint32_t>>{{1, 1}, {1, 9}, {5, 9}, {17, 3}, {64, 64}, {70, 41}})
    sizes.push_back({PairShape::rectangle, r, c});
  for (const auto& z : sizes)
    for (std::uint64_t t : {1u, 3u, 10u, 100u, 100000u}) {
      SCOPED_TRACE(std::string(name(z.shape)) + " " + std::to_string(z.rows) + "x" + std::to_string(z.cols) +
                   ", T = " + std::to_string(t));
      const PairPlan p = plan_pairs(z.shape, z.rows, z.cols, t);
      const std::uint64_t want = expected_pairs(z.shape, z.rows, z.cols);
      EXPECT_EQ(p.total_pairs, want);
      std::vector<int> seen(std::size_t{z.rows} * z.cols, 0);
      std::uint64_t in_leaves = 0;
      for (const auto& b : p.leaves) {
        EXPECT_GT(b.pairs, 0u);
        if (want >= t) {
          EXPECT_GE(b.pairs, t);
        }
        std::uint64_t n = 0;
        for_each_pair(z.shape, b, [&](std::uint32_t i, std::uint32_t j) {
          ++seen[std::size_t{i} * z.cols + j];
          ++n;
        });
        EXPECT_EQ(n, b.pairs);
        in_leaves += n;
      }
      EXPECT_EQ(in_leaves, want);
      for (std::uint32_t i = 0; i < z.rows; ++i)
        for (std::uint32_t j = 0; j < z.cols; ++j) {
          const bool in = z.shape == PairShape::rectangle ||
                          (z.shape == PairShape::triangle ? i < j : i <= j);
          ASSERT_EQ(seen[std::size_t{i} * z.cols + j], in ? 1 : 0) << "pair " << i << "," << j;
        }
      if (want < t) {  // one leaf, or none for no pair at all
        EXPECT_EQ(p.leaves.size(), want > 0 ? 1u : 0u);
      }
    }
}

// With T = 1 every leaf of a 2^k square is one cell, in Hilbert order: each
// cell is a neighbour of the one before.
TEST(AllPairsPlan, LeavesFollowTheHilbertCurve) {
  const PairPlan p = plan_pairs(PairShape::rectangle, 32, 32, 1);
  ASSERT_EQ(p.leaves.size(), 1024u);
  for (std::size_t k = 1; k < p.leaves.size(); ++k) {
    const auto& a = p.leaves[k - 1];
    const auto& b = p.leaves[k];
    ASSERT_EQ(b.row_end - b.row_begin, 1u);
    const int step = std::abs(static_cast<int>(a.row_begin) - static_cast<int>(b.row_begin)) +
                     std::abs(static_cast<int>(a.col_begin) - static_cast<int>(b.col_begin));
    ASSERT_EQ(step, 1) << "leaf " << k;
  }
  // The curve's index is a bijection of the grid, increasing along the leaves.
  for (std::size_t k = 1; k < p.leaves.size(); ++k)
    EXPECT_LT(hilbert_index(5, p.leaves[k - 1].col_begin, p.leaves[k - 1].row_begin),
              hilbert_index(5, p.leaves[k].col_begin, p.leaves[k].row_begin));
}

// A triangle of 300 items with T = 64: every leaf holds at least T pairs,
// and the split goes several levels deep (about 44 850 / 64 pairs a leaf at
// most 700 leaves, more than 100 of them).
TEST(AllPairsPlan, LeavesAreSplitWhileEveryQuadrantKeepsTPairs) {
  const PairPlan p = plan_pairs(PairShape::triangle, 300, 300, 64);
  EXPECT_EQ(p.total_pairs, 300u * 299u / 2u);
  std::uint32_t deepest = 0;
  for (const auto& b : p.leaves) {
    EXPECT_GE(b.pairs, 64u);
    deepest = std::max(deepest, b.depth);
  }
  EXPECT_GT(deepest, 2u);
  EXPECT_GT(p.leaves.size(), 100u);
}

TEST(AllPairsPlan, RefusesANonSquareTriangleAndEmptyLeaves) {
  EXPECT_THROW(plan_pairs(PairShape::triangle, 4, 5, 1), std::invalid_argument);
  EXPECT_THROW(plan_pairs(PairShape::rectangle, 4, 5, 0), std::invalid_argument);
  EXPECT_TRUE(plan_pairs(PairShape::rectangle, 0, 5, 1).leaves.empty());
}

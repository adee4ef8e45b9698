#pragma once
// The all-pairs pattern's decomposition of the pair matrix (Rocket, issue 15):
// a recursive quadrant split in Hilbert order down to leaves of at least T
// pairs, as pure data. Consecutive leaves are neighbours in the matrix, so a
// worker going through them in order reuses most of the items it loaded.
//
// The split works on the matrix embedded in a 2^k × 2^k grid: each block is
// an aligned dyadic square clipped to the matrix, so every block is a
// contiguous stretch of the Hilbert curve, and children ordered by the curve
// index of their first cell come in curve order.
#include <cstdint>
#include <vector>

namespace flowd::sched {

// Which pairs (i, j) of rows × cols are computed: i < j of one set, i ≤ j
// (the diagonal too), or every pair of two sets (A × B).
enum class PairShape : std::uint8_t { triangle, triangle_with_diagonal, rectangle };

// Rows [row_begin, row_end) × columns [col_begin, col_end) of the matrix;
// only the pairs of the shape inside it count.
struct PairBlock {
  std::uint32_t row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
  std::uint64_t pairs = 0;
  std::uint32_t depth = 0;  // splits from the whole matrix
};

struct PairPlan {
  PairShape shape = PairShape::triangle;
  // Hilbert: Rocket's quadrant tree; lanes own stretches of it and steal.
  // Strips: lanes go through the leaves in order together (plan_strips).
  enum class Order : std::uint8_t { hilbert, strips } order = Order::hilbert;
  std::uint32_t rows = 0, cols = 0;
  std::uint64_t total_pairs = 0;
  std::vector<PairBlock> leaves;  // in Hilbert order; every pair in exactly one
};

// The pairs of `shape` in rows [r0, r1) × cols [c0, c1).
std::uint64_t pairs_in(PairShape shape, std::uint32_t r0, std::uint32_t r1, std::uint32_t c0, std::uint32_t c1);

// Splits a block into its (up to four) quadrants while every non-empty
// quadrant would still hold at least `min_pairs` pairs; so every leaf holds
// at least min_pairs pairs unless the whole matrix holds fewer (then it is
// one leaf). A triangle's rows and columns are one set: rows == cols.
// Throws std::invalid_argument for a triangle that is not square or
// min_pairs == 0.
PairPlan plan_pairs(PairShape shape, std::uint32_t rows, std::uint32_t cols, std::uint64_t min_pairs);

// For a cache smaller than the set: bands of `strip_rows` rows, each
// followed across the columns it pairs with in leaves of about `min_pairs`
// pairs. A band's rows stay cached while the columns stream past once, so
// a triangle of n items loads about n + n²/(2·strip_rows) items (R ≈ 0.5 +
// n / (2·strip_rows)), where the Hilbert order's regions, with LRU, load
// about n²/C (R ≈ n / C). strip_rows >= 1, min_pairs >= 1.
PairPlan plan_strips(PairShape shape, std::uint32_t rows, std::uint32_t cols, std::uint32_t strip_rows,
                     std::uint64_t min_pairs);

// The index along the Hilbert curve of cell (x, y) of a 2^order × 2^order grid.
std::uint64_t hilbert_index(std::uint32_t order, std::uint32_t x, std::uint32_t y);

// Calls f(i, j) for each pair of `shape` in `b`, row by row.
template <class F>
void for_each_pair(PairShape shape, const PairBlock& b, F&& f) {
  for (std::uint32_t i = b.row_begin; i < b.row_end; ++i)
    for (std::uint32_t j = b.col_begin; j < b.col_end; ++j) {
      if (shape == PairShape::triangle && j <= i) continue;
      if (shape == PairShape::triangle_with_diagonal && j < i) continue;
      f(i, j);
    }
}

}  // namespace flowd::sched

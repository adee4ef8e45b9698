#include "sched/allpairs_plan.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

namespace flowd::sched {

std::uint64_t pairs_in(PairShape shape, std::uint32_t r0, std::uint32_t r1, std::uint32_t c0, std::uint32_t c1) {
  if (r0 >= r1 || c0 >= c1) return 0;
  if (shape == PairShape::rectangle) return std::uint64_t{r1 - r0} * (c1 - c0);
  // Row i holds columns from max(c0, i + 1) (i with the diagonal) to c1.
  const std::uint32_t skip = shape == PairShape::triangle ? 1 : 0;
  std::uint64_t n = 0;
  for (std::uint32_t i = r0; i < r1; ++i) {
    const std::uint64_t from = std::max<std::uint64_t>(c0, std::uint64_t{i} + skip);
    if (from < c1) n += c1 - from;
  }
  return n;
}

std::uint64_t hilbert_index(std::uint32_t order, std::uint32_t x, std::uint32_t y) {
  std::uint64_t d = 0;
  for (std::uint64_t s = std::uint64_t{1} << order >> 1; s > 0; s >>= 1) {
    const std::uint64_t rx = (x & s) ? 1 : 0, ry = (y & s) ? 1 : 0;
    d += s * s * ((3 * rx) ^ ry);
    // Rotate the quadrant so the curve inside it starts where it should.
    if (ry == 0) {
      if (rx == 1) {
        x = static_cast<std::uint32_t>(s - 1 - (x & (s - 1))) | (x & ~static_cast<std::uint32_t>(s - 1));
        y = static_cast<std::uint32_t>(s - 1 - (y & (s - 1))) | (y & ~static_cast<std::uint32_t>(s - 1));
      }
      std::swap(x, y);
    }
  }
  return d;
}

namespace {

struct Planner {
  PairShape shape;
  std::uint32_t rows, cols, order;
  std::uint64_t min_pairs;
  std::vector<PairBlock>& out;

  // The aligned square of side `side` at (x0 = column, y0 = row), clipped.
  PairBlock block(std::uint64_t x0, std::uint64_t y0, std::uint64_t side, std::uint32_t depth) const {
    PairBlock b;
    b.row_begin = static_cast<std::uint32_t>(std::min<std::uint64_t>(y0, rows));
    b.row_end = static_cast<std::uint32_t>(std::min<std::uint64_t>(y0 + side, rows));
    b.col_begin = static_cast<std::uint32_t>(std::min<std::uint64_t>(x0, cols));
    b.col_end = static_cast<std::uint32_t>(std::min<std::uint64_t>(x0 + side, cols));
    b.pairs = pairs_in(shape, b.row_begin, b.row_end, b.col_begin, b.col_end);
    b.depth = depth;
    return b;
  }

  void split(std::uint64_t x0, std::uint64_t y0, std::uint64_t side, std::uint32_t depth) {
    const PairBlock whole = block(x0, y0, side, depth);
    if (whole.pairs == 0) return;
    if (side > 1) {
      const std::uint64_t h = side / 2;
      struct Child {
        std::uint64_t x, y, d;
        PairBlock b;
      };
      std::vector<Child> children;
      bool worth = true;
      for (const auto& [dx, dy] : std::array<std::pair<int, int>, 4>{{{0, 0}, {0, 1}, {1, 0}, {1, 1}}}) {
        const std::uint64_t x = x0 + dx * h, y = y0 + dy * h;
        PairBlock b = block(x, y, h, depth + 1);
        if (b.pairs == 0) continue;
        worth = worth && b.pairs >= min_pairs;
        children.push_back({x, y, hilbert_index(order, static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y)), b});
      }
      if (worth && children.size() > 1) {
        std::sort(children.begin(), children.end(), [](const Child& a, const Child& b) { return a.d < b.d; });
        for (const auto& c : children) split(c.x, c.y, h, depth + 1);
        return;
      }
      if (worth && children.size() == 1) {  // the rest of the square lies outside the matrix
        split(children[0].x, children[0].y, h, depth);
        return;
      }
    }
    out.push_back(whole);
  }
};

}  // namespace

PairPlan plan_pairs(PairShape shape, std::uint32_t rows, std::uint32_t cols, std::uint64_t min_pairs) {
  if (min_pairs == 0) throw std::invalid_argument("all-pairs leaves need at least one pair");
  if (shape != PairShape::rectangle && rows != cols)
    throw std::invalid_argument("a triangle of pairs is over one set: rows and columns must be equal");
  PairPlan p;
  p.shape = shape;
  p.rows = rows;
  p.cols = cols;
  p.total_pairs = pairs_in(shape, 0, rows, 0, cols);
  std::uint32_t order = 0;
  while ((std::uint64_t{1} << order) < std::max(rows, cols)) ++order;
  Planner planner{shape, rows, cols, order, min_pairs, p.leaves};
  planner.split(0, 0, std::uint64_t{1} << order, 0);
  return p;
}

PairPlan plan_strips(PairShape shape, std::uint32_t rows, std::uint32_t cols, std::uint32_t strip_rows,
                     std::uint64_t min_pairs) {
  if (min_pairs == 0 || strip_rows == 0) throw std::invalid_argument("all-pairs strips need at least one row and pair");
  if (shape != PairShape::rectangle && rows != cols)
    throw std::invalid_argument("a triangle of pairs is over one set: rows and columns must be equal");
  PairPlan p;
  p.shape = shape;
  p.order = PairPlan::Order::strips;
  p.rows = rows;
  p.cols = cols;
  p.total_pairs = pairs_in(shape, 0, rows, 0, cols);
  for (std::uint32_t r0 = 0; r0 < rows; r0 += std::min(strip_rows, rows - r0)) {
    const std::uint32_t r1 = r0 + std::min(strip_rows, rows - r0);
    // A triangle's band pairs with its own rows and the columns after them.
    const std::uint32_t c_first = shape == PairShape::rectangle ? 0 : r0;
    const std::uint32_t width =
        static_cast<std::uint32_t>(std::max<std::uint64_t>(1, (min_pairs + (r1 - r0) - 1) / (r1 - r0)));
    for (std::uint32_t c0 = c_first; c0 < cols;) {
      const std::uint32_t c1 = static_cast<std::uint32_t>(std::min<std::uint64_t>(cols, std::uint64_t{c0} + width));
      PairBlock b{r0, r1, c0, c1, pairs_in(shape, r0, r1, c0, c1), 1};
      if (b.pairs) p.leaves.push_back(b);
      c0 = c1;
    }
  }
  return p;
}

}  // namespace flowd::sched

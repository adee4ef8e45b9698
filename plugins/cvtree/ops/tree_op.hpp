#pragma once
#include <flowd/flowd.hpp>

namespace flowd::cvtree {

// cvtree.tree: the neighbour-joining tree (core/tree.hpp) of each k's
// distance matrix in a cvtree.compare score table, as Newick. A map over the
// one table rather than a reduce: the matrix arrives whole, as one item.
class TreeOp final : public Map {
public:
  static OperatorSpec spec();
  explicit TreeOp(const Params&) {}
  void cpu(MapContext& ctx) const override;
};

}  // namespace flowd::cvtree

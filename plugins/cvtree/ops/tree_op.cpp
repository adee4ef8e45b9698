#include "ops/tree_op.hpp"

#include <stdexcept>

#include "ops/matrices.hpp"
#include "tree.hpp"

namespace flowd::cvtree {

OperatorSpec TreeOp::spec() {
  return {.name = "cvtree.tree",
          .doc = "Neighbour-joining (Saitou-Nei) trees of a cvtree.compare score table, one per k, as Newick "
                 "(docs/plugins/cvtree.md)",
          .inputs = {{"scores", "table", "the score table of cvtree.compare over one set"}},
          .outputs = {{"trees", "json", "{\"names\": [...], \"k\": [5, ...], \"newick\": [\"(...);\", ...]}"}},
          .params = {}};
}

void TreeOp::cpu(MapContext& ctx) const {
  const Item& in = ctx.input(0);
  const DistanceMatrices m = distance_matrices(in, "stage '" + ctx.stage() + "'");
  Json newick = Json::array();
  for (std::size_t t = 0; t < m.ks.size(); ++t) {
    try {
      newick.push_back(neighbour_joining(m.distance[t], m.names.size(), m.names));
    } catch (const std::invalid_argument& e) {
      throw Error("the distances at k = " + std::to_string(m.ks[t]) + ": " + e.what());
    }
  }
  ctx.emit("trees", Json{{"names", m.names}, {"k", m.ks}, {"newick", std::move(newick)}});
}

}  // namespace flowd::cvtree

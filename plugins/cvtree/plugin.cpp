// The CVTree plugin (docs/plugins/cvtree.md): alignment-free whole-proteome
// phylogeny by composition vectors (Qi, Wang & Hao 2004), Rocket's second
// all-pairs application: vectors, all-pairs distances, neighbour-joining
// trees, PHYLIP and Newick files.
#include "flowd/plugin.hpp"

#include "ops/compare.hpp"
#include "ops/tree_op.hpp"
#include "ops/vector_op.hpp"
#include "ops/write.hpp"

FLOWD_PLUGIN("cvtree", "0.1.0", "CVTree composition vectors: all-pairs distances and neighbour-joining trees",
             flowd::cvtree::VectorOp, flowd::cvtree::Compare, flowd::cvtree::TreeOp, flowd::cvtree::WriteSink)

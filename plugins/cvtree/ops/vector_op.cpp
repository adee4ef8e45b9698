#include "ops/vector_op.hpp"

#include <stdexcept>

#include "ops/vectors.hpp"

namespace flowd::cvtree {

OperatorSpec VectorOp::spec() {
  return {.name = "cvtree.vector",
          .doc =
              "The CVTree composition vectors of a proteome (FASTA, plain or gzipped), one per k "
              "(docs/plugins/cvtree.md)",
          .inputs = {{"proteome", "json", "a file item ({\"path\"}) of io.list_files"}},
          .outputs = {{"vectors", "array",
                       "u8: each k's vector stored by middle (docs/plugins/cvtree.md; attrs cvtree_k, cvtree_offsets, "
                       "cvtree_sizes)"}},
          .params = {k_spec()}};
}

VectorOp::VectorOp(const Params& p) : ks_(k_param(p)) {}

void VectorOp::cpu(MapContext& ctx) const {
  const Item& in = ctx.input(0);
  const auto file = file_of(in);
  Proteome p;
  try {
    p = read_proteome(file);
  } catch (const std::invalid_argument& e) {
    throw Error(e.what());
  }
  if (const auto w = cut_short_warning(p, "'" + file.string() + "'"); !w.empty()) ctx.warn(w);
  ctx.emit("vectors", vectors_item(in.meta, p, ks_, "'" + file.string() + "'"));
}

}  // namespace flowd::cvtree

#include "ops/compare.hpp"

#include <stdexcept>

#include "ops/vectors.hpp"
#include "vector.hpp"

namespace flowd::cvtree {

OperatorSpec Compare::spec() {
  return {.name = "cvtree.compare",
          .doc = "CVTree distances of all pairs of proteomes: composition vectors built once per proteome and k, "
                 "cached; D = (1 - cosine) / 2 (docs/plugins/cvtree.md)",
          .inputs = {{"a", "any", "proteome files ({\"path\"}, io.list_files) or cvtree.vector items"},
                     {"b", "any", "a second set (every pair a x b); unconnected: the pairs of the first set", true}},
          .outputs = {{"scores", "table", "a, b, then cosine_k<k> and distance_k<k> for each k"}},
          .params = {k_spec()}};
}

Compare::Compare(const Params& p) : ks_(k_param(p)) {}

std::vector<std::string> Compare::scores() const { return score_names(ks_); }

Item Compare::load(AllPairsContext& ctx, const Item& in) const {
  if (!std::holds_alternative<Json>(in.value)) return in;  // vectors already
  const auto file = file_of(in);
  Item out;
  try {
    const Proteome p = read_proteome(file);
    if (const auto w = cut_short_warning(p, "'" + file.string() + "'"); !w.empty()) ctx.warn(w);
    out = proteome_item(in.meta, p);
  } catch (const std::invalid_argument& e) {
    throw Error(e.what());
  }
  out.meta.attrs["cvtree_file"] = file.string();
  return out;
}

Item Compare::preprocess(AllPairsContext&, Item loaded) const {
  if (loaded.meta.attrs.contains("cvtree_k")) {
    // Vectors already (cvtree.vector): checked once here, in full.
    const VectorsView v = vectors_view(loaded, ks_);
    for (std::size_t t = 0; t < ks_.size(); ++t) (void)vector_of(loaded, v, t, ks_[t], true);
    return loaded;
  }
  const std::string what = loaded.meta.attrs.contains("cvtree_file")
                               ? "'" + loaded.meta.attrs["cvtree_file"].get<std::string>() + "'"
                               : "item '" + loaded.meta.key + "'";
  return vectors_item(loaded.meta, proteome_of(loaded), ks_, what);
}

void Compare::compare(AllPairsContext&, const Item& a, const Item& b, std::span<double> out) const {
  const VectorsView va = vectors_view(a, ks_), vb = vectors_view(b, ks_);
  for (std::size_t t = 0; t < ks_.size(); ++t) {
    const double c = cosine(vector_of(a, va, t, ks_[t]), vector_of(b, vb, t, ks_[t]));
    out[2 * t] = c;
    out[2 * t + 1] = (1.0 - c) / 2.0;
  }
}

}  // namespace flowd::cvtree

#pragma once
// Proteomes and composition vectors as flowd items, shared by the cvtree
// operators (docs/plugins/cvtree.md, "Items"):
//   - a proteome (what load() reads): a u8 array of residue codes 0..19,
//     255 between proteins;
//   - its composition vectors, one per k: an f64 array (2, total), row 0 the
//     keys (exact integers), row 1 the values, the vectors one after the
//     other; attrs cvtree_k ([5, 6]) and cvtree_offsets ([0, n5, n5 + n6]).
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <flowd/flowd.hpp>

#include "proteome.hpp"

namespace flowd::cvtree {

// The `k` parameter: one k (5) or several ([5, 6, 7]), each in [3, 12],
// none twice.
ParamSpec k_spec();
std::vector<int> k_param(const Params& p);

// "cosine_k5", "distance_k5", ... for each k: the score columns of a compare.
std::vector<std::string> score_names(std::span<const int> ks);

Item proteome_item(const ItemMeta& meta, const Proteome& p);
Proteome proteome_of(const Item& item);

// The file behind an io.list_files item ({"path": ...}) or a string.
std::filesystem::path file_of(const Item& item);

// The vectors of `p` for each k, as one item.
Item vectors_item(const ItemMeta& meta, const Proteome& p, std::span<const int> ks, const std::string& what);

// A vectors item's layout, checked against the ks a compare expects.
struct VectorsView {
  std::int64_t total = 0;
  std::vector<std::int64_t> offsets;  // per k, and the end
};
VectorsView vectors_view(const Item& item, std::span<const int> ks);

}  // namespace flowd::cvtree

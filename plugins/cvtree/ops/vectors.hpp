#pragma once
// Proteomes and composition vectors as flowd items, shared by the cvtree
// operators (docs/plugins/cvtree.md, "Items"):
//   - a proteome (what load() reads): a u8 array of residue codes 0..19,
//     255 between proteins;
//   - its composition vectors, one per k: a u8 array holding each vector's
//     bytes (core/layout.hpp) one after the other; attrs cvtree_k ([5, 6]),
//     cvtree_offsets (where each k's bytes start, and the end) and
//     cvtree_sizes ([[middles, seen], ...] per k, so that a GPU variant
//     finds the arrays of a vector in device memory without reading it).
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <flowd/flowd.hpp>

#include "proteome.hpp"
#include "vector.hpp"

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

// A vectors item's layout, checked against the ks a compare expects and
// against its array's size.
struct VectorsView {
  struct Section {
    std::size_t offset = 0, middles = 0, seen = 0;  // bytes from the array's start; counts
  };
  std::vector<Section> sections;  // per k
};
VectorsView vectors_view(const Item& item, std::span<const int> ks);

// The vector of the t-th k in a host item. `check_all` also checks every
// middle's range of seen k-mers (linear in the middles; done once, when an
// item enters a compare), else only the header.
VectorView vector_of(const Item& item, const VectorsView& view, std::size_t t, int k, bool check_all = false);

}  // namespace flowd::cvtree

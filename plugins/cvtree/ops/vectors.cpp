#include "ops/vectors.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "packed.hpp"

namespace flowd::cvtree {

namespace {
constexpr std::uint8_t protein_break = 255;
}

ParamSpec k_spec() {
  return ParamSpec::json("k", 5).doc(
      "the k-mer length: one (5) or several ([5, 6, 7]), each in [3, 12]; a matrix and a tree per k");
}

std::vector<int> k_param(const Params& p) {
  const Json j = p.get<Json>("k");
  std::vector<int> ks;
  auto add = [&](const Json& v) {
    if (!v.is_number_integer())
      throw Error("parameter 'k': expected an integer or a list of integers, got " + v.dump());
    const auto k = v.get<std::int64_t>();
    if (k < min_k || k > max_k)
      throw Error("parameter 'k': " + std::to_string(k) + " is outside [" + std::to_string(min_k) + ", " +
                  std::to_string(max_k) + "]");
    if (std::find(ks.begin(), ks.end(), static_cast<int>(k)) != ks.end())
      throw Error("parameter 'k': " + std::to_string(k) + " is listed twice");
    ks.push_back(static_cast<int>(k));
  };
  if (j.is_array()) {
    if (j.empty()) throw Error("parameter 'k': an empty list");
    for (const auto& v : j) add(v);
  } else {
    add(j);
  }
  return ks;
}

std::vector<std::string> score_names(std::span<const int> ks) {
  std::vector<std::string> n;
  for (int k : ks) {
    n.push_back("cosine_k" + std::to_string(k));
    n.push_back("distance_k" + std::to_string(k));
  }
  return n;
}

Item proteome_item(const ItemMeta& meta, const Proteome& p) {
  const std::size_t n = p.residues.size() + (p.proteins() > 0 ? p.proteins() - 1 : 0);
  Array a = Array::uninitialized(DType::u8, {static_cast<std::int64_t>(n)});
  auto out = a.values<std::uint8_t>();
  std::size_t at = 0;
  for (std::size_t q = 0; q < p.proteins(); ++q) {
    if (q > 0) out[at++] = protein_break;
    for (std::size_t i = p.starts[q]; i < p.starts[q + 1]; ++i) out[at++] = p.residues[i];
  }
  return Item{meta, Value(std::move(a))};
}

Proteome proteome_of(const Item& item) {
  const Array& a = item.array();
  if (a.dtype() != DType::u8 || a.ndim() != 1)
    throw Error("item '" + item.meta.key + "': expected a proteome (u8 residue codes), got " +
                std::string(name_of(a.dtype())) + " with " + std::to_string(a.ndim()) + " dimensions");
  Proteome p;
  const auto codes = a.values<std::uint8_t>();
  p.residues.reserve(codes.size());
  p.starts.push_back(0);
  for (const std::uint8_t c : codes) {
    if (c == protein_break) {
      p.starts.push_back(p.residues.size());
    } else if (c < alphabet) {
      p.residues.push_back(c);
    } else {
      throw Error("item '" + item.meta.key + "': residue code " + std::to_string(c) + " is not one of 0..19");
    }
  }
  p.starts.push_back(p.residues.size());
  return p;
}

std::filesystem::path file_of(const Item& item) {
  const Json& j = item.json();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("path") && j["path"].is_string()) return j["path"].get<std::string>();
  throw Error("item '" + item.meta.key + "': expected a file ({\"path\": ...}), got " + j.dump().substr(0, 80));
}

Item vectors_item(const ItemMeta& meta, const Proteome& p, std::span<const int> ks, const std::string& what) {
  std::vector<CompositionVector> vs;
  std::vector<std::int64_t> offsets{0};
  Json sizes = Json::array();
  for (int k : ks) {
    try {
      vs.push_back(composition_vector(p, k));
    } catch (const std::invalid_argument& e) {
      throw Error(what + ": " + e.what());
    }
    const auto& v = vs.back();
    sizes.push_back({v.middles.size(), v.ends.size()});
    offsets.push_back(offsets.back() + static_cast<std::int64_t>(packed_size(v)));
  }
  Array a = Array::uninitialized(DType::u8, {offsets.back()});
  auto* bytes = static_cast<std::byte*>(a.raw());
  for (std::size_t t = 0; t < vs.size(); ++t)
    pack(vs[t], {bytes + offsets[t], static_cast<std::size_t>(offsets[t + 1] - offsets[t])});
  Item it{meta, Value(std::move(a))};
  it.meta.attrs["cvtree_k"] = std::vector<int>(ks.begin(), ks.end());
  it.meta.attrs["cvtree_offsets"] = offsets;
  it.meta.attrs["cvtree_sizes"] = std::move(sizes);
  return it;
}

VectorsView vectors_view(const Item& item, std::span<const int> ks) {
  const auto bad = [&](const std::string& why) {
    return Error("item '" + item.meta.key + "': " + why);
  };
  const Array& a = item.array();
  const Json& attrs = item.meta.attrs;
  if (a.dtype() != DType::u8 || a.ndim() != 1 || !a.is_contiguous() || !attrs.contains("cvtree_k") ||
      !attrs.contains("cvtree_offsets") || !attrs.contains("cvtree_sizes"))
    throw bad("expected composition vectors (a u8 array from cvtree.vector or cvtree.compare)");
  std::vector<int> got;
  std::vector<std::int64_t> offsets;
  std::vector<std::array<std::uint64_t, 2>> sizes;
  try {
    got = attrs["cvtree_k"].get<std::vector<int>>();
    offsets = attrs["cvtree_offsets"].get<std::vector<std::int64_t>>();
    sizes = attrs["cvtree_sizes"].get<std::vector<std::array<std::uint64_t, 2>>>();
  } catch (const Json::exception& e) {
    throw bad(std::string("its cvtree attrs are malformed: ") + e.what());
  }
  if (!std::equal(got.begin(), got.end(), ks.begin(), ks.end()))
    throw bad("its vectors are for k = " + attrs["cvtree_k"].dump() + ", the compare's k is " +
              Json(std::vector<int>(ks.begin(), ks.end())).dump());
  if (offsets.size() != ks.size() + 1 || sizes.size() != ks.size() || offsets.front() != 0 ||
      offsets.back() != a.shape(0))
    throw bad("cvtree_offsets and cvtree_sizes do not fit its array");
  VectorsView v;
  for (std::size_t t = 0; t < ks.size(); ++t) {
    const auto [middles, seen] = sizes[t];
    // Bounded first, so that the offsets below cannot overflow.
    if (middles > (std::uint64_t{1} << 40) || seen > (std::uint64_t{1} << 40) ||
        offsets[t] < 0 || offsets[t + 1] < offsets[t] ||
        layout::offsets(middles, seen).end != static_cast<std::uint64_t>(offsets[t + 1] - offsets[t]))
      throw bad("the vector for k = " + std::to_string(ks[t]) + " does not fit its bytes");
    v.sections.push_back({static_cast<std::size_t>(offsets[t]), middles, seen});
  }
  return v;
}

VectorView vector_of(const Item& item, const VectorsView& view, std::size_t t, int k, bool check_all) {
  const VectorsView::Section& s = view.sections.at(t);
  const auto* at = static_cast<const std::byte*>(item.array().raw()) + s.offset;
  try {
    return unpack({at, layout::offsets(s.middles, s.seen).end}, k, s.middles, s.seen, check_all);
  } catch (const std::invalid_argument& e) {
    throw Error("item '" + item.meta.key + "': the vector for k = " + std::to_string(k) + " does not fit: " +
                e.what());
  }
}

}  // namespace flowd::cvtree

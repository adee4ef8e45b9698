#include "ops/vectors.hpp"

#include <algorithm>
#include <stdexcept>

#include "vector.hpp"

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
  for (int k : ks) {
    try {
      vs.push_back(composition_vector(p, k));
    } catch (const std::invalid_argument& e) {
      throw Error(what + ": " + e.what());
    }
    offsets.push_back(offsets.back() + static_cast<std::int64_t>(vs.back().keys.size()));
  }
  const std::int64_t total = offsets.back();
  Array a = Array::uninitialized(DType::f64, {2, total});
  auto out = a.values<double>();
  for (std::size_t t = 0; t < vs.size(); ++t) {
    const auto at = static_cast<std::size_t>(offsets[t]);
    for (std::size_t i = 0; i < vs[t].keys.size(); ++i) {
      out[at + i] = static_cast<double>(vs[t].keys[i]);
      out[static_cast<std::size_t>(total) + at + i] = vs[t].values[i];
    }
  }
  Item it{meta, Value(std::move(a))};
  it.meta.attrs["cvtree_k"] = std::vector<int>(ks.begin(), ks.end());
  it.meta.attrs["cvtree_offsets"] = offsets;
  return it;
}

VectorsView vectors_view(const Item& item, std::span<const int> ks) {
  const Array& a = item.array();
  if (a.dtype() != DType::f64 || a.ndim() != 2 || a.shape(0) != 2 || !a.is_contiguous() ||
      !item.meta.attrs.contains("cvtree_k") || !item.meta.attrs.contains("cvtree_offsets"))
    throw Error("item '" + item.meta.key + "': expected composition vectors (an f64 (2, n) array from cvtree.vector)");
  const auto got = item.meta.attrs["cvtree_k"].get<std::vector<int>>();
  if (!std::equal(got.begin(), got.end(), ks.begin(), ks.end()))
    throw Error("item '" + item.meta.key + "': its vectors are for k = " + item.meta.attrs["cvtree_k"].dump() +
                ", the compare's k is " + Json(std::vector<int>(ks.begin(), ks.end())).dump());
  VectorsView v;
  v.total = a.shape(1);
  v.offsets = item.meta.attrs["cvtree_offsets"].get<std::vector<std::int64_t>>();
  if (v.offsets.size() != ks.size() + 1 || v.offsets.front() != 0 || v.offsets.back() != v.total)
    throw Error("item '" + item.meta.key + "': cvtree_offsets do not fit its array");
  return v;
}

}  // namespace flowd::cvtree

#include "ops/matrices.hpp"

#include <cmath>

namespace flowd::cvtree {

std::string proteome_name(const std::string& key) {
  for (const char* ext : {".faa", ".fasta", ".fa"}) {
    const std::string e(ext);
    if (key.size() > e.size() && key.compare(key.size() - e.size(), e.size(), e) == 0)
      return key.substr(0, key.size() - e.size());
  }
  return key;
}

DistanceMatrices distance_matrices(const Item& scores, const std::string& who) {
  const Json& attrs = scores.meta.attrs;
  if (!std::holds_alternative<Table>(scores.value) || !attrs.contains("rows") || !attrs.contains("scores"))
    throw Error(who + ": '" + scores.meta.key + "' is not an all-pairs score table (no rows/scores attrs)");
  if (attrs.value("pairs", "") == "rectangle")
    throw Error(who + ": '" + scores.meta.key + "' compares two sets; a tree needs the pairs of one set");
  const Table& t = scores.table();
  DistanceMatrices m;
  for (const auto& key : attrs["rows"].get<std::vector<std::string>>()) m.names.push_back(proteome_name(key));
  const std::size_t n = m.names.size();
  for (const auto& name : attrs["scores"].get<std::vector<std::string>>())
    if (name.rfind("distance_k", 0) == 0) m.ks.push_back(std::stoi(name.substr(10)));
  if (m.ks.empty()) throw Error(who + ": '" + scores.meta.key + "' has no distance_k<k> column (not from cvtree.compare)");
  const auto& a = t.column<std::int64_t>("a");
  const auto& b = t.column<std::int64_t>("b");
  for (int k : m.ks) {
    const auto& d = t.column<double>("distance_k" + std::to_string(k));
    std::vector<double> mat(n * n, std::nan(""));
    for (std::size_t i = 0; i < n; ++i) mat[i * n + i] = 0.0;
    for (std::size_t r = 0; r < d.size(); ++r) {
      const auto i = static_cast<std::size_t>(a[r]), j = static_cast<std::size_t>(b[r]);
      if (i >= n || j >= n) throw Error(who + ": pair (" + std::to_string(i) + ", " + std::to_string(j) +
                                        ") outside the " + std::to_string(n) + " proteomes");
      mat[i * n + j] = mat[j * n + i] = i == j ? 0.0 : d[r];
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (std::isnan(mat[i * n + j]))
          throw Error(who + ": no distance between '" + m.names[i] + "' and '" + m.names[j] + "' at k = " +
                      std::to_string(k));
    m.distance.push_back(std::move(mat));
  }
  return m;
}

}  // namespace flowd::cvtree

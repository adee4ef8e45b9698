#include "ops/write.hpp"

#include <cstdio>
#include <string>

#include "ops/matrices.hpp"
#include "ops/vectors.hpp"

namespace flowd::cvtree {

namespace {

std::filesystem::path phylip_file(const std::filesystem::path& dir, int k) {
  return dir / ("distances_k" + std::to_string(k) + ".phylip");
}
std::filesystem::path newick_file(const std::filesystem::path& dir, int k) {
  return dir / ("tree_k" + std::to_string(k) + ".nwk");
}

std::span<const std::uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace

OperatorSpec WriteSink::spec() {
  return {.name = "cvtree.write",
          .doc = "Writes each k's distance matrix as square PHYLIP and its tree as Newick (docs/plugins/cvtree.md)",
          .inputs = {{"scores", "table", "the score table of cvtree.compare"},
                     {"trees", "json", "the trees of cvtree.tree (same key)"}},
          .outputs = {},
          .params = {ParamSpec::string("dir").doc("the folder of distances_k<k>.phylip and tree_k<k>.nwk"),
                     k_spec()}};
}

WriteSink::WriteSink(const Params& p) : dir_(p.get<std::string>("dir")), ks_(k_param(p)) {}

void WriteSink::open(SinkContext& ctx) {
  for (int k : ks_) {
    ctx.output_file(phylip_file(dir_, k));
    ctx.output_file(newick_file(dir_, k));
  }
}

void WriteSink::consume(SinkContext& ctx) {
  if (scores_) throw Error("stage '" + ctx.stage() + "' takes one score table, got a second ('" +
                           ctx.input(0).meta.key + "')");
  scores_ = ctx.input("scores");
  trees_ = ctx.input("trees");
}

void WriteSink::commit(SinkContext& ctx) {
  const std::string who = "stage '" + ctx.stage() + "'";
  if (!scores_) throw Error(who + " received no score table");
  const DistanceMatrices m = distance_matrices(*scores_, who);
  const Json& trees = trees_->json();
  if (m.ks != ks_ || trees.value("k", Json()) != Json(ks_))
    throw Error(who + ": its k is " + Json(ks_).dump() + " but the scores are for " + Json(m.ks).dump() +
                " and the trees for " + trees.value("k", Json()).dump());
  for (const auto& name : m.names)
    if (name.find_first_of(" \t\r\n") != std::string::npos)
      throw Error(who + ": the proteome name '" + name + "' has whitespace, which a PHYLIP matrix cannot hold");
  const std::size_t n = m.names.size();
  for (std::size_t t = 0; t < ks_.size(); ++t) {
    std::string out = std::to_string(n) + "\n";
    char num[32];
    for (std::size_t i = 0; i < n; ++i) {
      out += m.names[i];
      for (std::size_t j = 0; j < n; ++j) {
        std::snprintf(num, sizeof num, " %.17g", m.distance[t][i * n + j]);
        out += num;
      }
      out += "\n";
    }
    ctx.write_output(phylip_file(dir_, ks_[t]), bytes_of(out));
    ctx.write_output(newick_file(dir_, ks_[t]), bytes_of(trees.at("newick").at(t).get<std::string>() + "\n"));
  }
}

}  // namespace flowd::cvtree

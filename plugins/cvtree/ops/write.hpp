#pragma once
#include <filesystem>
#include <optional>
#include <vector>

#include <flowd/flowd.hpp>

namespace flowd::cvtree {

// cvtree.write: for each k, dir/distances_k<k>.phylip (square PHYLIP: the
// count, then per proteome its name and its n distances, %.17g) and
// dir/tree_k<k>.nwk, from a cvtree.compare score table and the cvtree.tree
// trees of it (key-matched).
class WriteSink final : public Sink {
public:
  static OperatorSpec spec();
  explicit WriteSink(const Params& p);
  void open(SinkContext& ctx) override;
  void consume(SinkContext& ctx) override;
  void commit(SinkContext& ctx) override;

private:
  std::filesystem::path dir_;
  std::vector<int> ks_;
  std::optional<Item> scores_, trees_;
};

}  // namespace flowd::cvtree

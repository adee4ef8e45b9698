#pragma once
#include <vector>

#include <flowd/flowd.hpp>

namespace flowd::cvtree {

// cvtree.vector (map): a proteome file → its composition vectors for each
// k (ops/vectors.hpp), for workflows that keep or ship vectors; cvtree.compare
// builds them itself from files.
class VectorOp final : public Map {
public:
  static OperatorSpec spec();
  explicit VectorOp(const Params& p);
  void cpu(MapContext& ctx) const override;

private:
  std::vector<int> ks_;
};

}  // namespace flowd::cvtree

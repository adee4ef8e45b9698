#pragma once
// registration.pairwise: phi_{i,i+1} = A(f_i, f_i+1, I) for a pair of
// consecutive frames (docs/plugins/registration.md).
#include "flowd/flowd.hpp"
#include "frames.hpp"

namespace flowd::registration {

class Pairwise final : public Map {
public:
  static OperatorSpec spec();
  explicit Pairwise(const Params& params);
  void cpu(MapContext& ctx) const override;

private:
  OperatorOptions options_;
};

}  // namespace flowd::registration

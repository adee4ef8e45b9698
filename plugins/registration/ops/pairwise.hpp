#pragma once
// registration.pairwise: phi_{i,i+1} = A(f_i, f_i+1, I) for a pair of
// consecutive frames (docs/plugins/registration.md).
#include <functional>

#include "flowd/flowd.hpp"
#include "frames.hpp"

namespace flowd::registration {

// Emits the pair's motion on "deformation", keyed by the template: the
// identity for a frame paired with itself, else `registration`'s result
// (shared by the CPU and GPU variants).
void emit_pair_step(EmitContext& ctx, const std::function<Result(const Item& ref, const Item& tmpl)>& registration);

// Not final: in a build with CUDA registration adds the GPU variant
// (flowd/gpu.hpp).
class Pairwise : public Map {
public:
  static OperatorSpec spec();
  explicit Pairwise(const Params& params);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;  // gpu_variants.cpp: the pyramids and NCC sums on the GPU

private:
  OperatorOptions options_;
};

}  // namespace flowd::registration

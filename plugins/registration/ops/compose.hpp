#pragma once
// registration.compose: the scan's combine. For operands (i, j, phi_ij) and
// (j, k, phi_jk) it registers frame k to frame i starting from
// phi_jk o phi_ij (docs/plugins/registration.md): composing the two motions
// alone would add their errors; registering the two frames from that guess
// removes them, and the guess keeps the optimiser inside the right lattice
// period.
#include "flowd/flowd.hpp"
#include "frames.hpp"

namespace flowd::registration {

class Compose : public Scan {  // not final: the GPU combine is added by registration
public:
  static OperatorSpec spec();
  explicit Compose(const Params& params);
  Item combine(ScanContext& ctx, const Item& left, const Item& right) const override;
  // gpu_variants.cpp: the frames in the GPU's memory, A's sums on the GPU.
  Item combine_gpu(GpuScanContext& ctx, const Item& left, const Item& right) const;
  // An identity operand (from == to) gives the other one: no frame is read.
  std::optional<Item> shortcut(ScanContext& ctx, const Item& left, const Item& right) const override;

private:
  OperatorOptions options_;
};

}  // namespace flowd::registration

#pragma once
#include <flowd/flowd.hpp>

#include "fft.hpp"
#include "ops/method.hpp"

namespace flowd::prnu {

// prnu.fingerprint: the camera fingerprint K = Σ W_k·I_k / Σ I_k² of one
// camera's images (a group item of io.list_files: {"group", "files"}), then
// grey, ZeroMeanTotal and Wiener. A map over groups rather than a reduce:
// flowd's reduce has no key to group by, and one task per camera reads its
// images one at a time, so memory holds two running sums, not the images.
class Fingerprint final : public Map {
public:
  static OperatorSpec spec();
  explicit Fingerprint(const Params& p);
  void cpu(MapContext& ctx) const override;

private:
  Method method_;
  int crop_;
  mutable FftPlans plans_;
};

}  // namespace flowd::prnu

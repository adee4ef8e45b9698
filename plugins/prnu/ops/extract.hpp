#pragma once
#include <flowd/flowd.hpp>

#include "fft.hpp"
#include "ops/method.hpp"

namespace flowd::prnu {

// prnu.extract (map): a photo (a file item from io.list_files, or an image
// array from io.read_images) → its noise residual W, an f32 HxW pattern.
class Extract final : public Map {
public:
  static OperatorSpec spec();
  explicit Extract(const Params& p);
  void cpu(MapContext& ctx) const override;

private:
  Method method_;
  int crop_;
  mutable FftPlans plans_;
};

}  // namespace flowd::prnu

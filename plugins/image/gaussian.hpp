#pragma once
#include <flowd/flowd.hpp>

namespace flowd::image {

class Gaussian final : public Map {
public:
  static OperatorSpec spec();
  explicit Gaussian(const Params& p) : sigma_(p.get<double>("sigma")) {}
  void cpu(MapContext& ctx) const override;

private:
  double sigma_;
};

}  // namespace flowd::image

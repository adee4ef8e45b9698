#pragma once
#include <flowd/flowd.hpp>
#include <flowd/opencv.hpp>

namespace flowd::image {

class Gaussian final : public Map {
public:
  static OperatorSpec spec();
  explicit Gaussian(const Params& p) : sigma_(p.get<double>("sigma")) { use_one_opencv_thread(); }
  void cpu(MapContext& ctx) const override;

private:
  double sigma_;
};

}  // namespace flowd::image

#pragma once
#include <flowd/flowd.hpp>

namespace flowd::image {

class Histogram final : public Map {
public:
  static OperatorSpec spec();
  explicit Histogram(const Params& p) : bins_(p.get<std::int64_t>("bins")) {}
  void cpu(MapContext& ctx) const override;

private:
  std::int64_t bins_;
};

}  // namespace flowd::image

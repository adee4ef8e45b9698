#pragma once
#include <span>

#include <flowd/flowd.hpp>

namespace flowd::image {

// Otsu's threshold (1979) over a histogram: the level that maximises the
// between-class variance. Returns the bin index t; foreground is > t.
int otsu_level(std::span<const std::uint64_t> histogram);

class Threshold final : public Map {
public:
  static OperatorSpec spec();
  explicit Threshold(const Params& p);
  void cpu(MapContext& ctx) const override;

private:
  bool otsu_;
  double level_;
  bool invert_;
};

}  // namespace flowd::image

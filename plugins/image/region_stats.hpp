#pragma once
#include <flowd/flowd.hpp>

namespace flowd::image {

// One table row per labelled region: size, position in the global domain and
// intensity statistics. On tiles with a halo, a region is reported only by
// the tile whose core holds its centroid, so every region crossing a tile
// border is counted once (given a halo wider than half a region).
class RegionStats final : public Map {
public:
  static OperatorSpec spec();
  explicit RegionStats(const Params& p) : min_area_(p.get<std::int64_t>("min_area")) {}
  void cpu(MapContext& ctx) const override;

private:
  std::int64_t min_area_;
};

}  // namespace flowd::image

#pragma once
// nuclei.features: one table row per nucleus of a labelled RGB tile
// (features.hpp defines every column). On tiles with a halo, a nucleus is
// reported only by the tile whose core holds its centroid, so nuclei
// crossing tile borders are neither lost nor counted twice (given a halo
// wider than a nucleus plus its ring).
#include <flowd/flowd.hpp>

#if FLOWD_WITH_CUDA
#include <flowd/gpu.hpp>
#endif

#include "features/features.hpp"

namespace flowd::nuclei {

class Features final : public Map
#if FLOWD_WITH_CUDA
    , public GpuVariant
#endif
{
public:
  static OperatorSpec spec();
  explicit Features(const Params& p);
  void cpu(MapContext& ctx) const override;
#if FLOWD_WITH_CUDA
  void gpu(GpuContext& ctx) const override;
#endif

private:
  features::Options options_;
};

}  // namespace flowd::nuclei

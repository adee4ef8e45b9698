#pragma once
// nuclei.features: one table row per nucleus of a labelled RGB tile
// (features.hpp defines every column). On tiles with a halo, a nucleus is
// reported only by the tile whose core holds its centroid, so nuclei
// crossing tile borders are neither lost nor counted twice (given a halo
// wider than a nucleus plus its ring).
#include <string>

#include <flowd/flowd.hpp>

#include "features/features.hpp"

namespace flowd::nuclei {

// gpu() is defined in features_op_gpu.cpp, compiled only in a build with
// CUDA; registration lists the GPU variant only then (flowd/gpu.hpp).
class Features : public Map {
public:
  static OperatorSpec spec();
  explicit Features(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;

private:
  // Shared by both variants (features_op.cpp).
  static Table make_table(const ItemMeta& meta, const features::Result& r);
  static features::Options options_for(const features::Options& o, const ItemMeta& labels);
  static void check_shapes(const std::string& op, const Array& img, const Array& labels);

  features::Options options_;
};

}  // namespace flowd::nuclei

#pragma once
// nuclei.segment: the whole segmentation of a tile as one coarse stage whose
// operations run as fine-grained sub-tasks (Region Templates' two-level
// dataflow), each on the CPU or a GPU as the scheduler decides. Two methods:
// "learned" (the default since issue 39): the nuclear map network
// (nuclei.nuclear_map), the marker watershed, the size filter; "classical":
// Region Templates' pipeline, exactly what segment/pipeline.hpp's segment()
// gives.
#include <flowd/flowd.hpp>

#include "segment/pipeline.hpp"

namespace flowd::nuclei {

class SegmentStage final : public Map {
public:
  static OperatorSpec spec();
  explicit SegmentStage(const Params& p);
  void cpu(MapContext& ctx) const override;

private:
  void classical(MapContext& ctx) const;
  void learned(MapContext& ctx) const;

  SegmentParams params_;
  bool learned_ = true;
  Json map_params_;            // nuclei.nuclear_map's
  double min_nucleus_um2_ = 0;  // the learned method's size filter
};

}  // namespace flowd::nuclei

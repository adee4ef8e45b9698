#pragma once
// nuclei.segment: the whole segmentation of a tile as one coarse stage whose
// operations run as fine-grained sub-tasks (Region Templates' two-level
// dataflow), each on the CPU or a GPU as the scheduler decides. Gives exactly
// what segment/pipeline.hpp's segment() gives.
#include <flowd/flowd.hpp>

#include "segment/pipeline.hpp"

namespace flowd::nuclei {

class SegmentStage final : public Map {
public:
  static OperatorSpec spec();
  explicit SegmentStage(const Params& p);
  void cpu(MapContext& ctx) const override;

private:
  SegmentParams params_;
};

}  // namespace flowd::nuclei

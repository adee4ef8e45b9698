// The nuclei plugin: segmentation of nuclei in H&E tiles and per-nucleus
// features (docs/plugins/nuclei.md).
#include <flowd/plugin.hpp>

#include "features/features_op.hpp"
#include "ops/nuclear_map_op.hpp"
#include "ops/segment_ops.hpp"
#include "ops/segment_stage.hpp"

FLOWD_PLUGIN("nuclei", "0.1.0",
             "Nuclei segmentation and per-nucleus features for H&E whole-slide tiles (Region Templates' application)",
             FLOWD_NUCLEI_SEGMENT_OPS, flowd::nuclei::NuclearMapOp, flowd::nuclei::SegmentStage, flowd::nuclei::Features)

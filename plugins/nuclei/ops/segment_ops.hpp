#pragma once
// The segmentation operations of the nuclei plugin as flowd operators, each
// usable as a stage of its own and as a sub-task of nuclei.segment
// (segment_stage.hpp). The CPU variants call segment/segment.hpp, the GPU
// variants their CUDA twins (segment/gpu/segment_gpu.hpp), which give the same
// results. Every gpu() is defined in segment_ops_gpu.cpp, compiled only in a
// build with CUDA; registration lists the GPU variants only then
// (flowd/gpu.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include <flowd/flowd.hpp>

namespace flowd::nuclei {

class TissueOp : public Map {
public:
  static OperatorSpec spec();
  explicit TissueOp(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
private:
  int level_;
};

class RbcOp : public Map {
public:
  static OperatorSpec spec();
  explicit RbcOp(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
private:
  int rg_q8_, rb_q8_, level_;
};

class DeconvolveOp : public Map {
public:
  static OperatorSpec spec();
  explicit DeconvolveOp(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
private:
  int stain_;
  double od_max_;
};

class OpenOp : public Map {
public:
  static OperatorSpec spec();
  explicit OpenOp(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
private:
  int radius_;
  std::vector<int> half_widths_;
};

// ReconToNuclei: reconstruction of the opened image under the original, then
// the nuclear threshold (threshold < 0: the reconstruction itself).
class ReconstructOp : public Map {
public:
  static OperatorSpec spec();
  explicit ReconstructOp(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
private:
  int threshold_;
};

class AreaThresholdOp : public Map {
public:
  static OperatorSpec spec();
  explicit AreaThresholdOp(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
private:
  int min_area_, max_area_;
};

class FillHolesOp : public Map {
public:
  static OperatorSpec spec();
  explicit FillHolesOp(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
private:
  int max_hole_area_;
};

// Pre-watershed: the distance transform of the mask and its h-maxima markers.
class PreWatershedOp : public Map {
public:
  static OperatorSpec spec();
  explicit PreWatershedOp(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
private:
  float h_;
};

class WatershedOp : public Map {
public:
  static OperatorSpec spec();
  explicit WatershedOp(const Params&) {}
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
};

class LabelOp : public Map {
public:
  static OperatorSpec spec();
  explicit LabelOp(const Params&) {}
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;
};

// Object selection (segment/select.hpp): drops objects that are not darker
// than the tissue around them or not compact. CPU only: no GPU twin yet.
class SelectOp final : public Map {
public:
  static OperatorSpec spec();
  explicit SelectOp(const Params& p);
  void cpu(MapContext& ctx) const override;

private:
  int ring_radius_, min_ring_pixels_;
  float min_contrast_;
  double min_solidity_, min_ratio_;
};

// Final clean-up: drops objects below min_area and numbers the rest 1..n.
// CPU only: a single pass over labels that go to the host anyway.
class RelabelOp final : public Map {
public:
  static OperatorSpec spec();
  explicit RelabelOp(const Params& p);
  void cpu(MapContext& ctx) const override;
private:
  int min_area_;
};

}  // namespace flowd::nuclei

#define FLOWD_NUCLEI_SEGMENT_OPS                                                                                  \
  flowd::nuclei::TissueOp, flowd::nuclei::RbcOp, flowd::nuclei::DeconvolveOp, flowd::nuclei::OpenOp,              \
      flowd::nuclei::ReconstructOp, flowd::nuclei::AreaThresholdOp, flowd::nuclei::FillHolesOp,                   \
      flowd::nuclei::PreWatershedOp, flowd::nuclei::WatershedOp, flowd::nuclei::LabelOp, flowd::nuclei::SelectOp, \
      flowd::nuclei::RelabelOp

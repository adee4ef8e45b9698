#pragma once
// nuclei.nuclear_map: the learned method's first step (learned/nuclear_map.hpp)
// as an operator, a sub-task of nuclei.segment (method "learned") and a stage
// of its own: an RGB tile in; the nucleus mask, the watershed's markers and
// the surface it climbs out, with attrs.mpp the resolution used. The model
// is loaded, and checked against its manifest, when the operator is made:
// a missing or corrupt one fails the workflow's validation, before any tile.
#include <memory>

#include <flowd/flowd.hpp>

#include "learned/nuclear_map.hpp"

namespace flowd::nuclei {

class NuclearMapOp final : public Map {
public:
  static OperatorSpec spec();
  explicit NuclearMapOp(const Params& p);
  void cpu(MapContext& ctx) const override;

  // The `model` parameter's file ("" = the one shipped beside the plugin).
  static std::filesystem::path model_file(const std::string& param);

private:
  std::shared_ptr<const NuclearMapModel> model_;
  MapParams params_;
};

}  // namespace flowd::nuclei

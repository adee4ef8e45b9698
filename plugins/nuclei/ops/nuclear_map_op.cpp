#include "ops/nuclear_map_op.hpp"

#include <flowd/opencv.hpp>

namespace flowd::nuclei {

OperatorSpec NuclearMapOp::spec() {
  const MapParams d;
  return {.name = "nuclei.nuclear_map",
          .doc = "The learned nuclear map (issue 39): a small U-Net (tools/train/nuclei, trained on real annotated "
                 "H&E tiles) gives each pixel p(background), p(interior), p(boundary) at its training resolution "
                 "(the tile resampled from its mpp, or from one estimated from its nuclei); out come the nucleus "
                 "mask, the watershed markers (interior parts) and the surface the watershed climbs (p(interior)).",
          .inputs = {{"image", "array<u8,3>", "RGB tile"}},
          .outputs = {{"mask", "array<u8,2>", "nuclei, 0 / 255; attrs.mpp = the resolution used"},
                      {"markers", "array<i32,2>", "one marker per nucleus, 1..n"},
                      {"surface", "array<f32,2>", "p(interior), for nuclei.watershed"}},
          .params = {ParamSpec::string("model", "").doc(
                         "the network, MODEL.onnx with MODEL.json beside it; \"\" = nuclei-unet.onnx shipped beside "
                         "the plugin"),
                     ParamSpec::number("mpp", d.mpp).range(0, 10).doc("microns per pixel; 0 = estimate from the nuclei"),
                     ParamSpec::number("marker_level", d.marker_level)
                         .range(0, 1)
                         .doc("p(interior) above which a pixel is part of a marker"),
                     ParamSpec::number("min_marker_um2", d.min_marker_um2)
                         .range(0, 1000)
                         .doc("interior parts smaller than this (µm²) are not markers")}};
}

std::filesystem::path NuclearMapOp::model_file(const std::string& param) {
  return param.empty() ? shipped_model_path() : std::filesystem::path(param);
}

NuclearMapOp::NuclearMapOp(const Params& p) {
  params_.mpp = p.get<double>("mpp");
  params_.marker_level = p.get<double>("marker_level");
  params_.min_marker_um2 = p.get<double>("min_marker_um2");
  try {
    model_ = NuclearMapModel::load(model_file(p.get<std::string>("model")));
  } catch (const ModelError& e) {
    throw ParamError("model", e.what());
  }
  use_one_opencv_thread();
}

void NuclearMapOp::cpu(MapContext& ctx) const {
  const Item& in = ctx.input("image");
  // A tile is a view into its image: rows strided, which a cv::Mat takes as
  // it is; a copy only where the pixels are not interleaved, kept alive
  // while the Mat is used (as_mat is a view).
  const Array& a = in.array();
  const Array packed = a.stride(2) == 1 && a.stride(1) == a.shape(2) ? a : a.contiguous();
  const cv::Mat rgb = as_mat(packed);
  const NuclearMap m = nuclear_map(*model_, rgb, params_);
  Item mask{in.meta, Value(from_mat(m.mask))};
  mask.meta.attrs["mpp"] = m.mpp;
  ctx.emit("mask", std::move(mask));
  ctx.emit("markers", Value(from_mat(m.markers)));
  ctx.emit("surface", Value(from_mat(m.surface)));
}

}  // namespace flowd::nuclei

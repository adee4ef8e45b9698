#include "ops/segment_stage.hpp"

#include <cmath>

#include <flowd/opencv.hpp>

#include "ops/nuclear_map_op.hpp"

namespace flowd::nuclei {

OperatorSpec SegmentStage::spec() {
  const SegmentParams d;
  return {
      .name = "nuclei.segment",
      .doc =
          "Nuclei segmentation of an H&E RGB tile. method \"learned\" (default): a small U-Net trained on real "
          "annotated tiles gives each pixel p(background, interior, boundary) (nuclei.nuclear_map), the interior's "
          "parts seed a marker watershed that splits touching nuclei, small objects go. method \"classical\": "
          "Region Templates' pipeline: tissue and red-blood-cell detection, colour deconvolution to haematoxylin, "
          "morphological open, ReconToNuclei, area threshold, fill holes, pre-watershed, watershed, object selection "
          "(contrast against a ring, solidity), relabelling. Each operation runs as a sub-task. Parameters are "
          "physical (µm) or relative, so the defaults serve 40x and 20x scans; docs/plugins/nuclei.md explains each.",
      .inputs = {{"image", "array<u8,3>", "RGB tile"}},
      .outputs = {{"labels", "array<i32,2>", "nuclei 1..n (0 = background); attrs.mpp = the resolution used"}},
      .params = {ParamSpec::string("method", "learned")
                     .choices({"learned", "classical"})
                     .doc("learned: the nuclear map network; classical: Region Templates' pipeline (the parameters "
                          "below from background_level on)"),
                 ParamSpec::string("model", "").doc(
                     "learned: the network, MODEL.onnx with its MODEL.json; \"\" = the one shipped beside the plugin"),
                 ParamSpec::number("marker_level", MapParams{}.marker_level)
                     .range(0, 1)
                     .doc("learned: p(interior) above which a pixel seeds a nucleus"),
                 ParamSpec::number("min_marker_um2", MapParams{}.min_marker_um2)
                     .range(0, 1000)
                     .doc("learned: interior parts smaller than this (µm²) seed nothing"),
                 ParamSpec::number("min_nucleus_um2", 8.0)
                     .range(0, 10000)
                     .doc("learned: smallest nucleus kept, µm²"),
                 ParamSpec::number("mpp", d.mpp)
                     .range(0, 10)
                     .doc("microns per pixel (0.25 at 40x, 0.5 at 20x); 0 = estimate "
                          "from the size of the nuclei"),
                 ParamSpec::integer("background_level", d.background_level)
                     .range(1, 255)
                     .doc("mean channel value at or above which a pixel is glass"),
                 ParamSpec::number("rbc_rg", d.rbc_rg).range(1, 16).doc("red blood cells: minimum red/green ratio"),
                 ParamSpec::number("rbc_rb", d.rbc_rb).range(1, 16).doc("red blood cells: minimum red/blue ratio"),
                 ParamSpec::number("od_max", d.od_max).range(0.1, 5).doc("haematoxylin optical density mapped to 255"),
                 ParamSpec::number("open_radius_um", d.open_radius_um)
                     .range(0, 50)
                     .doc("radius of the opening disk, µm: thinner dark structures cannot seed a nucleus"),
                 ParamSpec::number("threshold_frac", d.threshold_frac)
                     .range(0, 1)
                     .doc("nuclear threshold between the tissue and nuclear haematoxylin levels"),
                 ParamSpec::number("min_area_um2", d.min_area_um2).range(0, 10000).doc("smallest nucleus, µm²"),
                 ParamSpec::number("max_hole_um2", d.max_hole_um2).range(0, 10000).doc("largest hole filled, µm²"),
                 ParamSpec::number("h_frac", d.h_frac)
                     .range(0, 10)
                     .doc("watershed marker depth as a fraction of the typical nucleus radius"),
                 ParamSpec::number("nucleus_radius_um", d.nucleus_radius_um)
                     .range(0.5, 50)
                     .doc("typical nucleus radius, µm (for h and for estimating mpp)"),
                 ParamSpec::number("ring_um", d.ring_um)
                     .range(0.1, 50)
                     .doc("width of the ring of tissue a nucleus is compared with, µm"),
                 ParamSpec::number("contrast_frac", d.contrast_frac)
                     .range(-1, 1)
                     .doc(
                         "how much darker than its ring a nucleus must be, as a fraction of the gap between the tissue "
                         "and nuclear haematoxylin levels"),
                 ParamSpec::number("min_solidity", d.min_solidity)
                     .range(0, 1)
                     .doc("smallest area / convex hull area of a nucleus"),
                 ParamSpec::number("contrast_ratio", d.contrast_ratio)
                     .range(0, 100)
                     .doc("how many times its ring's mean haematoxylin a nucleus's must be")},
      .uses = {"nuclei.tissue", "nuclei.rbc", "nuclei.deconvolve", "nuclei.open", "nuclei.reconstruct",
               "nuclei.area_threshold", "nuclei.fill_holes", "nuclei.prewatershed", "nuclei.watershed", "nuclei.select",
               "nuclei.relabel", "nuclei.nuclear_map"}};
}

SegmentStage::SegmentStage(const Params& p) {
  params_.mpp = p.get<double>("mpp");
  params_.background_level = static_cast<int>(p.get<std::int64_t>("background_level"));
  params_.rbc_rg = p.get<double>("rbc_rg");
  params_.rbc_rb = p.get<double>("rbc_rb");
  params_.od_max = p.get<double>("od_max");
  params_.open_radius_um = p.get<double>("open_radius_um");
  params_.threshold_frac = p.get<double>("threshold_frac");
  params_.min_area_um2 = p.get<double>("min_area_um2");
  params_.max_hole_um2 = p.get<double>("max_hole_um2");
  params_.h_frac = p.get<double>("h_frac");
  params_.nucleus_radius_um = p.get<double>("nucleus_radius_um");
  params_.ring_um = p.get<double>("ring_um");
  params_.contrast_frac = p.get<double>("contrast_frac");
  params_.min_solidity = p.get<double>("min_solidity");
  params_.contrast_ratio = p.get<double>("contrast_ratio");
  learned_ = p.get<std::string>("method") == "learned";
  min_nucleus_um2_ = p.get<double>("min_nucleus_um2");
  map_params_ = {{"model", p.get<std::string>("model")},
                 {"mpp", params_.mpp},
                 {"marker_level", p.get<double>("marker_level")},
                 {"min_marker_um2", p.get<double>("min_marker_um2")}};
  if (learned_) {
    // Checked now, so that a missing or corrupt model fails the workflow's
    // validation before any tile is read (the sub-task loads its own copy).
    try {
      (void)NuclearMapModel::load(NuclearMapOp::model_file(p.get<std::string>("model")));
    } catch (const ModelError& e) {
      throw ParamError("model", e.what());
    }
  }
  use_one_opencv_thread();
}

void SegmentStage::cpu(MapContext& ctx) const {
  if (learned_) learned(ctx);
  else classical(ctx);
}

void SegmentStage::learned(MapContext& ctx) const {
  const Item& image = ctx.input("image");
  SubTasks& sub = ctx.subtasks();
  const std::size_t map = sub.call("nuclei.nuclear_map", map_params_, {image});
  const std::size_t split = sub.call("nuclei.watershed", Json::object(),
                                     {SubRef{map, "surface"}, SubRef{map, "markers"}, SubRef{map, "mask"}});
  sub.wait();
  const double mpp = sub.result(map, "mask").meta.attrs.value("mpp", 0.25);
  const auto min_area = static_cast<std::int64_t>(std::ceil(min_nucleus_um2_ / (mpp * mpp)));
  const std::size_t labels = sub.call("nuclei.relabel", {{"min_area", min_area}}, {SubRef{split, "labels"}});
  sub.wait();
  Item out{image.meta, sub.result(labels, "labels").value};
  out.meta.attrs["mpp"] = mpp;
  ctx.emit("labels", std::move(out));
}

void SegmentStage::classical(MapContext& ctx) const {
  const Item& image = ctx.input("image");
  // The resolution-free levels first; the resolution (when estimated) and the
  // nuclear threshold need the haematoxylin channel, so the sizes are derived
  // after the first three operations.
  const Derived levels = derive_sizes(1, params_);

  SubTasks& sub = ctx.subtasks();
  const Json level = levels.tissue_level;
  const std::size_t tissue = sub.call("nuclei.tissue", {{"level", level}}, {image});
  const std::size_t rbc = sub.call("nuclei.rbc", {{"rg", params_.rbc_rg}, {"rb", params_.rbc_rb}, {"level", level}},
                                   {image});
  const std::size_t haem = sub.call("nuclei.deconvolve", {{"stain", "haematoxylin"}, {"od_max", levels.od_max}},
                                    {image, SubRef{tissue, "mask"}, SubRef{rbc, "mask"}});
  sub.wait();
  const Derived d = derive(as_mat(sub.result(haem, "stain").array()), as_mat(sub.result(tissue, "mask").array()),
                           as_mat(sub.result(rbc, "mask").array()), params_);

  const std::size_t opened = sub.call("nuclei.open", {{"radius", d.open_radius}}, {SubRef{haem, "stain"}});
  const std::size_t nuclei =
      sub.call("nuclei.reconstruct", {{"threshold", d.threshold}}, {SubRef{opened, "image"}, SubRef{haem, "stain"}});
  const std::size_t sized = sub.call("nuclei.area_threshold", {{"min_area", d.min_area}, {"max_area", 0}},
                                     {SubRef{nuclei, "image"}});
  const std::size_t filled = sub.call("nuclei.fill_holes", {{"max_hole_area", d.max_hole_area}},
                                      {SubRef{sized, "mask"}});
  const std::size_t pre = sub.call("nuclei.prewatershed", {{"h", d.h}}, {SubRef{filled, "mask"}});
  const std::size_t split =
      sub.call("nuclei.watershed", Json::object(),
               {SubRef{pre, "distance"}, SubRef{pre, "markers"}, SubRef{filled, "mask"}});
  const std::size_t selected =
      sub.call("nuclei.select",
               {{"ring_radius", d.ring_radius},
                {"min_contrast", d.min_contrast},
                {"min_solidity", d.min_solidity},
                {"min_ratio", d.min_ratio}},
               {SubRef{split, "labels"}, SubRef{haem, "stain"}, SubRef{tissue, "mask"}, SubRef{rbc, "mask"}});
  const std::size_t labels = sub.call("nuclei.relabel", {{"min_area", d.min_area}}, {SubRef{selected, "labels"}});
  sub.wait();

  Item out{image.meta, sub.result(labels, "labels").value};
  out.meta.attrs["mpp"] = d.mpp;
  ctx.emit("labels", std::move(out));
}

}  // namespace flowd::nuclei

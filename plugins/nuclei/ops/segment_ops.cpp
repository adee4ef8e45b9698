// CPU variants and specs of the segmentation operators.
#include "ops/segment_ops.hpp"

#include <flowd/opencv.hpp>

#include "segment/pipeline.hpp"
#include "segment/segment.hpp"
#include "segment/select.hpp"

namespace flowd::nuclei {

namespace {

// A contiguous copy only when OpenCV cannot view the array as it is (tiles
// from io.read_tiles are views with the whole image's row stride, which a
// cv::Mat handles).
cv::Mat view(const Item& item) {
  const Array& a = item.array();
  const std::int64_t channels = a.ndim() == 3 ? a.shape(2) : 1;
  const bool packed = (a.ndim() == 2 || a.stride(2) == 1) && a.stride(1) == channels;
  return as_mat(packed ? a : a.contiguous());
}

void emit_mat(MapContext& ctx, std::string_view port, const cv::Mat& m) { ctx.emit(port, Value(from_mat(m))); }

const PortSpec rgb_in{"image", "array<u8,3>", "RGB tile"};
const PortSpec mask_out{"mask", "array<u8,2>", "0 / 255"};

// GPU speedups that seed the performance model until a run measures both
// variants on the machine at hand: each operation's GPU variant against its
// CPU variant on one core, inside the engine (transfers included), measured
// by `flowd calibrate workflows/nuclei.json` on a lent H200 beside one of its
// Xeon cores, 2026-11-27, the mean of two calibrations (docs/benchmarks.md
// §12.3). nuclei.label is not in the main job and keeps the low group of
// Region Templates' Fig. 16.
namespace measured {
constexpr double tissue = 8, rbc = 14, deconvolve = 34, open = 9, reconstruct = 4, area_threshold = 4,
                 fill_holes = 5, prewatershed = 8, watershed = 10;
}  // namespace measured
constexpr double low_speedup = 4;

}  // namespace

// ---- tissue ---------------------------------------------------------------

OperatorSpec TissueOp::spec() {
  return {.name = "nuclei.tissue",
          .doc = "Tissue/background detection: tissue where (R + G + B) / 3 < level (glass is bright).",
          .inputs = {rgb_in},
          .outputs = {mask_out},
          .params = {ParamSpec::integer("level", SegmentParams{}.background_level).range(1, 255)
                         .doc("mean channel value at or above which a pixel is glass")},
          .speedup_hint = measured::tissue};
}
TissueOp::TissueOp(const Params& p) : level_(static_cast<int>(p.get<std::int64_t>("level"))) { use_one_opencv_thread(); }
void TissueOp::cpu(MapContext& ctx) const { emit_mat(ctx, "mask", tissue_mask(view(ctx.input(0)), level_)); }

// ---- red blood cells ------------------------------------------------------

OperatorSpec RbcOp::spec() {
  const SegmentParams d;
  return {.name = "nuclei.rbc",
          .doc = "Red-blood-cell detection: eosin-red pixels with R >= rg * G and R >= rb * B, on tissue.",
          .inputs = {rgb_in},
          .outputs = {mask_out},
          .params = {ParamSpec::number("rg", d.rbc_rg).range(1, 16).doc("minimum red/green ratio"),
                     ParamSpec::number("rb", d.rbc_rb).range(1, 16).doc("minimum red/blue ratio"),
                     ParamSpec::integer("level", d.background_level).range(1, 255).doc("glass level, as nuclei.tissue")},
          .speedup_hint = measured::rbc};
}
RbcOp::RbcOp(const Params& p)
    : rg_q8_(static_cast<int>(std::lround(256 * p.get<double>("rg")))),
      rb_q8_(static_cast<int>(std::lround(256 * p.get<double>("rb")))),
      level_(static_cast<int>(p.get<std::int64_t>("level"))) {}
void RbcOp::cpu(MapContext& ctx) const {
  emit_mat(ctx, "mask", rbc_mask(view(ctx.input(0)), rg_q8_, rb_q8_, level_));
}

// ---- colour deconvolution -------------------------------------------------

OperatorSpec DeconvolveOp::spec() {
  return {.name = "nuclei.deconvolve",
          .doc = "Colour deconvolution (Ruifrok & Johnston) to one stain's optical density, 0..od_max mapped to "
                 "0..255. With the optional tissue and rbc masks, pixels off tissue or on red blood cells are 0.",
          .inputs = {rgb_in,
                     {"tissue", "array<u8,2>", "tissue mask (nuclei.tissue)", true},
                     {"rbc", "array<u8,2>", "red-blood-cell mask (nuclei.rbc)", true}},
          .outputs = {{"stain", "array<u8,2>", "stain concentration"}},
          .params = {ParamSpec::string("stain", "haematoxylin").choices({"haematoxylin", "eosin"}),
                     ParamSpec::number("od_max", SegmentParams{}.od_max).range(0.1, 5)
                         .doc("optical density that maps to 255")},
          .speedup_hint = measured::deconvolve};
}
DeconvolveOp::DeconvolveOp(const Params& p)
    : stain_(p.get<std::string>("stain") == "eosin" ? 1 : 0), od_max_(p.get<double>("od_max")) {}
void DeconvolveOp::cpu(MapContext& ctx) const {
  cv::Mat s = deconvolve(view(ctx.input(0)), stain_weights(stain_, od_max_));
  const bool tissue = ctx.has_input("tissue"), rbc = ctx.has_input("rbc");
  if (tissue || rbc) {
    const cv::Mat all = cv::Mat(s.size(), CV_8U, cv::Scalar(255)), none = cv::Mat::zeros(s.size(), CV_8U);
    s = mask_haem(s, tissue ? view(ctx.input("tissue")) : all, rbc ? view(ctx.input("rbc")) : none);
  }
  emit_mat(ctx, "stain", s);
}

// ---- open ----------------------------------------------------------------

OperatorSpec OpenOp::spec() {
  return {.name = "nuclei.open",
          .doc = "Grey-level morphological opening by a disk (OpenCV's ellipse of size 2r+1); pixels outside the "
                 "image are ignored.",
          .inputs = {{"image", "array<u8,2>", "grey image"}},
          .outputs = {{"image", "array<u8,2>", "opened image"}},
          .params = {ParamSpec::integer("radius", 4).range(0, 256).doc("disk radius in pixels")},
          .speedup_hint = measured::open};
}
OpenOp::OpenOp(const Params& p)
    : radius_(static_cast<int>(p.get<std::int64_t>("radius"))), half_widths_(disk_half_widths(radius_)) {
  use_one_opencv_thread();
}
void OpenOp::cpu(MapContext& ctx) const { emit_mat(ctx, "image", open(view(ctx.input(0)), radius_)); }

// ---- reconstruction (ReconToNuclei) ----------------------------------------

OperatorSpec ReconstructOp::spec() {
  return {.name = "nuclei.reconstruct",
          .doc = "ReconToNuclei: grey-level morphological reconstruction by dilation of `marker` under `mask` "
                 "(8-connected), then the nuclear threshold (recon >= threshold gives a 0/255 mask); threshold -1 "
                 "emits the reconstruction itself.",
          .inputs = {{"marker", "array<u8,2>", "marker (e.g. the opened image)"},
                     {"mask", "array<u8,2>", "mask (e.g. the haematoxylin channel)"}},
          .outputs = {{"image", "array<u8,2>", "the thresholded reconstruction (or the reconstruction)"}},
          .params = {ParamSpec::integer("threshold", -1).range(-1, 255).doc("nuclear level; -1 = no threshold")},
          .speedup_hint = measured::reconstruct};
}
ReconstructOp::ReconstructOp(const Params& p) : threshold_(static_cast<int>(p.get<std::int64_t>("threshold"))) {}
void ReconstructOp::cpu(MapContext& ctx) const {
  const cv::Mat marker = view(ctx.input("marker")), mask = view(ctx.input("mask"));
  if (marker.size() != mask.size())
    throw Error("nuclei.reconstruct: marker and mask differ in size on '" + ctx.meta().key + "'");
  cv::Mat r = reconstruct(marker, mask);
  if (threshold_ >= 0) r = threshold_mask(r, threshold_);
  emit_mat(ctx, "image", r);
}

// ---- area threshold ------------------------------------------------------

OperatorSpec AreaThresholdOp::spec() {
  return {.name = "nuclei.area_threshold",
          .doc = "Keeps the 8-connected components of a mask whose area lies in [min_area, max_area].",
          .inputs = {{"mask", "array<u8,2>", "0 / non-zero"}},
          .outputs = {mask_out},
          .params = {ParamSpec::integer("min_area", 1).at_least(0).doc("smallest kept area, pixels"),
                     ParamSpec::integer("max_area", 0).at_least(0).doc("largest kept area, pixels; 0 = no limit")},
          .speedup_hint = measured::area_threshold};
}
AreaThresholdOp::AreaThresholdOp(const Params& p)
    : min_area_(static_cast<int>(p.get<std::int64_t>("min_area"))),
      max_area_(static_cast<int>(p.get<std::int64_t>("max_area"))) {
  if (max_area_ > 0 && max_area_ < min_area_) throw ParamError("max_area", "max_area is below min_area");
  use_one_opencv_thread();
}
void AreaThresholdOp::cpu(MapContext& ctx) const {
  emit_mat(ctx, "mask", area_threshold(view(ctx.input(0)), min_area_, max_area_));
}

// ---- fill holes ------------------------------------------------------------

OperatorSpec FillHolesOp::spec() {
  return {.name = "nuclei.fill_holes",
          .doc = "Fills holes: background regions (4-connected) that do not touch the image border, up to "
                 "max_hole_area pixels (0 = every hole).",
          .inputs = {{"mask", "array<u8,2>", "0 / non-zero"}},
          .outputs = {mask_out},
          .params = {ParamSpec::integer("max_hole_area", 0).at_least(0).doc("largest filled hole, pixels; 0 = all")},
          .speedup_hint = measured::fill_holes};
}
FillHolesOp::FillHolesOp(const Params& p) : max_hole_area_(static_cast<int>(p.get<std::int64_t>("max_hole_area"))) {
  use_one_opencv_thread();
}
void FillHolesOp::cpu(MapContext& ctx) const {
  const cv::Mat m = view(ctx.input(0));
  emit_mat(ctx, "mask", max_hole_area_ > 0 ? fill_small_holes(m, max_hole_area_) : fill_holes(m));
}

// ---- pre-watershed ---------------------------------------------------------

OperatorSpec PreWatershedOp::spec() {
  return {.name = "nuclei.prewatershed",
          .doc = "Pre-watershed: the exact Euclidean distance transform of the mask and the watershed markers, "
                 "the regional maxima of its h-maxima transform (one or more per object).",
          .inputs = {{"mask", "array<u8,2>", "0 / non-zero"}},
          .outputs = {{"distance", "array<f32,2>", "distance to the background, pixels"},
                      {"markers", "array<i32,2>", "markers 1..n"}},
          .params = {ParamSpec::number("h", 2.0).range(0, 1000).doc("h of the h-maxima, pixels: centres less than h "
                                                                    "above the neck between them are merged")},
          .speedup_hint = measured::prewatershed};
}
PreWatershedOp::PreWatershedOp(const Params& p) : h_(static_cast<float>(p.get<double>("h"))) {}
void PreWatershedOp::cpu(MapContext& ctx) const {
  const cv::Mat dist = distance_transform(view(ctx.input(0)));
  emit_mat(ctx, "markers", watershed_markers(dist, h_));
  emit_mat(ctx, "distance", dist);
}

// ---- watershed -------------------------------------------------------------

OperatorSpec WatershedOp::spec() {
  return {.name = "nuclei.watershed",
          .doc = "Marker watershed on the distance transform (steepest ascent, deterministic on plateaus): splits "
                 "touching nuclei; every mask pixel gets the label of the marker its ascent reaches.",
          .inputs = {{"distance", "array<f32,2>", "nuclei.prewatershed's distance"},
                     {"markers", "array<i32,2>", "nuclei.prewatershed's markers"},
                     {"mask", "array<u8,2>", "the objects to split"}},
          .outputs = {{"labels", "array<i32,2>", "one label per nucleus"}},
          .speedup_hint = measured::watershed};
}
void WatershedOp::cpu(MapContext& ctx) const {
  emit_mat(ctx, "labels", watershed(view(ctx.input("distance")), view(ctx.input("markers")), view(ctx.input("mask"))));
}

// ---- labelling -------------------------------------------------------------

OperatorSpec LabelOp::spec() {
  return {.name = "nuclei.label",
          .doc = "Connected-component labelling (8-connected), labels 1..n.",
          .inputs = {{"mask", "array<u8,2>", "0 / non-zero"}},
          .outputs = {{"labels", "array<i32,2>", "labels 1..n"}},
          .speedup_hint = low_speedup};
}
void LabelOp::cpu(MapContext& ctx) const {
  use_one_opencv_thread();
  emit_mat(ctx, "labels", label(view(ctx.input(0)))); }

// ---- object selection ------------------------------------------------------

OperatorSpec SelectOp::spec() {
  const SelectRule d;
  return {
      .name = "nuclei.select",
      .doc =
          "Object selection: keeps the labelled objects that are compact (area over convex hull area >= "
          "min_solidity) and darker in haematoxylin than the tissue around them (mean inside minus mean of "
          "the ring of valid pixels within ring_radius >= min_contrast, and mean inside >= min_ratio x mean of "
          "the ring; objects with fewer than min_ring_pixels ring pixels, buried in a cluster, are not judged "
          "on contrast). Others become 0.",
      .inputs = {{"labels", "array<i32,2>", "objects (e.g. nuclei.watershed's labels)"},
                 {"stain", "array<u8,2>", "haematoxylin (nuclei.deconvolve)"},
                 {"tissue", "array<u8,2>", "tissue mask (nuclei.tissue)"},
                 {"rbc", "array<u8,2>", "red-blood-cell mask (nuclei.rbc)"}},
      .outputs = {{"labels", "array<i32,2>", "the kept objects, labels unchanged"}},
      .params = {
          ParamSpec::integer("ring_radius", d.ring_radius).range(1, 254).doc("ring width, pixels"),
          ParamSpec::number("min_contrast", d.min_contrast)
              .range(-255, 255)
              .doc("haematoxylin levels an object must exceed its ring by"),
          ParamSpec::integer("min_ring_pixels", d.min_ring_pixels)
              .at_least(0)
              .doc("fewer ring pixels: contrast not judged"),
          ParamSpec::number("min_solidity", d.min_solidity).range(0, 1).doc("smallest area / hull area"),
          ParamSpec::number("min_ratio", d.min_ratio).range(0, 100).doc("smallest mean inside / mean of the ring")}};
}
SelectOp::SelectOp(const Params& p)
    : ring_radius_(static_cast<int>(p.get<std::int64_t>("ring_radius"))),
      min_ring_pixels_(static_cast<int>(p.get<std::int64_t>("min_ring_pixels"))),
      min_contrast_(static_cast<float>(p.get<double>("min_contrast"))),
      min_solidity_(p.get<double>("min_solidity")),
      min_ratio_(p.get<double>("min_ratio")) {}
void SelectOp::cpu(MapContext& ctx) const {
  const cv::Mat labels = view(ctx.input("labels")), stain = view(ctx.input("stain"));
  const cv::Mat tissue = view(ctx.input("tissue")), rbc = view(ctx.input("rbc"));
  if (stain.size() != labels.size() || tissue.size() != labels.size() || rbc.size() != labels.size())
    throw Error("nuclei.select: labels, stain and masks differ in size on '" + ctx.meta().key + "'");
  emit_mat(ctx, "labels",
           select_objects(labels, stain, valid_tissue(tissue, rbc),
                          {.ring_radius = ring_radius_,
                           .min_contrast = min_contrast_,
                           .min_ring_pixels = min_ring_pixels_,
                           .min_solidity = min_solidity_,
                           .min_ratio = min_ratio_}));
}

OperatorSpec RelabelOp::spec() {
  return {.name = "nuclei.relabel",
          .doc = "Drops labelled objects smaller than min_area and numbers the rest 1..n in raster order.",
          .inputs = {{"labels", "array<i32,2>", "labels"}},
          .outputs = {{"labels", "array<i32,2>", "labels 1..n"}},
          .params = {ParamSpec::integer("min_area", 1).at_least(0).doc("smallest kept object, pixels")}};
}
RelabelOp::RelabelOp(const Params& p) : min_area_(static_cast<int>(p.get<std::int64_t>("min_area"))) {}
void RelabelOp::cpu(MapContext& ctx) const { emit_mat(ctx, "labels", relabel(view(ctx.input(0)), min_area_)); }

}  // namespace flowd::nuclei

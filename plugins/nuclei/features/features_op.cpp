#include "features/features_op.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <flowd/opencv.hpp>

namespace flowd::nuclei {

namespace {

constexpr double default_mpp = 0.25;  // 40x

}  // namespace

// The emitted table: tile key, label, global centroid and box, then every
// feature; only nuclei whose centroid (floored) lies in meta.core, when the
// tile has one.
Table Features::make_table(const ItemMeta& meta, const features::Result& r) {
  const std::int64_t dr = meta.bbox ? meta.bbox->origin[0] : 0, dc = meta.bbox ? meta.bbox->origin[1] : 0;
  std::vector<std::size_t> keep;
  keep.reserve(r.nuclei.size());
  for (std::size_t i = 0; i < r.nuclei.size(); ++i) {
    if (meta.core) {
      const Box& k = *meta.core;
      const double fr = std::floor(r.nuclei[i].centroid_row + static_cast<double>(dr));
      const double fc = std::floor(r.nuclei[i].centroid_col + static_cast<double>(dc));
      if (fr < static_cast<double>(k.origin[0]) || fr >= static_cast<double>(k.origin[0] + k.extent[0]) ||
          fc < static_cast<double>(k.origin[1]) || fc >= static_cast<double>(k.origin[1] + k.extent[1]))
        continue;
    }
    keep.push_back(i);
  }
  Table t;
  auto& key = t.add_column<std::string>("key");
  auto& label = t.add_column<std::int32_t>("label");
  auto& cr = t.add_column<double>("centroid_row");
  auto& cc = t.add_column<double>("centroid_col");
  auto& br = t.add_column<std::int64_t>("bbox_row");
  auto& bc = t.add_column<std::int64_t>("bbox_col");
  auto& bh = t.add_column<std::int64_t>("bbox_height");
  auto& bw = t.add_column<std::int64_t>("bbox_width");
  for (std::size_t i : keep) {
    const features::Nucleus& n = r.nuclei[i];
    key.push_back(meta.key);
    label.push_back(n.label);
    cr.push_back(n.centroid_row + static_cast<double>(dr));
    cc.push_back(n.centroid_col + static_cast<double>(dc));
    br.push_back(n.bbox_row + dr);
    bc.push_back(n.bbox_col + dc);
    bh.push_back(n.bbox_height);
    bw.push_back(n.bbox_width);
  }
  const auto& names = features::feature_names();
  for (int f = 0; f < features::kFeatureCount; ++f) {
    auto& col = t.add_column<double>(names[static_cast<std::size_t>(f)]);
    col.reserve(keep.size());
    for (std::size_t i : keep) col.push_back(r.at(i, f));
  }
  return t;
}

// The resolution to measure at: the parameter, else the one the segmentation
// used (nuclei.segment estimates it when not given), else 40x.
features::Options Features::options_for(const features::Options& o, const ItemMeta& labels) {
  features::Options out = o;
  if (out.mpp > 0) return out;
  const auto it = labels.attrs.find("mpp");
  out.mpp = it != labels.attrs.end() && it->is_number() && it->get<double>() > 0 ? it->get<double>() : default_mpp;
  return out;
}

void Features::check_shapes(const std::string& op, const Array& img, const Array& labels) {
  if (img.ndim() != 3 || img.shape(2) != 3) throw Error(op + ": the image " + img.describe() + " is not RGB");
  if (labels.ndim() != 2 || img.shape(0) != labels.shape(0) || img.shape(1) != labels.shape(1))
    throw Error(op + ": image " + img.describe() + " and labels " + labels.describe() + " differ in size");
}

OperatorSpec Features::spec() {
  return {.name = "nuclei.features",
          .doc = "Per-nucleus features of a labelled H&E tile (docs/plugins/nuclei.md#features): shape, intensity "
                 "statistics on haematoxylin, eosin and grey, gradient statistics, Canny edge fraction, 13 Haralick "
                 "features averaged over 4 directions, and statistics of a cytoplasm ring. One row per nucleus with "
                 "the tile key, global centroid and box; on tiles with a halo only nuclei whose centroid lies in "
                 "the tile's core.",
          .inputs = {{"image", "array<u8,3>", "RGB tile (bbox: its region of the slide; core: the part it owns)"},
                     {"labels", "array<i32,2>", "instance labels, same key and size, 0 = background"}},
          .outputs = {{"features", "table", "one row per nucleus"}},
          .params = {ParamSpec::number("mpp", 0).range(0, 100).doc(
                         "microns per pixel; 0 = the labels' attrs.mpp (what nuclei.segment used), else 0.25"),
                     ParamSpec::number("ring", 2.0).range(0, 50).doc("cytoplasm ring width in microns (0: none)"),
                     ParamSpec::integer("glcm_levels", 32)
                         .range(features::kMinLevels, features::kMaxLevels)
                         .doc("grey levels of the co-occurrence matrices"),
                     ParamSpec::integer("min_area", 1).at_least(1).doc("labels with fewer pixels are skipped")},
          // Measured on the CPU: ~1.5-2.5 s per 4096^2 tile with 5000 nuclei, a third to half of it
          // whole-tile Canny, which the GPU variant also runs on the host; hence a modest estimate.
          .speedup_hint = 3.0};
}

Features::Features(const Params& p) {
  options_.mpp = p.get<double>("mpp");
  options_.ring_um = p.get<double>("ring");
  options_.glcm_levels = static_cast<int>(p.get<std::int64_t>("glcm_levels"));
  options_.min_area = static_cast<int>(p.get<std::int64_t>("min_area"));
  try {
    features::Options check = options_;
    if (check.mpp <= 0) check.mpp = default_mpp;
    const int r = check.ring_px();
    static_cast<void>(r);
  } catch (const std::exception& e) {
    throw ParamError("ring", e.what());
  }
  use_one_opencv_thread();
}

void Features::cpu(MapContext& ctx) const {
  const Item& image = ctx.input("image");
  const Array& img = image.array();
  const Array& labels = ctx.input("labels").array();
  check_shapes("nuclei.features", img, labels);
  const features::Result r =
      features::compute(as_mat(img), as_mat(labels), options_for(options_, ctx.input("labels").meta));
  ctx.emit("features", Item{image.meta, Value(make_table(image.meta, r))});
}

}  // namespace flowd::nuclei

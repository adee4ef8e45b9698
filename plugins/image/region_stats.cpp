#include "region_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace flowd::image {

OperatorSpec RegionStats::spec() {
  return {.name = "image.region_stats",
          .doc = "Per-region statistics of a grey image under instance labels: area, centroid and bounding box in "
                 "global coordinates (from the item's bbox), mean/std/min/max intensity. With tiles, a region is "
                 "reported only by the tile whose core contains its centroid.",
          .inputs = {{"image", "array<u8|u16,2>", "grey intensities"}, {"labels", "array<i32,2>", "instance labels, 0 = background"}},
          .outputs = {{"regions", "table", "one row per region"}},
          .params = {ParamSpec::integer("min_area", 1).at_least(1).doc("regions smaller than this (pixels) are skipped")}};
}

namespace {

struct Acc {
  std::int64_t area = 0;
  double sum_r = 0, sum_c = 0, sum = 0, sum2 = 0;
  std::int64_t r0 = std::numeric_limits<std::int64_t>::max(), c0 = r0, r1 = -1, c1 = -1;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
};

template <class T> std::vector<Acc> accumulate(const Array& img, const Array& labels) {
  const auto rows = labels.shape(0), cols = labels.shape(1);
  const auto lrs = labels.stride(0), lcs = labels.stride(1), irs = img.stride(0), ics = img.stride(1);
  const T* px = img.data<T>();
  const std::int32_t* lb = labels.data<std::int32_t>();
  std::int32_t max_label = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) max_label = std::max(max_label, lb[r * lrs + c * lcs]);
  std::vector<Acc> acc(static_cast<std::size_t>(max_label) + 1);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int32_t l = lb[r * lrs + c * lcs];
      if (l <= 0) continue;
      const double v = static_cast<double>(px[r * irs + c * ics]);
      Acc& a = acc[static_cast<std::size_t>(l)];
      ++a.area;
      a.sum_r += static_cast<double>(r);
      a.sum_c += static_cast<double>(c);
      a.sum += v;
      a.sum2 += v * v;
      a.r0 = std::min(a.r0, r), a.r1 = std::max(a.r1, r);
      a.c0 = std::min(a.c0, c), a.c1 = std::max(a.c1, c);
      a.lo = std::min(a.lo, v), a.hi = std::max(a.hi, v);
    }
  return acc;
}

}  // namespace

void RegionStats::cpu(MapContext& ctx) const {
  const Item& image = ctx.input("image");
  const Array& img = image.array();
  const Array& labels = ctx.input("labels").array();
  if (img.shape(0) != labels.shape(0) || img.shape(1) != labels.shape(1))
    throw Error("image " + img.describe() + " and labels " + labels.describe() + " differ in size");
  const auto acc = img.dtype() == DType::u8 ? accumulate<std::uint8_t>(img, labels) : accumulate<std::uint16_t>(img, labels);

  const ItemMeta& meta = ctx.input("labels").meta;
  const std::int64_t dr = meta.bbox ? meta.bbox->origin[0] : 0, dc = meta.bbox ? meta.bbox->origin[1] : 0;
  Table t;
  auto& label = t.add_column<std::int32_t>("label");
  auto& area = t.add_column<std::int64_t>("area");
  auto& cr = t.add_column<double>("centroid_row");
  auto& cc = t.add_column<double>("centroid_col");
  auto& br = t.add_column<std::int64_t>("bbox_row");
  auto& bc = t.add_column<std::int64_t>("bbox_col");
  auto& bh = t.add_column<std::int64_t>("bbox_height");
  auto& bw = t.add_column<std::int64_t>("bbox_width");
  auto& mean = t.add_column<double>("mean");
  auto& sd = t.add_column<double>("std");
  auto& lo = t.add_column<double>("min");
  auto& hi = t.add_column<double>("max");
  for (std::size_t l = 1; l < acc.size(); ++l) {
    const Acc& a = acc[l];
    if (a.area < min_area_) continue;
    const double n = static_cast<double>(a.area);
    const double row = a.sum_r / n + static_cast<double>(dr), col = a.sum_c / n + static_cast<double>(dc);
    if (meta.core) {
      const Box& k = *meta.core;
      const double fr = std::floor(row), fc = std::floor(col);
      if (fr < static_cast<double>(k.origin[0]) || fr >= static_cast<double>(k.origin[0] + k.extent[0]) ||
          fc < static_cast<double>(k.origin[1]) || fc >= static_cast<double>(k.origin[1] + k.extent[1]))
        continue;
    }
    const double m = a.sum / n;
    label.push_back(static_cast<std::int32_t>(l));
    area.push_back(a.area);
    cr.push_back(row);
    cc.push_back(col);
    br.push_back(a.r0 + dr);
    bc.push_back(a.c0 + dc);
    bh.push_back(a.r1 - a.r0 + 1);
    bw.push_back(a.c1 - a.c0 + 1);
    mean.push_back(m);
    sd.push_back(std::sqrt(std::max(0.0, a.sum2 / n - m * m)));
    lo.push_back(a.lo);
    hi.push_back(a.hi);
  }
  ctx.emit("regions", Value(std::move(t)));
}

}  // namespace flowd::image

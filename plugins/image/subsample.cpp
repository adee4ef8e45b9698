#include "subsample.hpp"

#include <algorithm>
#include <cstring>

namespace flowd::image {

OperatorSpec Subsample::spec() {
  return {.name = "image.subsample",
          .doc = "The virtual microscope's clip and subsample: the pixels of a tile's core inside a region of the "
                 "image, every factor-th row and column counted from the region's corner, placed in the view's "
                 "coordinates (bbox) for io.write_view to stitch",
          .inputs = {{"image", "array<u8|u16,2|3>", "a tile (with its bbox and core in the image) or a whole image"}},
          .outputs = {{"view", "array<u8|u16,2|3>",
                       "the tile's part of the view (may have no rows or columns); attrs view_shape, view_factor"}},
          .params = {ParamSpec::integer("factor", 4).range(1, 1024).doc("keep every factor-th row and column"),
                     ParamSpec::json("region", Json::array())
                         .doc("[row, col, rows, cols] of the image to view, in its pixels; [] for the whole image")}};
}

Subsample::Subsample(const Params& p) : factor_(p.get<std::int64_t>("factor")) {
  const Json r = p.get<Json>("region");
  if (!r.is_array() || (!r.empty() && r.size() != 4))
    throw ParamError("region", "expected [] or [row, col, rows, cols], got " + r.dump());
  if (r.empty()) return;
  std::array<std::int64_t, 4> box{};
  for (std::size_t i = 0; i < 4; ++i) {
    if (!r[i].is_number_integer()) throw ParamError("region", "expected whole numbers, got " + r.dump());
    box[i] = r[i].get<std::int64_t>();
  }
  if (box[0] < 0 || box[1] < 0 || box[2] < 1 || box[3] < 1)
    throw ParamError("region", "expected a corner at or after (0, 0) and at least one row and column, got " + r.dump());
  region_ = box;
}

namespace {

// The first multiple of f at or after x (x ≥ 0).
std::int64_t up(std::int64_t x, std::int64_t f) { return (x + f - 1) / f * f; }

}  // namespace

void Subsample::cpu(MapContext& ctx) const {
  const Item& in = ctx.input(0);
  const Array& a = in.array();
  const Box bbox = in.meta.bbox ? *in.meta.bbox : Box::make2d(0, 0, a.shape(0), a.shape(1));
  const Box core = in.meta.core ? *in.meta.core : bbox;
  // The image's extent: from the reader's attrs, else the tile's own.
  std::int64_t image_rows = bbox.origin[0] + bbox.extent[0], image_cols = bbox.origin[1] + bbox.extent[1];
  const Json& attrs = in.meta.attrs;
  if (attrs.contains("image_shape") && attrs["image_shape"].is_array() && attrs["image_shape"].size() == 2) {
    image_rows = attrs["image_shape"][0].get<std::int64_t>();
    image_cols = attrs["image_shape"][1].get<std::int64_t>();
  }
  const std::array<std::int64_t, 4> region = region_.value_or(std::array<std::int64_t, 4>{0, 0, image_rows, image_cols});
  if (region[0] + region[2] > image_rows || region[1] + region[3] > image_cols)
    throw Error("the region [" + std::to_string(region[0]) + ", " +
                std::to_string(region[1]) + ", " + std::to_string(region[2]) + ", " + std::to_string(region[3]) +
                "] reaches beyond the image's " + std::to_string(image_rows) + " x " + std::to_string(image_cols) +
                " pixels");
  const std::int64_t f = factor_;
  // Per dimension: the image pixels [lo, hi) of the core inside the region,
  // the first kept one (a multiple of f from the region's corner), and how
  // many are kept.
  std::array<std::int64_t, 2> first{}, count{}, view_origin{};
  for (int d = 0; d < 2; ++d) {
    const std::int64_t lo = std::max(core.origin[d], region[d]);
    const std::int64_t hi = std::min(core.origin[d] + core.extent[d], region[d] + region[2 + d]);
    first[d] = region[d] + up(std::max<std::int64_t>(lo - region[d], 0), f);
    count[d] = hi > first[d] ? (hi - first[d] + f - 1) / f : 0;
    view_origin[d] = (first[d] - region[d]) / f;
  }
  const std::int64_t channels = a.ndim() == 3 ? a.shape(2) : 1;
  std::vector<std::int64_t> shape{count[0], count[1]};
  if (a.ndim() == 3) shape.push_back(channels);
  Array out = Array::uninitialized(a.dtype(), shape);
  const std::size_t pixel = static_cast<std::size_t>(channels) * a.itemsize();
  const auto* src = static_cast<const std::uint8_t*>(a.raw());
  auto* dst = static_cast<std::uint8_t*>(out.raw());
  const std::int64_t rs = a.stride(0) * static_cast<std::int64_t>(a.itemsize());
  const std::int64_t cs = a.stride(1) * static_cast<std::int64_t>(a.itemsize());
  const bool packed_pixel = a.ndim() == 2 || a.stride(2) == 1;
  for (std::int64_t r = 0; r < count[0]; ++r)
    for (std::int64_t c = 0; c < count[1]; ++c) {
      const std::int64_t y = first[0] + r * f - bbox.origin[0], x = first[1] + c * f - bbox.origin[1];
      const std::uint8_t* from = src + y * rs + x * cs;
      std::uint8_t* to = dst + (static_cast<std::size_t>(r * count[1] + c)) * pixel;
      if (packed_pixel) {
        std::memcpy(to, from, pixel);
      } else {
        const std::int64_t ks = a.stride(2) * static_cast<std::int64_t>(a.itemsize());
        for (std::int64_t k = 0; k < channels; ++k)
          std::memcpy(to + static_cast<std::size_t>(k) * a.itemsize(), from + k * ks, a.itemsize());
      }
    }
  Item view{in.meta, Value(std::move(out))};
  view.meta.bbox = Box::make2d(view_origin[0], view_origin[1], count[0], count[1]);
  view.meta.core = view.meta.bbox;
  view.meta.attrs["view_shape"] = {(region[2] + f - 1) / f, (region[3] + f - 1) / f};
  view.meta.attrs["view_factor"] = f;
  ctx.emit("view", std::move(view));
}

}  // namespace flowd::image

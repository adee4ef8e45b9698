#include "ops/extract.hpp"

#include "ops/images.hpp"

namespace flowd::prnu {

OperatorSpec Extract::spec() {
  return {.name = "prnu.extract",
          .doc = "The PRNU noise residual of a photo: turned to landscape, centre-cropped, then the wavelet or NFI "
                 "residual (docs/plugins/prnu.md)",
          .inputs = {{"image", "any", "a file item ({\"path\"}) or an HxW / HxWx3 image array"}},
          .outputs = {{"residual", "array", "the residual, f32 HxW (attr prnu_turned when the photo was portrait)"}},
          .params = {method_spec(), crop_spec()}};
}

Extract::Extract(const Params& p) : method_(method_param(p)), crop_(static_cast<int>(p.get<std::int64_t>("crop"))) {}

void Extract::cpu(MapContext& ctx) const {
  const Item& in = ctx.input(0);
  const bool is_file = std::holds_alternative<Json>(in.value);
  Image rgb = is_file ? read_image_file(file_of(in), &ctx) : image_of_array(in.array(), in.meta.key);
  const std::string what = is_file ? "'" + file_of(in).string() + "'" : "item '" + in.meta.key + "'";
  Framed f = frame(std::move(rgb), crop_, what);
  ctx.emit("residual", pattern_item(in.meta, residual(method_, f.image, plans_), f.turned));
}

}  // namespace flowd::prnu

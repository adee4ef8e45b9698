#include "ops/fingerprint.hpp"

#include "core/fingerprint.hpp"
#include "ops/images.hpp"

namespace flowd::prnu {

OperatorSpec Fingerprint::spec() {
  return {.name = "prnu.fingerprint",
          .doc = "The maximum-likelihood PRNU fingerprint of a camera from its images (flat-fields best): "
                 "K = sum W I / sum I^2, then grey, ZeroMeanTotal and Wiener (docs/plugins/prnu.md)",
          .inputs = {{"images", "json", "one camera's files: {\"group\": name, \"files\": [paths]} (io.list_files "
                                        "with a group pattern)"}},
          .outputs = {{"fingerprint", "array", "K, f32 HxW, keyed by the camera's name"}},
          .params = {method_spec(), crop_spec()}};
}

Fingerprint::Fingerprint(const Params& p)
    : method_(method_param(p)), crop_(static_cast<int>(p.get<std::int64_t>("crop"))) {}

void Fingerprint::cpu(MapContext& ctx) const {
  const Item& in = ctx.input(0);
  const Json& j = in.json();
  const std::string camera = j.value("group", in.meta.key);
  if (!j.contains("files") || !j["files"].is_array())
    throw Error("item '" + in.meta.key + "': expected {\"group\": name, \"files\": [paths]}");
  if (j["files"].empty()) throw Error("camera '" + camera + "' has no images to build a fingerprint from");
  FingerprintAccumulator acc;
  std::string first;
  for (const auto& f : j["files"]) {
    if (ctx.cancelled()) throw Error("cancelled");
    const std::string file = f.get<std::string>();
    Framed framed = frame(read_image_file(file, &ctx), crop_, "'" + file + "'");
    if (acc.count() > 0 && (framed.image.width != acc.width() || framed.image.height != acc.height()))
      throw Error("camera '" + camera + "': '" + file + "' is " + std::to_string(framed.image.width) + "x" +
                  std::to_string(framed.image.height) + " but '" + first + "' is " + std::to_string(acc.width()) +
                  "x" + std::to_string(acc.height()) + " (set 'crop' to compare images of different sizes)");
    if (first.empty()) first = file;
    const Image noise = fingerprint_noise(method_, framed.image);
    acc.add(framed.image, noise);
  }
  Item out = pattern_item(in.meta, acc.finish(plans_), false);
  out.meta.key = camera;
  out.meta.attrs["camera"] = camera;
  out.meta.attrs["images"] = acc.count();
  ctx.emit("fingerprint", std::move(out));
}

}  // namespace flowd::prnu

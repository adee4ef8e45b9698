#include "ops/compare.hpp"

#include "core/compare.hpp"
#include "core/geometry.hpp"

namespace flowd::prnu {

OperatorSpec Compare::spec() {
  return {.name = "prnu.compare",
          .doc = "NCC and PCE of all pairs of PRNU patterns: photos (residuals extracted once and cached) or "
                 "fingerprints x photos (docs/plugins/prnu.md)",
          .inputs = {{"a", "any", "the first set: photo files, images, or patterns (fingerprints, residuals)"},
                     {"b", "any", "a second set (every pair a x b); unconnected: the pairs of the first set", true}},
          .outputs = {{"scores", "table", "a, b, ncc, pce"}},
          .params = {method_spec(), crop_spec(),
                     ParamSpec::integer("search", 0).range(0, 4096).doc(
                         "PCE: search the peak within +-search pixels of zero shift (cropped or shifted photos); 0: "
                         "read it at zero shift"),
                     ParamSpec::boolean("turns", true).doc(
                         "a photo turned from portrait is compared both ways round (the larger PCE wins): the "
                         "direction the camera was turned is not known")}};
}

Compare::Compare(const Params& p)
    : method_(method_param(p)),
      crop_(static_cast<int>(p.get<std::int64_t>("crop"))),
      search_(static_cast<int>(p.get<std::int64_t>("search"))),
      try_turns_(p.get<bool>("turns")) {}

Item Compare::load(AllPairsContext& ctx, const Item& in) const {
  if (!std::holds_alternative<Json>(in.value)) return in;
  Item out{in.meta, Value{}};
  const auto file = file_of(in);
  Image rgb = read_image_file(file, &ctx);
  Array a = Array::uninitialized(DType::f32, {rgb.height, rgb.width, 3});
  std::copy(rgb.data.begin(), rgb.data.end(), a.values<float>().begin());
  out.value = std::move(a);
  out.meta.attrs["prnu_file"] = file.string();
  return out;
}

std::string Compare::what_of(const Item& loaded) const {
  return loaded.meta.attrs.contains("prnu_file") ? "'" + loaded.meta.attrs["prnu_file"].get<std::string>() + "'"
                                                  : "item '" + loaded.meta.key + "'";
}

std::optional<Framed> Compare::framed_photo(const Item& loaded) const {
  const Array& a = loaded.array();
  if (a.dtype() == DType::f32 && a.ndim() == 2) return std::nullopt;  // a pattern
  return frame(image_of_array(a, loaded.meta.key), crop_, what_of(loaded));
}

Item Compare::preprocess(AllPairsContext&, Item loaded) const {
  if (auto f = framed_photo(loaded)) return pattern_item(loaded.meta, residual(method_, f->image, plans_), f->turned);
  // A pattern: only framed.
  Image p = pattern_of(loaded);
  if (crop_ > 0 && (p.width != crop_ || p.height != crop_)) {
    Framed f = frame(std::move(p), crop_, what_of(loaded));
    return pattern_item(loaded.meta, f.image, f.turned || turned_of(loaded));
  }
  return loaded;
}

void Compare::compare(AllPairsContext&, const Item& a, const Item& b, std::span<double> out) const {
  const Image x = pattern_of(a), y = pattern_of(b);
  if (x.width != y.width || x.height != y.height)
    throw Error("'" + a.meta.key + "' is " + std::to_string(x.width) + "x" + std::to_string(x.height) + " but '" +
                b.meta.key + "' is " + std::to_string(y.width) + "x" + std::to_string(y.height) +
                " (set 'crop' to compare patterns of different sizes)");
  const PceOptions po{11, search_};
  auto score = [&](const Image& q, double& n, double& p) {
    n = ncc(x.data, q.data);
    p = pce(crosscorr_2d(x, q, plans_), po).pce;
  };
  score(y, out[0], out[1]);
  // A quarter turn was made to bring a portrait photo to landscape; the
  // camera may have been turned the other way: half a turn more.
  if (try_turns_ && (turned_of(a) || turned_of(b))) {
    const Image other = rotate_ccw(rotate_ccw(y));
    double n2 = 0, p2 = 0;
    score(other, n2, p2);
    if (p2 > out[1]) {
      out[0] = n2;
      out[1] = p2;
    }
  }
}

}  // namespace flowd::prnu

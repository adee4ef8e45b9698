#include "histogram.hpp"

#include <limits>

namespace flowd::image {

OperatorSpec Histogram::spec() {
  return {.name = "image.histogram",
          .doc = "Intensity histogram over every channel, equal-width bins over the element type's full range. "
                 "On tiles, only the core (halo excluded) is counted, so per-tile histograms sum to the image's.",
          .inputs = {{"image", "array<u8|u16,2|3>", "image"}},
          .outputs = {{"histogram", "array<i64,1>", "counts per bin"}},
          .params = {ParamSpec::integer("bins", 256).range(2, 65536).doc("number of bins")}};
}

namespace {
template <class T>
void count(const Array& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1, std::int64_t bins,
           std::int64_t* h) {
  const double scale = static_cast<double>(bins) / (static_cast<double>(std::numeric_limits<T>::max()) + 1.0);
  const T* p = a.data<T>();
  const std::int64_t ch = a.ndim() == 3 ? a.shape(2) : 1, ks = a.ndim() == 3 ? a.stride(2) : 0;
  const std::int64_t rs = a.stride(0), cs = a.stride(1);
  for (std::int64_t r = r0; r < r1; ++r)
    for (std::int64_t c = c0; c < c1; ++c)
      for (std::int64_t k = 0; k < ch; ++k)
        ++h[static_cast<std::int64_t>(static_cast<double>(p[r * rs + c * cs + k * ks]) * scale)];
}
}  // namespace

void Histogram::cpu(MapContext& ctx) const {
  const Item& in = ctx.input(0);
  const Array& a = in.array();
  // Restrict to the core: the part of the global domain this item owns.
  std::int64_t r0 = 0, r1 = a.shape(0), c0 = 0, c1 = a.shape(1);
  if (in.meta.core && in.meta.bbox) {
    r0 = in.meta.core->origin[0] - in.meta.bbox->origin[0];
    c0 = in.meta.core->origin[1] - in.meta.bbox->origin[1];
    r1 = r0 + in.meta.core->extent[0];
    c1 = c0 + in.meta.core->extent[1];
    if (r0 < 0 || c0 < 0 || r1 > a.shape(0) || c1 > a.shape(1))
      throw Error("item core lies outside its bbox (key '" + in.meta.key + "')");
  }
  Array h = Array::zeros(DType::i64, {bins_});
  if (a.dtype() == DType::u8) count<std::uint8_t>(a, r0, r1, c0, c1, bins_, h.data<std::int64_t>());
  else count<std::uint16_t>(a, r0, r1, c0, c1, bins_, h.data<std::int64_t>());
  ctx.emit("histogram", Value(std::move(h)));
}

}  // namespace flowd::image

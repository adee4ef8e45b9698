#include "threshold.hpp"

#include <vector>

namespace flowd::image {

int otsu_level(std::span<const std::uint64_t> hist) {
  double total = 0, weighted = 0;
  for (std::size_t i = 0; i < hist.size(); ++i) {
    total += static_cast<double>(hist[i]);
    weighted += static_cast<double>(i) * static_cast<double>(hist[i]);
  }
  double w0 = 0, sum0 = 0, best = -1;
  int level = 0;
  for (std::size_t t = 0; t + 1 < hist.size(); ++t) {
    w0 += static_cast<double>(hist[t]);
    sum0 += static_cast<double>(t) * static_cast<double>(hist[t]);
    const double w1 = total - w0;
    if (w0 == 0 || w1 == 0) continue;
    const double m0 = sum0 / w0, m1 = (weighted - sum0) / w1;
    const double between = w0 * w1 * (m0 - m1) * (m0 - m1);
    if (between > best) best = between, level = static_cast<int>(t);
  }
  return level;
}

OperatorSpec Threshold::spec() {
  return {.name = "image.threshold",
          .doc = "Binary mask of a grey image: foreground where the value is above the level (below it with "
                 "invert). The level is Otsu's, computed per item, or fixed.",
          .inputs = {{"image", "array<u8|u16,2>", "grey image"}},
          .outputs = {{"mask", "array<u8,2>", "255 foreground, 0 background"}},
          .params = {ParamSpec::string("method", "otsu").choices({"otsu", "fixed"}).doc("how the level is chosen"),
                     ParamSpec::number("level", 128).range(0, 65535).doc("the level for method=fixed"),
                     ParamSpec::boolean("invert", false).doc("foreground is darker than the level (e.g. stained nuclei)")}};
}

Threshold::Threshold(const Params& p)
    : otsu_(p.get<std::string>("method") == "otsu"), level_(p.get<double>("level")), invert_(p.get<bool>("invert")) {}

namespace {
template <class T> void apply(const Array& in, Array& out, bool otsu, double fixed, bool invert) {
  const auto rows = in.shape(0), cols = in.shape(1), rs = in.stride(0), cs = in.stride(1);
  const T* src = in.data<T>();
  double level = fixed;
  if (otsu) {
    std::vector<std::uint64_t> hist(std::size_t{1} << (8 * sizeof(T)), 0);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) ++hist[src[r * rs + c * cs]];
    level = otsu_level(hist);
  }
  auto* dst = out.data<std::uint8_t>();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const bool above = static_cast<double>(src[r * rs + c * cs]) > level;
      dst[r * cols + c] = (above != invert) ? 255 : 0;
    }
}
}  // namespace

void Threshold::cpu(MapContext& ctx) const {
  const Array& in = ctx.input(0).array();
  Array out = Array::uninitialized(DType::u8, {in.shape(0), in.shape(1)});
  if (in.dtype() == DType::u8) apply<std::uint8_t>(in, out, otsu_, level_, invert_);
  else apply<std::uint16_t>(in, out, otsu_, level_, invert_);
  ctx.emit("mask", Value(std::move(out)));
}

}  // namespace flowd::image

// example.brightness: multiplies every pixel by a gain, saturating at the
// element type's maximum. The whole plugin is this file.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <flowd/flowd.hpp>

namespace {

class Brightness final : public flowd::Map {
public:
  // What flowd needs to know: name, ports, parameters. `flowd inspect
  // example.brightness` prints exactly this.
  static flowd::OperatorSpec spec() {
    return {.name = "example.brightness",
            .doc = "Multiplies every pixel by a gain, saturating at the type's maximum.",
            .inputs = {{"image", "array<u8|u16,2|3>", "image to brighten"}},
            .outputs = {{"image", "array<u8|u16,2|3>", "brightened image, same shape and type"}},
            .params = {flowd::ParamSpec::number("gain", EXAMPLE_DEFAULT_GAIN).range(0, 100).doc("factor applied to every pixel")}};
  }

  // Parameters arrive validated (type, range); keep what the task needs.
  explicit Brightness(const flowd::Params& p) : gain_(p.get<double>("gain")) {}

  // One call per item, possibly on several threads at once: no mutable state.
  void cpu(flowd::MapContext& ctx) const override {
    const flowd::Array in = ctx.input("image").array().contiguous();
    flowd::Array out = flowd::Array::uninitialized(in.dtype(), in.shape());
    if (in.dtype() == flowd::DType::u8) scale<std::uint8_t>(in, out);
    else scale<std::uint16_t>(in, out);
    ctx.emit("image", flowd::Value(std::move(out)));  // keeps the input's key and bounding box
  }

private:
  template <class T> void scale(const flowd::Array& in, flowd::Array& out) const {
    const auto src = in.values<T>();
    auto dst = out.values<T>();
    const double top = std::numeric_limits<T>::max();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<T>(std::min(top, std::round(src[i] * gain_)));
  }

  double gain_;
};

}  // namespace

FLOWD_PLUGIN("example", EXAMPLE_VERSION, "The SDK tutorial's example plugin", Brightness)

#include "synth.hpp"

#include <cmath>
#include <random>

namespace flowd::synth {

namespace {

// Box-Muller on mt19937_64 bits: the same numbers with every standard library.
double standard_normal(std::mt19937_64& rng) {
  const double u1 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

double density_of(std::int64_t seed, std::int64_t index, double spread) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(index));
  return std::exp(spread * standard_normal(rng) - 0.5 * spread * spread);  // mean 1
}

}  // namespace

OperatorSpec Tiles::spec() {
  return {.name = "synth.tiles",
          .doc = "Seeded synthetic tiles (RGB u8, size x size) with a log-normal density per tile (mean 1) that "
                 "sets how long each stage takes on it.",
          .inputs = {},
          .outputs = {{"tile", "array<u8,3>", "a tile; attrs.density"}},
          .params = {ParamSpec::integer("count", 64).at_least(1).doc("tiles"),
                     ParamSpec::integer("size", 2048).range(16, 16384).doc("tile side in pixels"),
                     ParamSpec::integer("seed", 1).doc("seed of the densities"),
                     ParamSpec::number("spread", 0.5).range(0, 2).doc("sigma of log(density)")}};
}

Tiles::Tiles(const Params& p)
    : count_(p.get<std::int64_t>("count")), size_(p.get<std::int64_t>("size")), seed_(p.get<std::int64_t>("seed")),
      spread_(p.get<double>("spread")), tile_(Array::zeros(DType::u8, {size_, size_, 3})) {}

void Tiles::open(SourceContext& ctx) { ctx.expect(static_cast<std::uint64_t>(count_)); }

bool Tiles::next(SourceContext& ctx) {
  Item item;
  item.meta.key = "tile/" + std::to_string(i_);
  item.meta.bbox = Box::make2d(0, i_ * size_, size_, size_);
  item.meta.attrs["density"] = density_of(seed_, i_, spread_);
  item.value = tile_;
  ctx.emit("tile", std::move(item));
  return ++i_ < count_;
}

OperatorSpec Kernel::spec_for(const KernelShape& k) {
  OperatorSpec s{.name = k.name,
                 .doc = k.doc,
                 .inputs = {{"in", "array", "the previous stage's output"}},
                 .outputs = {{"out", "array", "this stage's output"}},
                 .params = {ParamSpec::number("scale", 0.02).range(1e-6, 100).doc(
                     "multiplies every modelled duration (1 = the paper's 4K-tile scale)")},
                 .speedup_hint = k.speedup};
  if (k.joins_image) s.inputs.push_back({"image", "array<u8,3>", "the original tile (matched by key)"});
  return s;
}

Kernel::Kernel(const KernelShape& shape, const Params& p) : shape_(shape), scale_(p.get<double>("scale")) {}

void Kernel::cpu(MapContext& ctx) const {
  const Item& in = ctx.input(0);
  const double density = in.meta.attrs.value("density", 1.0);
  const Array& a = in.array();
  // Durations are per 2048 x 2048 tile, scaled by the tile's pixels.
  const double pixels = a.ndim() >= 2 ? static_cast<double>(a.shape(0) * a.shape(1)) : 1.0;
  const double seconds = shape_.base_ms * 1e-3 * scale_ * std::pow(density, shape_.exponent) * pixels / (2048.0 * 2048.0);
  ctx.simulate_compute(seconds);
  const std::int64_t rows = a.ndim() >= 2 ? a.shape(0) : 1, cols = a.ndim() >= 2 ? a.shape(1) : 1;
  Array out = shape_.out_elements > 0     ? Array::zeros(shape_.out, {shape_.out_elements})
              : shape_.out_channels == 1 ? Array::uninitialized(shape_.out, {rows, cols})
                                         : Array::uninitialized(shape_.out, {rows, cols, shape_.out_channels});
  ctx.emit("out", Value(std::move(out)));
}

}  // namespace flowd::synth

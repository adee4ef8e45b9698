#pragma once
// A synthetic workload shaped like the Region Templates nuclei pipeline, for
// scheduling experiments with simulated GPUs: every operator spends modelled
// compute time (Context::simulate_compute) that depends on its item's data,
// declares the GPU speedup the real operation reaches as a hint, and emits
// arrays of the sizes the real operation would, so transfers cost what they
// would. No operator has a GPU variant: on a machine with GPUs they run on
// CPUs; on simulated GPUs they run at their hinted speedups.
#include <cstdint>
#include <string>

#include <flowd/flowd.hpp>

namespace flowd::synth {

// tiles: a seeded stream of tiles, each with a "density" drawn from a
// log-normal distribution (the data-dependence of segmentation costs).
class Tiles final : public Source {
public:
  static OperatorSpec spec();
  explicit Tiles(const Params& p);
  void open(SourceContext& ctx) override;
  bool next(SourceContext& ctx) override;

private:
  std::int64_t count_, size_, seed_;
  double spread_;
  Array tile_;  // shared by every item: the operators never read pixels
  std::int64_t i_ = 0;
};

// One stage of the pipeline: cost = base_ms x scale x density^exponent on one
// core; output = an array of `out_bytes_per_pixel` per pixel of the tile.
struct KernelShape {
  const char* name;
  const char* doc;
  double base_ms;        // CPU milliseconds for a 2048 x 2048 tile of density 1
  double exponent;       // how strongly the cost follows the density
  double speedup;        // the GPU speedup of the real operation (the hint)
  DType out;             // output element type
  int out_channels;      // 1 for masks and labels, 3 for colour
  bool joins_image;      // a second input: the original tile (features)
  std::int64_t out_elements = 0;  // a fixed-size output (a feature table), else one per pixel
};

// What every modelled stage does; each stage is an operator class of its
// own (plugin.cpp) holding one of these.
class Kernel {
public:
  Kernel(const KernelShape& shape, const Params& p);
  static OperatorSpec spec_for(const KernelShape& shape);
  void cpu(MapContext& ctx) const;

private:
  const KernelShape& shape_;
  double scale_;
};

}  // namespace flowd::synth

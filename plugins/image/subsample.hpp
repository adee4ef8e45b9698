#pragma once
// image.subsample: the virtual microscope's clip-and-subsample filter
// (Ferreira et al.; seed 003's third application): of a tile, the pixels of
// its core inside a region of the whole image whose distances from the
// region's corner are multiples of `factor` (strided subsampling, as the
// hand-written virtual microscope does), placed in the view's coordinates.
// The views of all tiles of an image partition the subsampled region, so a
// stitching sink (io.write_view) assembles exactly what subsampling the
// whole image would give.
#include <array>
#include <cstdint>
#include <optional>

#include <flowd/flowd.hpp>

namespace flowd::image {

class Subsample final : public Map {
public:
  static OperatorSpec spec();
  explicit Subsample(const Params& p);
  void cpu(MapContext& ctx) const override;

private:
  std::int64_t factor_;
  std::optional<std::array<std::int64_t, 4>> region_;  // row, col, rows, cols; none: the whole image
};

}  // namespace flowd::image

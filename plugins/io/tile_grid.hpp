#pragma once
// The tiling of one image: a row-major grid of tile x tile cores (smaller at
// the right and bottom edges) and, around each, a halo clipped to the image.
#include <algorithm>
#include <cstdint>

#include "flowd/item.hpp"

namespace flowd::io {

struct TileGrid {
  std::int64_t height = 0, width = 0;  // image size
  std::int64_t tile = 1, halo = 0;

  std::int64_t rows() const noexcept { return (height + tile - 1) / tile; }
  std::int64_t cols() const noexcept { return (width + tile - 1) / tile; }
  std::int64_t count() const noexcept { return rows() * cols(); }

  // The pixels tile (row, col) owns.
  Box core(std::int64_t row, std::int64_t col) const noexcept {
    const std::int64_t r0 = row * tile, c0 = col * tile;
    return Box::make2d(r0, c0, std::min(tile, height - r0), std::min(tile, width - c0));
  }
  // The core grown by the halo on every side, clipped to the image.
  Box bbox(std::int64_t row, std::int64_t col) const noexcept {
    const Box c = core(row, col);
    const std::int64_t r0 = std::max<std::int64_t>(0, c.origin[0] - halo);
    const std::int64_t c0 = std::max<std::int64_t>(0, c.origin[1] - halo);
    const std::int64_t r1 = std::min(height, c.origin[0] + c.extent[0] + halo);
    const std::int64_t c1 = std::min(width, c.origin[1] + c.extent[1] + halo);
    return Box::make2d(r0, c0, r1 - r0, c1 - c0);
  }
};

}  // namespace flowd::io

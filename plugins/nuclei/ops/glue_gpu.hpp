#pragma once
// The pixel-wise steps between segmentation operations (pipeline.hpp's
// mask_haem, threshold_mask and the parts of fill_small_holes), on the GPU.
// Same results as the CPU steps: they only compare and select bytes.
#include <cstdint>

#include "segment/gpu/segment_gpu.hpp"

namespace flowd::nuclei::gpu {

// out = (tissue != 0 && rbc == 0) ? stain : 0; a null tissue counts as all
// tissue, a null rbc as no red blood cells.
void mask_stain(const Launch& l, ConstImage<std::uint8_t> stain, const std::uint8_t* tissue, std::int64_t tissue_pitch,
                const std::uint8_t* rbc, std::int64_t rbc_pitch, Image<std::uint8_t> out);
// out = grey >= level ? 255 : 0
void threshold(const Launch& l, ConstImage<std::uint8_t> grey, int level, Image<std::uint8_t> out);
// fill_small_holes(mask, max_hole_area) of pipeline.hpp: the holes of
// fill_holes() of at most max_hole_area pixels (8-connected) filled.
void fill_small_holes(const Launch& l, ConstImage<std::uint8_t> mask, int max_hole_area, Image<std::uint8_t> out);

}  // namespace flowd::nuclei::gpu

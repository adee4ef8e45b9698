#pragma once
// Colour deconvolution weights shared by the CPU and GPU variants (no OpenCV
// or CUDA headers: included by both).
#include <array>

namespace flowd::nuclei {

// Colour deconvolution (Ruifrok & Johnston) to one stain's concentration,
// quantised to u8 (0 = none, 255 = at or above od_max).
//   od[c]  = lut[v_c]                   lut[v] = (float)(-log10((v + 1) / 256.0)) (double, rounded once)
//   s      = ((w[0] * od[0]) + (w[1] * od[1])) + (w[2] * od[2])   each op rounded in float, no FMA
//   q      = s * (255 / od_max)  (the factor rounded to float once)
//   out    = q <= 0 ? 0 : q >= 255 ? 255 : (int)(q + 0.5f)
// w is the stain's row of the inverse stain matrix (stain_weights()).
struct StainWeights {
  std::array<float, 3> w{};
  float scale = 0;  // 255 / od_max, as float
  std::array<float, 256> lut{};  // optical density of each 8-bit channel value
};
// The inverse of Ruifrok & Johnston's H&E stain matrix (ImageJ's "H&E"
// optical-density vectors, normalised, residual completed to unit column
// norms): the optical densities (R, G, B) weighed by column s give stain s
// (0 haematoxylin, 1 eosin, 2 residual). Shared by the segmentation's
// quantised deconvolution and the features' channels.
using StainInverse = std::array<std::array<double, 3>, 3>;
const StainInverse& he_stain_inverse();

}  // namespace flowd::nuclei

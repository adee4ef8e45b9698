#pragma once
// The two residual methods (docs/plugins/prnu.md): "wavelet" (Lukáš,
// Fridrich & Goljan as prnu-python computes it; the default, it separates
// cameras better on our generated data) and "nfi" (Rocket's FastNoise).
#include <string>

#include <flowd/flowd.hpp>

#include "fft.hpp"
#include "image.hpp"

namespace flowd::prnu {

enum class Method { wavelet, nfi };

Method method_param(const Params& p);
ParamSpec method_spec();
ParamSpec crop_spec();

// The whole residual of a photo: what is compared.
Image residual(Method m, const ImageView& rgb, FftPlans& plans);
// The per-channel noise a fingerprint accumulates (before grey, zero-mean
// and Wiener, which the fingerprint applies once to K).
Image fingerprint_noise(Method m, const ImageView& rgb);

}  // namespace flowd::prnu

#pragma once
// The wavelet residual most forensic tools use (Lukas, Fridrich, Goljan 2006;
// ../../shared/papers/rocket.md, "The wavelet residual ..."), computed as the
// Python package prnu-python does on PyWavelets: Daubechies-4 ('db4', 8 taps)
// with PyWavelets' 'symmetric' border (half-sample mirror: x1 x0 | x0 x1 ...
// xn-1 | xn-1 xn-2), so one level turns n samples into floor((n + 7) / 2)
// approximation and as many detail coefficients, and its inverse turns m
// coefficients back into 2m - 6 samples.
#include <array>
#include <span>
#include <vector>

#include "fft.hpp"
#include "image.hpp"

namespace flowd::prnu {

// PyWavelets' db4 filter bank (pywt.Wavelet('db4').filter_bank).
struct Db4 {
  static constexpr int taps = 8;
  static constexpr std::array<double, 8> dec_lo{-0.010597401784997278, 0.032883011666982945, 0.030841381835986965,
                                                -0.18703481171888114,  -0.02798376941698385, 0.6308807679295904,
                                                0.7148465705525415,    0.23037781330885523};
  static constexpr std::array<double, 8> dec_hi{-0.23037781330885523,  0.7148465705525415,   -0.6308807679295904,
                                                -0.02798376941698385,  0.18703481171888114,  0.030841381835986965,
                                                -0.032883011666982945, -0.010597401784997278};
  static constexpr std::array<double, 8> rec_lo{0.23037781330885523,  0.7148465705525415,   0.6308807679295904,
                                                -0.02798376941698385, -0.18703481171888114, 0.030841381835986965,
                                                0.032883011666982945, -0.010597401784997278};
  static constexpr std::array<double, 8> rec_hi{-0.010597401784997278, -0.032883011666982945, 0.030841381835986965,
                                                0.18703481171888114,   -0.02798376941698385,  -0.6308807679295904,
                                                0.7148465705525415,    -0.23037781330885523};
};

// pywt.dwt_max_level(length, filter_length): floor(log2(length / (filter_length - 1))),
// at least 0.
int dwt_max_level(int length, int filter_length = Db4::taps);
// Coefficients of one level on `length` samples: floor((length + 7) / 2).
inline int dwt_coeff_length(int length) noexcept { return (length + Db4::taps - 1) / 2; }

// One level of the 1-D transform (pywt.dwt(x, 'db4', 'symmetric')).
// approx and detail hold dwt_coeff_length(x.size()) values each.
void dwt_db4(std::span<const float> x, std::span<float> approx, std::span<float> detail);
// Its inverse (pywt.idwt(a, d, 'db4', 'symmetric')): out holds 2 * a.size() - 6
// values; a.size() == d.size() >= 4.
void idwt_db4(std::span<const float> approx, std::span<const float> detail, std::span<float> out);

// pywt.wavedec2(x, 'db4', 'symmetric', level): details[0] is the coarsest
// level, details.back() the finest, each (H, V, D) = detail along rows and
// approximation along columns, the reverse, detail along both (pywt's cH, cV,
// cD).
struct WaveletBands {
  int width = 0;  // of the transformed plane
  int height = 0;
  Image approx;
  std::vector<std::array<Image, 3>> details;
};
WaveletBands wavedec2_db4(const ImageView& plane, int levels);
// pywt.waverec2: a reconstruction one sample too long for the next level's
// bands is trimmed, as pywt does, and the result cut to width x height.
Image waverec2_db4(const WaveletBands& bands);

// The number of levels the wavelet residual uses on a width x height plane:
// min(levels, dwt_max_level(min(width, height))).
int wavelet_levels(int width, int height, int levels = 4);

// Mihcak's local Wiener rule on one band, returning the noise part:
// c * noise_var / (v + noise_var), v = max(0, min_w mean_w(c^2) - noise_var)
// (windows 3, 5, 7, 9, zero outside the band): prnu-python's wiener_adaptive.
Image wiener_noise_part(const ImageView& band, float noise_var);

// The wavelet noise residual of one plane (0..255 scale): the inverse
// transform of the detail bands' noise parts with the approximation zeroed
// (prnu-python's noise_extract for one channel; the same as the plane minus
// the denoised plane, by linearity). A plane too small for one level
// (under 14 samples on a side) has no detail bands: its residual is zero.
Image wavelet_noise(const ImageView& plane, float sigma = 5.0f, int levels = 4);
// wavelet_noise per channel: the same shape as the input.
Image wavelet_noise_channels(const ImageView& image, float sigma = 5.0f, int levels = 4);

// prnu-python's extract_single: wavelet_noise_channels -> grey_matlab ->
// zero_mean_total -> wiener_dft with noise_var = sample_variance of that.
Image residual_wavelet(const ImageView& rgb, FftPlans& plans, float sigma = 5.0f, int levels = 4);

}  // namespace flowd::prnu

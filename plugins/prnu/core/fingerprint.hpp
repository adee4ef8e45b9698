#pragma once
// The camera fingerprint (PRNU factor K) from N images of one camera, by
// maximum likelihood (Chen et al. 2008): K = sum_k W_k I_k / sum_k I_k^2 per
// channel, I on the 0..1 scale, W the per-channel noise residual; then grey,
// ZeroMeanTotal and the DFT Wiener filter, as prnu-python's
// extract_multiple_aligned. Built as an accumulator so that an engine can
// reduce over images: add() one image at a time, merge() partial sums (sums
// in double, so the result does not depend on the grouping beyond rounding
// of each term), finish() once.
//
// Differences from prnu-python, on purpose: no attenuation of saturated
// pixels (its inten_scale/saturation masks), and the regulariser added to
// sum I^2 is a parameter (prnu-python: 1; the digest's formula: 0).
#include <functional>
#include <vector>

#include "fft.hpp"
#include "image.hpp"

namespace flowd::prnu {

class FingerprintAccumulator {
public:
  FingerprintAccumulator() = default;  // takes its shape from the first add()

  // image: 0..255, 1 or 3 channels; residual: its per-channel noise
  // residual (the same shape), e.g. wavelet_noise_channels(image). A
  // single-channel residual with a 3-channel image pairs with the image's
  // grey_nfi (the NFI residual is grey).
  void add(const ImageView& image, const ImageView& residual);
  void merge(const FingerprintAccumulator& other);

  int count() const noexcept { return count_; }
  int width() const noexcept { return width_; }
  int height() const noexcept { return height_; }
  int channels() const noexcept { return channels_; }

  // K per channel: sum W I / (sum I^2 + regulariser); 0 where the
  // denominator is 0. Then grey_matlab (3 channels), zero_mean_total and
  // wiener_dft(sample_variance). Throws when nothing was added.
  Image finish(FftPlans& plans, float regulariser = 1.0f) const;
  // The per-channel K before the grey / zero-mean / Wiener steps.
  Image raw(float regulariser = 1.0f) const;

private:
  void shape_from(int width, int height, int channels);

  int width_ = 0;
  int height_ = 0;
  int channels_ = 0;
  int count_ = 0;
  std::vector<double> wi_;  // sum W * I
  std::vector<double> ii_;  // sum I^2
};

// The per-channel residual of an image: what add() pairs with it.
using ResidualFn = std::function<Image(const ImageView& image)>;

// Convenience: one accumulator over all images, finished.
Image fingerprint(const std::vector<Image>& images, const ResidualFn& residual, FftPlans& plans,
                  float regulariser = 1.0f);

}  // namespace flowd::prnu

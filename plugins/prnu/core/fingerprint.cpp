#include "fingerprint.hpp"

#include <stdexcept>
#include <string>

#include "filters.hpp"

namespace flowd::prnu {

void FingerprintAccumulator::shape_from(int width, int height, int channels) {
  if (count_ == 0 && wi_.empty()) {
    width_ = width;
    height_ = height;
    channels_ = channels;
    const std::size_t n = sample_count(width, height, channels);
    wi_.assign(n, 0.0);
    ii_.assign(n, 0.0);
    return;
  }
  if (width != width_ || height != height_ || channels != channels_)
    throw std::invalid_argument("prnu fingerprint: a " + std::to_string(width) + "x" + std::to_string(height) + "x" +
                                std::to_string(channels) + " residual for a " + std::to_string(width_) + "x" +
                                std::to_string(height_) + "x" + std::to_string(channels_) + " fingerprint");
}

void FingerprintAccumulator::add(const ImageView& image, const ImageView& residual) {
  if (image.width != residual.width || image.height != residual.height)
    throw std::invalid_argument("prnu fingerprint: image and residual differ in size");
  Image grey;
  ImageView intensity = image;
  if (image.channels != residual.channels) {
    if (residual.channels != 1)
      throw std::invalid_argument("prnu fingerprint: " + std::to_string(residual.channels) +
                                  "-channel residual for a " + std::to_string(image.channels) + "-channel image");
    grey = grey_nfi(image);
    intensity = grey;
  }
  shape_from(residual.width, residual.height, residual.channels);
  constexpr double to_unit = 1.0 / 255.0;
  for (std::size_t i = 0; i < wi_.size(); ++i) {
    const double v = intensity.data[i] * to_unit;
    wi_[i] += residual.data[i] * v;
    ii_[i] += v * v;
  }
  ++count_;
}

void FingerprintAccumulator::merge(const FingerprintAccumulator& other) {
  if (other.count_ == 0) return;
  shape_from(other.width_, other.height_, other.channels_);
  for (std::size_t i = 0; i < wi_.size(); ++i) {
    wi_[i] += other.wi_[i];
    ii_[i] += other.ii_[i];
  }
  count_ += other.count_;
}

Image FingerprintAccumulator::raw(float regulariser) const {
  if (count_ == 0) throw std::logic_error("prnu fingerprint: no images added");
  Image k(width_, height_, channels_);
  for (std::size_t i = 0; i < wi_.size(); ++i) {
    const double den = ii_[i] + regulariser;
    k.data[i] = den != 0.0 ? static_cast<float>(wi_[i] / den) : 0.0f;
  }
  return k;
}

Image FingerprintAccumulator::finish(FftPlans& plans, float regulariser) const {
  Image k = grey_matlab(raw(regulariser));
  zero_mean_total_in_place(k);
  return wiener_dft(k, sample_variance(k), plans);
}

Image fingerprint(const std::vector<Image>& images, const ResidualFn& residual, FftPlans& plans, float regulariser) {
  FingerprintAccumulator acc;
  for (const Image& image : images)
    acc.add(image, residual(image));
  return acc.finish(plans, regulariser);
}

}  // namespace flowd::prnu

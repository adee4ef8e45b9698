#pragma once
// The image types of the PRNU core (docs: ../../shared/papers/rocket.md,
// "PRNU"): float samples, row-major, channels interleaved, so that sample
// (x, y, c) lives at (y * width + x) * channels + c. Colour images are RGB on
// the 0..255 scale (as decoded from 8-bit files); residuals and patterns are
// single-channel. Functions take an ImageView (a span and its shape) so that
// callers can pass their own buffers without a copy, and return an Image.
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace flowd::prnu {

inline std::size_t sample_count(int width, int height, int channels) {
  if (width < 1 || height < 1 || channels < 1)
    throw std::invalid_argument("prnu: image shape " + std::to_string(width) + "x" + std::to_string(height) + "x" +
                                std::to_string(channels));
  return static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * static_cast<std::size_t>(channels);
}

// A read-only window onto a contiguous image.
struct ImageView {
  std::span<const float> data;
  int width = 0;
  int height = 0;
  int channels = 1;

  ImageView() = default;
  ImageView(std::span<const float> samples, int w, int h, int c = 1) : data(samples), width(w), height(h), channels(c) {
    if (data.size() != sample_count(w, h, c))
      throw std::invalid_argument("prnu: " + std::to_string(data.size()) + " samples for a " + std::to_string(w) + "x" +
                                  std::to_string(h) + "x" + std::to_string(c) + " image");
  }

  std::size_t pixels() const noexcept { return static_cast<std::size_t>(width) * static_cast<std::size_t>(height); }
  float at(int x, int y, int c = 0) const noexcept {
    return data[(static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) *
                    static_cast<std::size_t>(channels) +
                static_cast<std::size_t>(c)];
  }
};

// An owning image (a small value type: copy and move freely).
struct Image {
  int width = 0;
  int height = 0;
  int channels = 1;
  std::vector<float> data;

  Image() = default;
  Image(int w, int h, int c = 1) : width(w), height(h), channels(c), data(sample_count(w, h, c), 0.0f) {}
  Image(int w, int h, int c, std::vector<float> samples) : width(w), height(h), channels(c), data(std::move(samples)) {
    if (data.size() != sample_count(w, h, c))
      throw std::invalid_argument("prnu: " + std::to_string(data.size()) + " samples for a " + std::to_string(w) + "x" +
                                  std::to_string(h) + "x" + std::to_string(c) + " image");
  }
  // A copy of a view's samples.
  static Image copy_of(const ImageView& v) {
    return Image(v.width, v.height, v.channels, std::vector<float>(v.data.begin(), v.data.end()));
  }

  ImageView view() const { return ImageView(data, width, height, channels); }
  operator ImageView() const { return view(); }  // NOLINT: an Image is usable wherever a view is

  std::size_t pixels() const noexcept { return static_cast<std::size_t>(width) * static_cast<std::size_t>(height); }
  std::size_t index(int x, int y, int c = 0) const noexcept {
    return (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) *
               static_cast<std::size_t>(channels) +
           static_cast<std::size_t>(c);
  }
  float& at(int x, int y, int c = 0) noexcept { return data[index(x, y, c)]; }
  float at(int x, int y, int c = 0) const noexcept { return data[index(x, y, c)]; }
};

inline void require_grey(const ImageView& image, const char* who) {
  if (image.channels != 1)
    throw std::invalid_argument(std::string("prnu: ") + who + " needs a single-channel image, got " +
                                std::to_string(image.channels) + " channels");
}

inline void require_same_shape(const ImageView& a, const ImageView& b, const char* who) {
  if (a.width != b.width || a.height != b.height || a.channels != b.channels)
    throw std::invalid_argument(std::string("prnu: ") + who + " needs images of one shape, got " +
                                std::to_string(a.width) + "x" + std::to_string(a.height) + "x" +
                                std::to_string(a.channels) + " and " + std::to_string(b.width) + "x" +
                                std::to_string(b.height) + "x" + std::to_string(b.channels));
}

}  // namespace flowd::prnu

#include "geometry.hpp"

#include <algorithm>
#include <string>

namespace flowd::prnu {

Image centre_crop(const ImageView& image, int width, int height) {
  if (width < 1 || height < 1 || width > image.width || height > image.height)
    throw std::invalid_argument("prnu centre_crop: cannot cut " + std::to_string(width) + "x" + std::to_string(height) +
                                " from " + std::to_string(image.width) + "x" + std::to_string(image.height));
  const int x0 = (image.width - width) / 2;
  const int y0 = (image.height - height) / 2;
  const auto ch = static_cast<std::size_t>(image.channels);
  Image out(width, height, image.channels);
  for (int y = 0; y < height; ++y) {
    const auto src =
        image.data.begin() +
        static_cast<std::ptrdiff_t>(((static_cast<std::size_t>(y0 + y) * static_cast<std::size_t>(image.width)) +
                                     static_cast<std::size_t>(x0)) *
                                    ch);
    std::copy(src, src + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(width) * ch),
              out.data.begin() +
                  static_cast<std::ptrdiff_t>(static_cast<std::size_t>(y) * static_cast<std::size_t>(width) * ch));
  }
  return out;
}

Image rotate_ccw(const ImageView& image) {
  // out(x', y') with x' = y, y' = W - 1 - x: numpy.rot90(a, 1).
  Image out(image.height, image.width, image.channels);
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      for (int c = 0; c < image.channels; ++c)
        out.at(y, image.width - 1 - x, c) = image.at(x, y, c);
  return out;
}

Image rotate_to_match(const ImageView& image, int width, int height) {
  const bool image_landscape = image.width > image.height;
  const bool image_portrait = image.width < image.height;
  const bool target_landscape = width > height;
  const bool target_portrait = width < height;
  if ((image_landscape && target_portrait) || (image_portrait && target_landscape)) return rotate_ccw(image);
  return Image::copy_of(image);
}

}  // namespace flowd::prnu

#pragma once
// Bringing images to a common frame before comparing patterns: the
// evaluation protocol's centre crops, and portrait/landscape turns.
#include "image.hpp"

namespace flowd::prnu {

// The width x height window at the centre, offsets floor((W - w) / 2) and
// floor((H - h) / 2) (prnu-python's cut_ctr). Throws if the image is smaller.
Image centre_crop(const ImageView& image, int width, int height);

// The image turned 90 degrees counter-clockwise (numpy.rot90's sense: the
// last column becomes the first row) when it is portrait and width x height
// landscape or the reverse; otherwise a copy. Squares never turn.
Image rotate_to_match(const ImageView& image, int width, int height);

// The 90 degree counter-clockwise turn itself.
Image rotate_ccw(const ImageView& image);

}  // namespace flowd::prnu

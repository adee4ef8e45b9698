#pragma once
// Frames as the items of a series: their names for messages, their pixels as
// the algorithm's float images, and the options every operator shares.
#include <string>
#include <vector>

#include "flowd/flowd.hpp"
#include "image.hpp"
#include "register.hpp"

namespace flowd::registration {

// "frame 'frame_003' (file 'in/frame_003.tif')", or without the file when
// the item's attrs do not say it.
std::string frame_label(const ItemMeta& meta);

// The frame's array when it is a grey 2-D frame (u8, u16 or f32, not empty);
// else flowd::Error naming the frame (colour, other element types, empty).
const Array& grey_frame(const Item& frame);

// A grey 2-D frame as floats (grey_frame()'s checks).
Image frame_image(const Item& frame);

// Throws flowd::Error naming both frames when their sizes differ.
void check_same_size(const ItemMeta& a, const Image& ia, const ItemMeta& b, const Image& ib);

// The parameters of the registration A shared by registration.pairwise and
// the scan's combine: model, max_iterations, epsilon, smooth.
std::vector<ParamSpec> registration_params();

struct OperatorOptions {
  PyramidOptions pyramid{};
  Options options{};

  static OperatorOptions from(const Params& params);
};

}  // namespace flowd::registration

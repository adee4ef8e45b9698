#include "grey.hpp"

#include <flowd/opencv.hpp>
#include <opencv2/imgproc.hpp>

namespace flowd::image {

OperatorSpec Grey::spec() {
  return {.name = "image.grey",
          .doc = "Converts an RGB image to grey: 0.299 R + 0.587 G + 0.114 B. Grey input passes through.",
          .inputs = {{"image", "array<u8|u16|f32,2|3>", "RGB (rows, cols, 3) or grey image"}},
          .outputs = {{"image", "array<u8|u16|f32,2>", "grey image, same element type"}},
          .params = {}};
}

void Grey::cpu(MapContext& ctx) const {
  const Array& in = ctx.input(0).array();
  if (in.ndim() == 2) {
    ctx.emit("image", Value(in));
    return;
  }
  if (in.shape(2) != 3) throw Error("image.grey needs 3 channels, got " + in.describe());
  cv::Mat out;
  cv::cvtColor(as_mat(in), out, cv::COLOR_RGB2GRAY);
  ctx.emit("image", Value(from_mat(out)));
}

}  // namespace flowd::image

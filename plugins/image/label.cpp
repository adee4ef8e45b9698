#include "label.hpp"

#include <flowd/opencv.hpp>
#include <opencv2/imgproc.hpp>

namespace flowd::image {

OperatorSpec Label::spec() {
  return {.name = "image.label",
          .doc = "Connected-component labelling of a mask (OpenCV's default algorithm): each foreground component "
                 "gets a distinct label 1..n; background is 0.",
          .inputs = {{"mask", "array<u8,2>", "non-zero is foreground"}},
          .outputs = {{"labels", "array<i32,2>", "instance labels"}},
          .params = {ParamSpec::integer("connectivity", 8).choices({4, 8}).doc("pixel neighbourhood")}};
}

void Label::cpu(MapContext& ctx) const {
  cv::Mat labels;
  cv::connectedComponents(as_mat(ctx.input(0).array()), labels, connectivity_, CV_32S);
  ctx.emit("labels", Value(from_mat(labels)));
}

}  // namespace flowd::image

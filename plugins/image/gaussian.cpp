#include "gaussian.hpp"

#include <flowd/opencv.hpp>
#include <opencv2/imgproc.hpp>

#include "gaussian_kernel.hpp"

namespace flowd::image {

OperatorSpec Gaussian::spec() {
  return {.name = "image.gaussian",
          .doc = "Gaussian blur. The kernel spans +-3 sigma; borders are mirrored, so tiles with a halo of at least "
                 "3 sigma blur seamlessly.",
          .inputs = {{"image", "array<u8|u16|f32,2|3>", "image to blur"}},
          .outputs = {{"image", "array<u8|u16|f32,2|3>", "blurred image, same shape and type"}},
          .params = {ParamSpec::number("sigma", 1.5).range(0.1, 100).doc("standard deviation in pixels")}};
}

Gaussian::Gaussian(const Params& p) : sigma_(p.get<double>("sigma")) {
  use_one_opencv_thread();
  const int k = gaussian_kernel_size(sigma_);
  half_ = {gaussian_half_kernel(k, sigma_, 8), gaussian_half_kernel(k, sigma_, 16), gaussian_half_kernel(k, sigma_, 0)};
}

void Gaussian::cpu(MapContext& ctx) const {
  const Array& in = ctx.input(0).array();
  const int k = 2 * static_cast<int>(std::ceil(3 * sigma_)) + 1;
  cv::Mat out;
  cv::GaussianBlur(as_mat(in), out, cv::Size(k, k), sigma_, sigma_, cv::BORDER_REFLECT_101);
  ctx.emit("image", Value(from_mat(out)));
}

}  // namespace flowd::image

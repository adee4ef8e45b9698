#pragma once
#include <flowd/flowd.hpp>
#include <flowd/opencv.hpp>

namespace flowd::image {

// RGB to luminance (ITU-R BT.601 weights, as OpenCV and the PRNU papers use).
class Grey final : public Map {
public:
  static OperatorSpec spec();
  explicit Grey(const Params&) { use_one_opencv_thread(); }
  void cpu(MapContext& ctx) const override;
};

}  // namespace flowd::image

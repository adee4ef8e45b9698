#pragma once
#include <flowd/flowd.hpp>
#include <flowd/opencv.hpp>

namespace flowd::image {

class Label final : public Map {
public:
  static OperatorSpec spec();
  explicit Label(const Params& p) : connectivity_(static_cast<int>(p.get<std::int64_t>("connectivity"))) {
    use_one_opencv_thread();
  }
  void cpu(MapContext& ctx) const override;

private:
  int connectivity_;
};

}  // namespace flowd::image

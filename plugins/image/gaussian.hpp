#pragma once
#include <array>
#include <vector>

#include <flowd/flowd.hpp>
#include <flowd/opencv.hpp>

namespace flowd::image {

// gpu() is defined in gaussian_gpu.cpp, compiled only in a build with CUDA;
// registration lists the GPU variant only then (flowd/gpu.hpp).
class Gaussian : public Map {
public:
  static OperatorSpec spec();
  explicit Gaussian(const Params& p);
  void cpu(MapContext& ctx) const override;
  void gpu(GpuContext& ctx) const;

private:
  double sigma_;
  // Half kernels for u8, u16 and f32 images (gaussian_kernel.hpp), built once
  // for the GPU variant.
  std::array<std::vector<double>, 3> half_;
};

}  // namespace flowd::image

#pragma once
#include <array>
#include <vector>

#include <flowd/flowd.hpp>
#include <flowd/opencv.hpp>

namespace flowd::image {

// The GPU variant exists only in a plugin built with CUDA (FLOWD_WITH_CUDA,
// set by flowd_add_plugin); gaussian_gpu.cu is compiled only then.
class Gaussian final : public Map
#if FLOWD_WITH_CUDA
    , public GpuVariant
#endif
{
public:
  static OperatorSpec spec();
  explicit Gaussian(const Params& p);
  void cpu(MapContext& ctx) const override;
#if FLOWD_WITH_CUDA
  void gpu(GpuContext& ctx) const override;
#endif

private:
  double sigma_;
#if FLOWD_WITH_CUDA
  // Half kernels for u8, u16 and f32 images (gaussian_kernel.hpp), built once.
  std::array<std::vector<double>, 3> half_;
#endif
};

}  // namespace flowd::image

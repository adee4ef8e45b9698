#pragma once
// The CUDA twin of the registration's hot loops (../kernels.hpp): the
// pre-smoothing, the pyramid, the gradient and the NCC sums run on the GPU,
// each kernel mirroring its CPU function pixel for pixel; the optimiser
// (optimise() in ../register.hpp) is shared, so the two variants differ only
// in rounding (fused multiply-adds, the order of the reductions). Built only
// with CUDA (plugins/registration/CMakeLists.txt).
#include <memory>
#include <string>
#include <vector>

#include "register.hpp"

namespace flowd::registration::gpu {

// How many CUDA devices can be used; 0 with the reason in *why.
int device_count(std::string* why);

// A frame's pyramid in device memory (levels, gradients), built on the GPU
// with the same filters as Pyramid.
class DevicePyramid {
public:
  DevicePyramid(const ImageView& frame, const PyramidOptions& options);
  ~DevicePyramid();
  DevicePyramid(DevicePyramid&&) noexcept;
  DevicePyramid& operator=(DevicePyramid&&) noexcept;

  int levels() const noexcept;
  int width() const noexcept;  // of the frame
  int height() const noexcept;
  // Copies back, for comparing with the CPU pyramid.
  enum class Plane { image, gx, gy };
  Image download(int level, Plane plane) const;

  struct Impl;
  const Impl& impl() const noexcept { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

// ncc_sums at one level, reduced on the GPU.
NccSums ncc_sums(const DevicePyramid& reference, const DevicePyramid& tmpl, int level, const WarpParams& p,
                 bool with_jacobian);

// A with the sums on the GPU (std::invalid_argument for frames of different
// sizes, as the CPU variant).
Result register_pair(const DevicePyramid& reference, const DevicePyramid& tmpl, const Rigid& initial,
                     const Options& options);

}  // namespace flowd::registration::gpu

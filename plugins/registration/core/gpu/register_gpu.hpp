#pragma once
// The CUDA twin of the registration's hot loops (../kernels.hpp): the
// pre-smoothing, the pyramid, the gradient and the NCC sums run on the GPU,
// each kernel mirroring its CPU function pixel for pixel; the optimiser
// (optimise() in ../register.hpp) is shared, so the two variants differ only
// in rounding (fused multiply-adds, the order of the reductions). Built only
// with CUDA (plugins/registration/CMakeLists.txt).
//
// Every function takes the CUDA stream (a cudaStream_t as void*; nullptr: the
// legacy default stream) its work is ordered on, so that the operators' GPU
// variants run on the engine's stream after the engine's uploads. Calls that
// return a value to the host (ncc_sums, register_pair, download) wait for
// that stream. Errors throw std::runtime_error naming the step.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "register.hpp"

namespace flowd::registration::gpu {

// How many CUDA devices can be used; 0 with the reason in *why.
int device_count(std::string* why);

// A frame already in device memory (a GPU variant's input): u8, u16 or f32
// pixels, rows `stride` elements apart, pixels of a row packed.
struct DeviceFrame {
  enum class Pixel { u8, u16, f32 };
  const void* data = nullptr;
  int device = 0;  // the CUDA ordinal data lives on; the pyramid is built there
  Pixel pixel = Pixel::f32;
  int width = 0, height = 0;
  std::ptrdiff_t stride = 0;  // elements between rows
};

// A frame's pyramid in device memory (levels, gradients), built on the GPU
// with the same filters as Pyramid.
class DevicePyramid {
public:
  // From host floats, on the current device (uploaded on `stream`).
  DevicePyramid(const ImageView& frame, const PyramidOptions& options, void* stream = nullptr);
  // From a frame in this device's memory (converted to float on the GPU).
  DevicePyramid(const DeviceFrame& frame, const PyramidOptions& options, void* stream = nullptr);
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

// ncc_sums at one level, reduced on the GPU (on the reference's stream).
NccSums ncc_sums(const DevicePyramid& reference, const DevicePyramid& tmpl, int level, const WarpParams& p,
                 bool with_jacobian);

// A with the sums on the GPU, on the reference's stream (std::invalid_argument
// for frames of different sizes, as the CPU variant).
Result register_pair(const DevicePyramid& reference, const DevicePyramid& tmpl, const Rigid& initial,
                     const Options& options);

}  // namespace flowd::registration::gpu

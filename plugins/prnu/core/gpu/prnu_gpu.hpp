#pragma once
// The host API of the PRNU core's CUDA twin (prnu_gpu_device.hpp): the same
// signatures as the CPU functions with a GpuPlans for the FftPlans, each
// call uploading its input, running on the legacy default stream and
// downloading its result. Built only with CUDA (plugins/prnu/CMakeLists.txt).
#include <span>

#include "compare.hpp"
#include "image.hpp"
#include "prnu_gpu_device.hpp"

namespace flowd::prnu::gpu {

// residual_nfi (../filters.hpp) on the GPU: RGB (0..255) or grey in, the
// grey pattern out.
Image residual_nfi(const ImageView& rgb, GpuPlans& plans);

// ncc (../compare.hpp) on the GPU.
double ncc(std::span<const float> a, std::span<const float> b, GpuPlans& plans);

// crosscorr_2d and pce (../compare.hpp) on the GPU.
Image crosscorr_2d(const ImageView& a, const ImageView& b, GpuPlans& plans);
PceResult pce(const ImageView& cc, const PceOptions& options, GpuPlans& plans);

}  // namespace flowd::prnu::gpu

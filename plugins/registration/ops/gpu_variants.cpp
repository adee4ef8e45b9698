// The GPU variants of registration.pairwise and registration.compose: the
// frames arrive in the GPU's memory, their pyramids are built there and A's
// NCC sums are reduced there (core/gpu/register_gpu.hpp); the optimiser, the
// same as the CPU variant's, runs on the host. Compiled only in a build with
// CUDA (../CMakeLists.txt).
#include <string>

#include "compose.hpp"
#include "operand.hpp"
#include "pairwise.hpp"
#include "register_gpu.hpp"

namespace flowd::registration {

namespace {

// A frame of a GPU variant: a grey frame (grey_frame(), as the CPU variant)
// in the memory of the variant's GPU, pixels of a row packed; else
// flowd::Error naming the frame.
gpu::DeviceFrame device_frame(int device, const Item& frame) {
  const Array& a = grey_frame(frame);
  if (a.placement().residency != Residency::device || a.placement().device != device)
    throw Error(frame_label(frame.meta) + " is not in the memory of GPU " + std::to_string(device));
  if (a.stride(1) != 1) throw Error(frame_label(frame.meta) + " is not packed along its rows");
  gpu::DeviceFrame f;
  f.data = a.raw();
  f.device = device;
  f.width = static_cast<int>(a.shape(1));
  f.height = static_cast<int>(a.shape(0));
  f.stride = a.stride(0);
  f.pixel = a.dtype() == DType::u8    ? gpu::DeviceFrame::Pixel::u8
            : a.dtype() == DType::u16 ? gpu::DeviceFrame::Pixel::u16
                                      : gpu::DeviceFrame::Pixel::f32;
  return f;
}

// A(reference, template, initial) with both frames on `device`.
Result register_on_gpu(int device, void* stream, const Item& ref, const Item& tmpl, const Rigid& initial,
                       const OperatorOptions& o) {
  const gpu::DeviceFrame fr = device_frame(device, ref), ft = device_frame(device, tmpl);
  if (fr.width != ft.width || fr.height != ft.height)
    throw Error(frame_label(tmpl.meta) + " is " + std::to_string(ft.width) + "x" + std::to_string(ft.height) +
                " but " + frame_label(ref.meta) + " is " + std::to_string(fr.width) + "x" + std::to_string(fr.height) +
                ": the frames of a series must share one size");
  const gpu::DevicePyramid pr(fr, o.pyramid, stream), pt(ft, o.pyramid, stream);
  return gpu::register_pair(pr, pt, initial, o.options);
}

}  // namespace

void Pairwise::gpu(GpuContext& ctx) const {
  emit_pair_step(ctx, [&](const Item& ref, const Item& tmpl) {
    return register_on_gpu(ctx.gpu(), ctx.stream(), ref, tmpl, Rigid::identity(), options_);
  });
}

Item Compose::combine_gpu(GpuScanContext& ctx, const Item& left, const Item& right) const {
  return compose_steps(left, right, [&](const std::string& from, const std::string& to, const Rigid& initial) {
    return register_on_gpu(ctx.gpu(), ctx.stream(), ctx.item("frames", from), ctx.item("frames", to), initial,
                           options_);
  });
}

}  // namespace flowd::registration

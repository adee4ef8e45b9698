// GPU variants of the segmentation operators: the inputs arrive in this
// GPU's memory; each variant allocates its outputs from the engine's pool and
// enqueues the CUDA twin of its CPU function on the task's stream. Compiled
// only in a build with CUDA (ops/CMakeLists.txt).
#include "ops/segment_ops.hpp"

#include "ops/device_views.hpp"
#include "ops/glue_gpu.hpp"
#include "segment/segment.hpp"

namespace flowd::nuclei {

namespace {

const Array& in(const GpuContext& ctx, std::string_view port) { return ctx.input(port).array(); }

gpu::ConstImage<std::uint8_t> rgb_view(const GpuContext& ctx) {
  return const_view<std::uint8_t>(ctx, in(ctx, "image"), DType::u8, 3, "image");
}
gpu::ConstImage<std::uint8_t> mask_view(const GpuContext& ctx, std::string_view port) {
  return const_view<std::uint8_t>(ctx, in(ctx, port), DType::u8, 1, std::string(port).c_str());
}

Array plane(GpuContext& ctx, DType dtype, const Array& like) { return ctx.allocate(dtype, {like.shape(0), like.shape(1)}); }

}  // namespace

void TissueOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  Array out = plane(ctx, DType::u8, in(ctx, "image"));
  gpu::tissue_mask(*l, rgb_view(ctx), level_, image_view<std::uint8_t>(out));
  ctx.emit("mask", Value(std::move(out)));
}

void RbcOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  Array out = plane(ctx, DType::u8, in(ctx, "image"));
  gpu::rbc_mask(*l, rgb_view(ctx), rg_q8_, rb_q8_, level_, image_view<std::uint8_t>(out));
  ctx.emit("mask", Value(std::move(out)));
}

void DeconvolveOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  Array out = plane(ctx, DType::u8, in(ctx, "image"));
  gpu::deconvolve(*l, rgb_view(ctx), stain_weights(stain_, od_max_), image_view<std::uint8_t>(out));
  const bool tissue = ctx.has_input("tissue"), rbc = ctx.has_input("rbc");
  if (tissue || rbc) {
    const auto t = tissue ? mask_view(ctx, "tissue") : gpu::ConstImage<std::uint8_t>{};
    const auto r = rbc ? mask_view(ctx, "rbc") : gpu::ConstImage<std::uint8_t>{};
    auto o = image_view<std::uint8_t>(out);
    gpu::mask_stain(*l, as_const(o), t.data, t.pitch, r.data, r.pitch, o);  // in place: pixel-wise
  }
  ctx.emit("stain", Value(std::move(out)));
}

void OpenOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  Array out = plane(ctx, DType::u8, in(ctx, "image"));
  gpu::open(*l, mask_view(ctx, "image"), half_widths_, image_view<std::uint8_t>(out));
  ctx.emit("image", Value(std::move(out)));
}

void ReconstructOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  const auto marker = mask_view(ctx, "marker"), mask = mask_view(ctx, "mask");
  if (marker.rows != mask.rows || marker.cols != mask.cols)
    throw Error("nuclei.reconstruct: marker and mask differ in size on '" + ctx.meta().key + "'");
  // The reconstruction works in place on a copy of the marker.
  Array out = plane(ctx, DType::u8, in(ctx, "marker"));
  auto o = image_view<std::uint8_t>(out);
  gpu::mask_stain(*l, marker, nullptr, 0, nullptr, 0, o);  // a plain copy
  gpu::reconstruct(*l, o, mask);
  if (threshold_ >= 0) gpu::threshold(*l, as_const(o), threshold_, o);
  ctx.emit("image", Value(std::move(out)));
}

void AreaThresholdOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  Array out = plane(ctx, DType::u8, in(ctx, "mask"));
  gpu::area_threshold(*l, mask_view(ctx, "mask"), min_area_, max_area_, image_view<std::uint8_t>(out));
  ctx.emit("mask", Value(std::move(out)));
}

void FillHolesOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  Array out = plane(ctx, DType::u8, in(ctx, "mask"));
  if (max_hole_area_ > 0) gpu::fill_small_holes(*l, mask_view(ctx, "mask"), max_hole_area_, image_view<std::uint8_t>(out));
  else gpu::fill_holes(*l, mask_view(ctx, "mask"), image_view<std::uint8_t>(out));
  ctx.emit("mask", Value(std::move(out)));
}

void PreWatershedOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  Array dist = plane(ctx, DType::f32, in(ctx, "mask"));
  Array markers = plane(ctx, DType::i32, in(ctx, "mask"));
  auto d = image_view<float>(dist);
  gpu::distance_transform(*l, mask_view(ctx, "mask"), d);
  gpu::watershed_markers(*l, as_const(d), h_, image_view<std::int32_t>(markers));
  ctx.emit("distance", Value(std::move(dist)));
  ctx.emit("markers", Value(std::move(markers)));
}

void WatershedOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  Array out = plane(ctx, DType::i32, in(ctx, "mask"));
  gpu::watershed(*l, const_view<float>(ctx, in(ctx, "distance"), DType::f32, 1, "distance"),
                 const_view<std::int32_t>(ctx, in(ctx, "markers"), DType::i32, 1, "markers"), mask_view(ctx, "mask"),
                 image_view<std::int32_t>(out));
  ctx.emit("labels", Value(std::move(out)));
}

void LabelOp::gpu(GpuContext& ctx) const {
  PoolLaunch l(ctx);
  Array out = plane(ctx, DType::i32, in(ctx, "mask"));
  gpu::label(*l, mask_view(ctx, "mask"), image_view<std::int32_t>(out));
  ctx.emit("labels", Value(std::move(out)));
}

}  // namespace flowd::nuclei

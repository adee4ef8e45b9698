// nuclei.features' GPU variant; compiled only in a build with CUDA
// (ops/CMakeLists.txt), with the CUDA twin it drives (features_gpu.hpp).
#include <string>
#include <vector>

#include "features/features_gpu.hpp"
#include "features/features_op.hpp"

namespace flowd::nuclei {

void Features::gpu(GpuContext& ctx) const {
  const Item& image = ctx.input("image");
  const Array& img = image.array();
  const Array& labels = ctx.input("labels").array();
  check_shapes("nuclei.features (gpu)", img, labels);
  for (const Array* a : {&img, &labels})
    if (a->placement().residency != Residency::device || a->placement().device != ctx.gpu())
      throw Error("nuclei.features (gpu): " + a->describe() + " is not in the memory of GPU " + std::to_string(ctx.gpu()));
  if (img.dtype() != DType::u8 || labels.dtype() != DType::i32)
    throw Error("nuclei.features (gpu): expects u8 RGB and i32 labels, got " + img.describe() + " and " + labels.describe());
  features::gpu::TileView t;
  t.device = ctx.gpu();
  t.rows = static_cast<int>(img.shape(0));
  t.cols = static_cast<int>(img.shape(1));
  t.rgb = static_cast<const std::uint8_t*>(img.raw());
  for (int k = 0; k < 3; ++k) t.rgb_stride[k] = img.stride(k);
  t.labels = static_cast<const std::int32_t*>(labels.raw());
  for (int k = 0; k < 2; ++k) t.label_stride[k] = labels.stride(k);
  // Temporaries stay referenced until gpu() returns; compute_gpu has waited
  // for the stream by then.
  std::vector<Array> temps;
  const features::Result r =
      features::compute_gpu(t, options_for(options_, ctx.input("labels").meta), ctx.stream(), [&](std::size_t bytes) {
    temps.push_back(ctx.allocate(DType::u8, {static_cast<std::int64_t>(bytes)}));
    return temps.back().raw();
  });
  ctx.emit("features", Item{image.meta, Value(make_table(image.meta, r))});
}

}  // namespace flowd::nuclei

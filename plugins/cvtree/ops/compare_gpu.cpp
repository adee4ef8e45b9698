// cvtree.compare's GPU variant (ops/compare.hpp), compiled only with CUDA:
// the merge-path cosine (core/gpu/cvtree_gpu.hpp) over the vectors the
// engine keeps in this GPU's memory, on its stream.
#include <cuda/per_device.hpp>

#include "cvtree_gpu.hpp"
#include "ops/compare.hpp"
#include "ops/vectors.hpp"

namespace flowd::cvtree {

// One Scratch per GPU (cuda/per_device.hpp).
struct Compare::GpuState : cuda::PerDevice<gpu::Scratch> {};

Compare::GpuState& Compare::gpu_state() const {
  std::lock_guard lk(gpu_m_);
  if (!gpu_) gpu_ = std::make_shared<GpuState>();
  return *gpu_;
}

namespace {

const void* on_gpu(const Item& item, int device) {
  const Array& a = item.array();
  if (a.placement().residency != Residency::device || a.placement().device != device)
    throw Error("item '" + item.meta.key + "': the GPU compare got vectors that are not in GPU " +
                std::to_string(device) + "'s memory");
  return a.raw();
}

}  // namespace

void Compare::compare_gpu(GpuAllPairsContext& ctx, const Item& a, const Item& b, std::span<double> out) const {
  const VectorsView va = vectors_view(a, ks_), vb = vectors_view(b, ks_);
  const auto* xa = static_cast<const unsigned char*>(on_gpu(a, ctx.gpu()));
  const auto* xb = static_cast<const unsigned char*>(on_gpu(b, ctx.gpu()));
  auto lease = gpu_state().take(ctx.gpu());
  const auto stream = static_cast<cudaStream_t>(ctx.stream());
  for (std::size_t t = 0; t < ks_.size(); ++t) {
    const auto& sa = va.sections[t];
    const auto& sb = vb.sections[t];
    // The sizes come from the attrs (vectors_view checked them against the
    // bytes); the headers, in device memory, are read by the kernel.
    const double c = gpu::cosine(gpu::device_vector(xa + sa.offset, sa.middles, sa.seen),
                                 gpu::device_vector(xb + sb.offset, sb.middles, sb.seen), *lease.state, stream);
    out[2 * t] = c;
    out[2 * t + 1] = (1.0 - c) / 2.0;
  }
}

}  // namespace flowd::cvtree

// prnu.compare's GPU variant (ops/compare.hpp), compiled only with CUDA: the
// twins of compare() and of preprocess()'s NFI residual on the PRNU core's
// CUDA code (core/gpu/prnu_gpu_device.hpp), on the stream and memory the
// engine gives.
#include <cuda/per_device.hpp>

#include "ops/compare.hpp"
#include "prnu_gpu_device.hpp"

namespace flowd::prnu {

// One GpuPlans per GPU (cuda/per_device.hpp).
struct Compare::GpuState : cuda::PerDevice<gpu::GpuPlans> {};

Compare::GpuState& Compare::gpu_state() const {
  std::lock_guard lk(gpu_m_);
  if (!gpu_) gpu_ = std::make_shared<GpuState>();
  return *gpu_;
}

namespace {

// A device pattern's samples (f32 HxW, contiguous, in this GPU's memory).
const float* device_pattern(const Item& item, int gpu) {
  const Array& a = item.array();
  if (a.dtype() != DType::f32 || a.ndim() != 2 || !a.is_contiguous())
    throw Error("item '" + item.meta.key + "': expected a pattern (f32 HxW), got " + std::string(name_of(a.dtype())) +
                " with " + std::to_string(a.ndim()) + " dimensions");
  if (a.placement().residency != Residency::device || a.placement().device != gpu)
    throw Error("item '" + item.meta.key + "': the GPU compare got a pattern that is not in GPU " +
                std::to_string(gpu) + "'s memory");
  return static_cast<const float*>(a.raw());
}

}  // namespace

std::optional<Item> Compare::preprocess_gpu(GpuAllPairsContext& ctx, const Item& loaded) const {
  if (method_ != Method::nfi) return std::nullopt;  // the wavelet residual has no GPU twin
  std::optional<Framed> f = framed_photo(loaded);
  if (!f) return std::nullopt;  // a pattern: framing it is all, on the CPU
  const Image& rgb = f->image;
  auto lease = gpu_state().take(ctx.gpu());
  Array host = Array::uninitialized(DType::f32, {rgb.height, rgb.width, rgb.channels});
  std::copy(rgb.data.begin(), rgb.data.end(), host.values<float>().begin());
  const Array in = ctx.upload(host);
  Array out = ctx.allocate(DType::f32, {rgb.height, rgb.width});
  const auto stream = static_cast<cudaStream_t>(ctx.stream());
  gpu::residual_nfi(static_cast<const float*>(in.raw()), rgb.width, rgb.height, rgb.channels,
                    static_cast<float*>(out.raw()), *lease.state, stream);
  Item it{loaded.meta, Value(std::move(out))};
  if (f->turned) it.meta.attrs["prnu_turned"] = true;
  return it;
}

void Compare::compare_gpu(GpuAllPairsContext& ctx, const Item& a, const Item& b, std::span<double> out) const {
  const int dev = ctx.gpu();
  const float* x = device_pattern(a, dev);
  const float* y = device_pattern(b, dev);
  const Array& xa = a.array();
  const Array& ya = b.array();
  const int w = static_cast<int>(xa.shape(1)), h = static_cast<int>(xa.shape(0));
  if (ya.shape(1) != w || ya.shape(0) != h)
    throw Error("'" + a.meta.key + "' is " + std::to_string(w) + "x" + std::to_string(h) + " but '" + b.meta.key +
                "' is " + std::to_string(ya.shape(1)) + "x" + std::to_string(ya.shape(0)) +
                " (set 'crop' to compare patterns of different sizes)");
  auto lease = gpu_state().take(dev);
  gpu::GpuPlans* plans = lease.state;
  const auto stream = static_cast<cudaStream_t>(ctx.stream());
  const std::size_t n = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
  Array cc = ctx.allocate(DType::f32, {h, w});
  auto* pc = static_cast<float*>(cc.raw());
  auto score = [&](const float* q, double& ncc, double& pce) {
    ncc = gpu::ncc(x, q, n, *plans, stream);
    gpu::crosscorr_2d(x, q, w, h, pc, *plans, stream);
    pce = gpu::pce(pc, w, h, 11, search_, *plans, stream).pce;
  };
  score(y, out[0], out[1]);
  // As compare(): a turned photo is also tried half a turn round.
  if (try_turns_ && (turned_of(a) || turned_of(b))) {
    Array other = ctx.allocate(DType::f32, {h, w});
    gpu::rotate_180(y, w, h, static_cast<float*>(other.raw()), *plans, stream);
    double n2 = 0, p2 = 0;
    score(static_cast<const float*>(other.raw()), n2, p2);
    if (p2 > out[1]) {
      out[0] = n2;
      out[1] = p2;
    }
  }
}

}  // namespace flowd::prnu

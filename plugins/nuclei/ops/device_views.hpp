#pragma once
// Device arrays of a GPU variant as the views segment/gpu/segment_gpu.hpp
// takes, and a Launch whose temporaries come from the engine's pool.
#include <string>
#include <vector>

#include <flowd/gpu.hpp>

#include "segment/gpu/segment_gpu.hpp"

namespace flowd::nuclei {

// Checks that `a` is a 2-d (or, with channels, 3-d interleaved) array in
// this GPU's memory whose rows are packed (the kernels step pixels by one
// element, or by `channels`).
inline void require_device(const GpuContext& ctx, const Array& a, DType dtype, int channels, const char* what) {
  const std::string where = ctx.spec().name + " (gpu) on '" + ctx.meta().key + "': " + what + " " + a.describe();
  if (a.placement().residency != Residency::device || a.placement().device != ctx.gpu())
    throw Error(where + " is not in the memory of GPU " + std::to_string(ctx.gpu()));
  if (a.dtype() != dtype) throw Error(where + " has the wrong element type");
  if (channels == 1 ? a.ndim() != 2 : (a.ndim() != 3 || a.shape(2) != channels))
    throw Error(where + " has the wrong shape");
  if (a.stride(1) != channels || (channels > 1 && a.stride(2) != 1))
    throw Error(where + " is not packed along its rows");
}

template <class T> gpu::ConstImage<T> const_view(const GpuContext& ctx, const Array& a, DType dtype, int channels,
                                                  const char* what) {
  require_device(ctx, a, dtype, channels, what);
  gpu::ConstImage<T> v;
  v.data = static_cast<const T*>(a.raw());
  v.rows = static_cast<int>(a.shape(0));
  v.cols = static_cast<int>(a.shape(1));
  v.pitch = a.stride(0);
  v.col_stride = channels;
  v.channel_stride = 1;
  return v;
}

template <class T> gpu::Image<T> image_view(Array& a) {
  return {static_cast<T*>(a.raw()), static_cast<int>(a.shape(0)), static_cast<int>(a.shape(1)), a.stride(0)};
}
template <class T> gpu::ConstImage<T> as_const(const gpu::Image<T>& i) {
  gpu::ConstImage<T> v;
  v.data = i.data, v.rows = i.rows, v.cols = i.cols, v.pitch = i.pitch;
  return v;
}

// The Launch of one gpu() call: its temporaries stay referenced until the
// call returns; the pool reuses them only after the engine has waited for
// the stream.
class PoolLaunch {
public:
  explicit PoolLaunch(GpuContext& ctx) {
    launch_.device = ctx.gpu();
    launch_.stream = ctx.stream();
    launch_.alloc = [this, &ctx](std::size_t bytes) {
      temps_.push_back(ctx.allocate(DType::u8, {static_cast<std::int64_t>(bytes == 0 ? 1 : bytes)}));
      return temps_.back().raw();
    };
  }
  PoolLaunch(const PoolLaunch&) = delete;
  PoolLaunch& operator=(const PoolLaunch&) = delete;
  const gpu::Launch& operator*() const noexcept { return launch_; }

private:
  gpu::Launch launch_;
  std::vector<Array> temps_;
};

}  // namespace flowd::nuclei

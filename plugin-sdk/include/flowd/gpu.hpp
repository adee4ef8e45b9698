#pragma once
// GPU variants. A map operator gets a CUDA variant by declaring one more
// member function, in every build, and defining it in a file that is compiled
// only when CUDA is:
//
//   class Invert : public flowd::Map {                  // not final (below)
//   public:
//     static flowd::OperatorSpec spec();
//     explicit Invert(const flowd::Params&) {}
//     void cpu(flowd::MapContext& ctx) const override;  // invert.cpp
//     void gpu(flowd::GpuContext& ctx) const;           // invert_gpu.cpp, compiled only with CUDA
//   };
//
// No `#if` in the plugin, no `override` on gpu() and no flowd::GpuVariant
// base. Registration (FLOWD_PLUGIN, flowd/plugin.hpp) does the rest, and it
// is the one place that asks whether CUDA is built (gpu_variants_built):
//   - with CUDA, it creates the operator as an SDK class derived from Invert
//     that implements GpuVariant by calling Invert::gpu, and the manifest lists
//     the variants cpu and gpu;
//   - without, it creates an Invert and lists cpu only. Nothing refers to
//     Invert::gpu, so it needs no definition (a virtual override without one
//     would not link: the vtable names it), and nothing can call it.
// Hence the class must not be final. Registration refuses, when the plugin
// compiles, a final class with gpu(), a member gpu() of another signature and
// a class deriving from GpuVariant itself. docs/plugin-sdk.md ("GPU
// variants") has a complete example, CMake included; image.gaussian
// (plugins/image/gaussian.hpp, gaussian_gpu.cpp) and the nuclei operators
// (plugins/nuclei/ops/segment_ops.hpp, segment_ops_gpu.cpp) are written so.
//
// This header needs no CUDA headers: the stream is a void* that the variant
// casts to cudaStream_t.
#include <concepts>
#include <cstdint>
#include <span>

#include "flowd/operator.hpp"

namespace flowd {

// What a GPU variant sees: its inputs are arrays in this GPU's memory
// (placement().residency == device), already uploaded by the engine; its
// outputs must be arrays it allocated with allocate(). Work is enqueued on
// stream(); the engine waits for the stream before the outputs are used, and
// moves them to host memory only if a consumer needs them there.
class GpuContext : public EmitContext {
public:
  virtual int gpu() const noexcept = 0;         // CUDA device ordinal
  virtual void* stream() const noexcept = 0;    // a cudaStream_t on that device
  // Device memory from flowd's caching pool on this GPU, uninitialised. A
  // temporary may be dropped before its kernels have run: the pool reuses a
  // block only after the engine has waited for stream().
  virtual Array allocate(DType dtype, std::span<const std::int64_t> shape) = 0;
  Array allocate(DType dtype, std::initializer_list<std::int64_t> shape) {
    return allocate(dtype, std::span<const std::int64_t>(shape.begin(), shape.size()));
  }
};

// The interface the engine calls a GPU variant through. A plugin does not
// derive from it: registration implements it for an operator that declares
// gpu(), in a build with CUDA (above).
class GpuVariant {
public:
  virtual ~GpuVariant() = default;
  // Called on the GPU's manager thread, possibly while other GPUs run other
  // tasks of this operator: const and thread-safe like Map::cpu.
  virtual void gpu(GpuContext& ctx) const = 0;
};

// Whether this plugin is compiled with CUDA, i.e. whether its operators'
// gpu() definitions are built: FLOWD_WITH_CUDA, which flowd_add_plugin
// defines (1 or 0) as flowd itself was built. Registration reads it; plugin
// code has no reason to.
#if defined(FLOWD_WITH_CUDA) && FLOWD_WITH_CUDA
constexpr bool gpu_variants_built = true;  // not inline: the plugin's own (flowd/sdk_hash.hpp)
#else
constexpr bool gpu_variants_built = false;
#endif

// An operator with a GPU variant: it declares `void gpu(GpuContext&) const`.
template <class Op>
concept HasGpuVariant = requires(const Op& op, GpuContext& ctx) {
  { op.gpu(ctx) } -> std::same_as<void>;
};

// What a scan's GPU combine sees: its operands are arrays in this GPU's
// memory, its result an array it allocated (or a small host value).
class GpuScanContext : public ScanContext {
public:
  virtual int gpu() const noexcept = 0;
  virtual void* stream() const noexcept = 0;
  virtual Array allocate(DType dtype, std::span<const std::int64_t> shape) = 0;
  Array allocate(DType dtype, std::initializer_list<std::int64_t> shape) {
    return allocate(dtype, std::span<const std::int64_t>(shape.begin(), shape.size()));
  }
};

// The interface the engine calls a scan's GPU combine through; registration
// implements it, as GpuVariant for maps.
class GpuScanVariant {
public:
  virtual ~GpuScanVariant() = default;
  virtual Item combine_gpu(GpuScanContext& ctx, const Item& left, const Item& right) const = 0;
};

// A scan operator with a GPU combine: it declares
// `Item combine_gpu(GpuScanContext&, const Item&, const Item&) const`.
template <class Op>
concept HasGpuCombine = requires(const Op& op, GpuScanContext& ctx, const Item& item) {
  { op.combine_gpu(ctx, item, item) } -> std::same_as<Item>;
};

}  // namespace flowd

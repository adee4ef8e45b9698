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
#include <optional>
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

// What an all-pairs operator's GPU variant sees (compare_gpu, and
// preprocess_gpu where it has one): the items it compares are in this
// GPU's memory, uploaded once and kept in the GPU's cache of preprocessed
// items; the item a GPU preprocess gets is on the host, as load() left it,
// so that the operator uploads only what it needs (a crop, not the photo).
class GpuAllPairsContext : public AllPairsContext {
public:
  virtual int gpu() const noexcept = 0;
  virtual void* stream() const noexcept = 0;
  virtual Array allocate(DType dtype, std::span<const std::int64_t> shape) = 0;
  Array allocate(DType dtype, std::initializer_list<std::int64_t> shape) {
    return allocate(dtype, std::span<const std::int64_t>(shape.begin(), shape.size()));
  }
  // A copy of a host array in this GPU's memory, complete when it returns.
  virtual Array upload(const Array& host) = 0;
};

// The interface the engine calls an all-pairs GPU variant through;
// registration implements it, as GpuVariant for maps.
class GpuAllPairsVariant {
public:
  virtual ~GpuAllPairsVariant() = default;
  // f on the GPU: a's and b's arrays are in this GPU's memory; the scores
  // are on the host when it returns. Called on the GPU's lane only.
  virtual void compare_gpu(GpuAllPairsContext& ctx, const Item& a, const Item& b, std::span<double> scores) const = 0;
  // ℓ's second half on the GPU: `loaded` on the host; the result's arrays
  // in this GPU's memory (allocate) or on the host. nullopt: the operator,
  // as configured, preprocesses on the CPU only (the engine calls
  // preprocess()), as every operator without preprocess_gpu does.
  virtual std::optional<Item> preprocess_gpu(GpuAllPairsContext& ctx, const Item& loaded) const = 0;
};

// An all-pairs operator with a GPU variant declares
// `void compare_gpu(GpuAllPairsContext&, const Item&, const Item&, std::span<double>) const`,
// and may declare `std::optional<Item> preprocess_gpu(GpuAllPairsContext&, const Item&) const`.
template <class Op>
concept HasGpuCompare = requires(const Op& op, GpuAllPairsContext& ctx, const Item& item, std::span<double> s) {
  { op.compare_gpu(ctx, item, item, s) } -> std::same_as<void>;
};
template <class Op>
concept HasGpuPreprocess = requires(const Op& op, GpuAllPairsContext& ctx, const Item& item) {
  { op.preprocess_gpu(ctx, item) } -> std::same_as<std::optional<Item>>;
};

}  // namespace flowd

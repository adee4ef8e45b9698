#pragma once
// GPU variants. A map operator with a GPU variant also derives from
// flowd::GpuVariant:
//
//   class Blur final : public flowd::Map
//   #if FLOWD_WITH_CUDA
//       , public flowd::GpuVariant
//   #endif
//   { ... void gpu(flowd::GpuContext& ctx) const override; ... };
//
// flowd_add_plugin defines FLOWD_WITH_CUDA (1 or 0) as the flowd build did,
// so a plugin built without CUDA simply has no gpu variant. The manifest lists
// the variants a class implements; a declared variant always has code.
//
// This header needs no CUDA headers: the stream is a void* that the variant
// casts to cudaStream_t.
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

class GpuVariant {
public:
  virtual ~GpuVariant() = default;
  // Called on the GPU's manager thread, possibly while other GPUs run other
  // tasks of this operator: const and thread-safe like Map::cpu.
  virtual void gpu(GpuContext& ctx) const = 0;
};

}  // namespace flowd

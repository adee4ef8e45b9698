#pragma once
// Shared by the GPU tests: finding a GPU (or skipping with the reason there
// is none), the engine's CUDA device, random images, and image.gaussian from
// the built image plugin.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "flowd/flowd.hpp"
#include "memory/cuda_devices.hpp"
#include "memory/device.hpp"
#include "runtime/harness.hpp"
#include "support/helpers.hpp"

#if FLOWD_HAVE_CUDA
#include "memory/cuda_device.hpp"
#endif

// Skips the running test, showing why, when the engine finds no CUDA GPU;
// otherwise declares `gpu_info` (flowd::memory::GpuInfo) for the first one.
#define FLOWD_REQUIRE_GPU(gpu_info)                                                         \
  const auto gpu_info##_found = ::flowd::memory::discover_gpus();                           \
  if (gpu_info##_found.gpus.empty()) GTEST_SKIP() << "no CUDA GPU: " << gpu_info##_found.why_none; \
  const ::flowd::memory::GpuInfo gpu_info = gpu_info##_found.gpus.front();                   \
  static_cast<void>(gpu_info)

namespace flowd::gputest {

// The engine's device for a GPU that discover_gpus() found.
inline std::unique_ptr<memory::Device> cuda_device([[maybe_unused]] const memory::GpuInfo& g) {
#if FLOWD_HAVE_CUDA
  return std::make_unique<memory::CudaDevice>(g.ordinal, g.name);
#else
  throw Error("flowd was built without CUDA");  // unreachable: discover_gpus() finds no GPU then
#endif
}

inline plugin::Registry& registry() {
  static plugin::Registry reg = [] {
    plugin::Registry r({{FLOWD_TEST_PLUGIN_DIR, "test", true}}, test::quiet_log());
    r.scan();
    return r;
  }();
  return reg;
}

inline runtime::OperatorHarness gaussian(double sigma) {
  return runtime::OperatorHarness(registry().open("image.gaussian"), {{"sigma", sigma}}, test::quiet_log(), "blur");
}

// Random pixels: u8 and u16 over their whole range, f32 in [0, 255).
inline Array random_array(DType dtype, std::vector<std::int64_t> shape, std::uint32_t seed) {
  Array a = Array::uninitialized(dtype, shape);
  std::mt19937 rng(seed);
  const auto n = static_cast<std::size_t>(a.numel());
  switch (dtype) {
    case DType::u8: {
      auto* p = a.data<std::uint8_t>();
      for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(rng() >> 24);
      break;
    }
    case DType::u16: {
      auto* p = a.data<std::uint16_t>();
      for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint16_t>(rng() >> 16);
      break;
    }
    case DType::f32: {
      auto* p = a.data<float>();
      std::uniform_real_distribution<float> u(0.0f, 255.0f);
      for (std::size_t i = 0; i < n; ++i) p[i] = u(rng);
      break;
    }
    default: {
      auto* p = static_cast<std::uint8_t*>(a.raw());
      for (std::size_t i = 0; i < a.nbytes(); ++i) p[i] = static_cast<std::uint8_t>(rng() >> 24);
    }
  }
  return a;
}

inline Item item(std::string key, Array a) { return Item{ItemMeta{.key = std::move(key)}, Value(std::move(a))}; }

inline const Array& only_array(const runtime::OperatorHarness::Emitted& out) {
  if (out.size() != 1) throw Error("expected one emitted item, got " + std::to_string(out.size()));
  return out.front().second.array();
}

}  // namespace flowd::gputest

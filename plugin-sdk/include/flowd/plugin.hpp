#pragma once
// Declaring a plugin. A plugin's one .cpp that lists its operators writes
//
//   FLOWD_PLUGIN("image", "0.1.0", "Basic image operators", Gaussian, Threshold)
//
// which exports, through Boost.DLL aliases in the "boostdll" section:
//   flowd_plugin_abi          std::uint32_t()       the SDK ABI version it was built with
//   flowd_plugin_fingerprint  const char*()         stdlib/JSON/layout fingerprint
//   flowd_plugin_manifest     const char*()         the manifest JSON (stable across ABI versions)
//   flowd_plugin_entry        const PluginDescriptor&()   factories; called only when the ABI matches
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/dll/alias.hpp>

#include "flowd/abi.hpp"
#include "flowd/gpu.hpp"
#include "flowd/manifest.hpp"
#include "flowd/operator.hpp"
#include "flowd/version.hpp"

namespace flowd {

struct OperatorFactory {
  OperatorSpec spec{};
  std::function<std::unique_ptr<Operator>(const Params&)> create{};
  // The GPU variant of an operator made by `create`, or null when it has none
  // in this build (the engine never guesses with a cast across the plugin
  // boundary).
  const GpuVariant* (*gpu_variant)(const Operator&) = nullptr;
  // The same for a scan operator's GPU combine.
  const GpuScanVariant* (*gpu_scan_variant)(const Operator&) = nullptr;
  // The same for an all-pairs operator's GPU compare (and preprocess).
  const GpuAllPairsVariant* (*gpu_allpairs_variant)(const Operator&) = nullptr;
};

struct PluginDescriptor {
  std::string name{};
  std::string version{};
  std::string doc{};
  std::vector<OperatorFactory> operators{};
};

template <class Op>
concept OperatorType = std::derived_from<Op, Operator> && std::constructible_from<Op, const Params&> && requires {
  { Op::spec() } -> std::convertible_to<OperatorSpec>;
};

template <OperatorType Op> constexpr Pattern pattern_of() {
  constexpr int bases = int{std::derived_from<Op, Source>} + int{std::derived_from<Op, Map>} +
                        int{std::derived_from<Op, Reduce>} + int{std::derived_from<Op, Sink>} +
                        int{std::derived_from<Op, Scan>} + int{std::derived_from<Op, AllPairs>};
  static_assert(bases == 1,
                "an operator derives from exactly one of flowd::Source, Map, Reduce, Scan, AllPairs or Sink");
  if constexpr (std::derived_from<Op, Source>) return Pattern::source;
  else if constexpr (std::derived_from<Op, Map>) return Pattern::map;
  else if constexpr (std::derived_from<Op, Reduce>) return Pattern::reduce;
  else if constexpr (std::derived_from<Op, Scan>)
    return Pattern::scan;
  else if constexpr (std::derived_from<Op, AllPairs>)
    return Pattern::allpairs;
  else return Pattern::sink;
}

namespace detail {

// An operator with a GPU variant as registration makes it in a build with
// CUDA (flowd/gpu.hpp): the operator, plus the engine's GpuVariant interface
// calling its gpu(). Only this class refers to Op::gpu, and it is
// instantiated only when gpu_variants_built, so a build without CUDA needs no
// definition of gpu().
template <class Op> class WithGpuVariant final : public Op, public GpuVariant {
public:
  using Op::Op;
  void gpu(GpuContext& ctx) const override { Op::gpu(ctx); }
};

// The same for a scan operator's GPU combine.
template <class Op>
class WithGpuCombine final : public Op, public GpuScanVariant {
public:
  using Op::Op;
  Item combine_gpu(GpuScanContext& ctx, const Item& left, const Item& right) const override {
    return Op::combine_gpu(ctx, left, right);
  }
};

// The same for an all-pairs operator's GPU compare and, where it has one,
// its GPU preprocess.
template <class Op>
class WithGpuAllPairs final : public Op, public GpuAllPairsVariant {
public:
  using Op::Op;
  void compare_gpu(GpuAllPairsContext& ctx, const Item& a, const Item& b, std::span<double> scores) const override {
    Op::compare_gpu(ctx, a, b, scores);
  }
  std::optional<Item> preprocess_gpu(GpuAllPairsContext& ctx, const Item& loaded) const override {
    if constexpr (HasGpuPreprocess<Op>)
      return Op::preprocess_gpu(ctx, loaded);
    else
      return std::nullopt;
  }
};

}  // namespace detail

// The factory for one operator type: its spec with pattern and variants
// derived from the type, so a declared variant always has code behind it. A
// GPU variant (HasGpuVariant) is listed, and can be run, only in a build with
// CUDA; without, the operator is exactly a CPU-only one.
template <OperatorType Op> OperatorFactory make_factory() {
  OperatorSpec spec = Op::spec();
  spec.pattern = pattern_of<Op>();
  spec.variants = {Device::cpu};
  OperatorFactory f{{}, [](const Params& p) -> std::unique_ptr<Operator> { return std::make_unique<Op>(p); }, nullptr};
  static_assert(!std::derived_from<Op, GpuVariant> && !std::derived_from<Op, GpuScanVariant> &&
                    !std::derived_from<Op, GpuAllPairsVariant>,
                "an operator must not derive from flowd::GpuVariant: declare `void gpu(flowd::GpuContext&) const;` "
                "(no override) and define it in a file compiled only with CUDA (flowd/gpu.hpp)");
  if constexpr (HasGpuVariant<Op>) {
    static_assert(std::derived_from<Op, Map>, "only map operators have GPU variants in this SDK version");
    static_assert(!std::is_final_v<Op>, "an operator with a GPU variant must not be final: in a build with CUDA, "
                                        "registration derives from it to add the variant (flowd/gpu.hpp)");
    if constexpr (gpu_variants_built) {
      using Built = detail::WithGpuVariant<Op>;
      spec.variants.push_back(Device::gpu);
      f.create = [](const Params& p) -> std::unique_ptr<Operator> { return std::make_unique<Built>(p); };
      f.gpu_variant = [](const Operator& o) -> const GpuVariant* { return &static_cast<const Built&>(o); };
    }
  } else if constexpr (HasGpuCombine<Op>) {
    static_assert(std::derived_from<Op, Scan>, "combine_gpu is a scan operator's GPU variant");
    static_assert(!std::is_final_v<Op>,
                  "an operator with a GPU variant must not be final: in a build with CUDA, "
                  "registration derives from it to add the variant (flowd/gpu.hpp)");
    if constexpr (gpu_variants_built) {
      using Built = detail::WithGpuCombine<Op>;
      spec.variants.push_back(Device::gpu);
      f.create = [](const Params& p) -> std::unique_ptr<Operator> { return std::make_unique<Built>(p); };
      f.gpu_scan_variant = [](const Operator& o) -> const GpuScanVariant* { return &static_cast<const Built&>(o); };
    }
  } else if constexpr (HasGpuCompare<Op>) {
    static_assert(std::derived_from<Op, AllPairs>, "compare_gpu is an all-pairs operator's GPU variant");
    static_assert(!std::is_final_v<Op>,
                  "an operator with a GPU variant must not be final: in a build with CUDA, "
                  "registration derives from it to add the variant (flowd/gpu.hpp)");
    if constexpr (gpu_variants_built) {
      using Built = detail::WithGpuAllPairs<Op>;
      spec.variants.push_back(Device::gpu);
      f.create = [](const Params& p) -> std::unique_ptr<Operator> { return std::make_unique<Built>(p); };
      f.gpu_allpairs_variant = [](const Operator& o) -> const GpuAllPairsVariant* {
        return &static_cast<const Built&>(o);
      };
    }
  } else {
    static_assert(!requires { &Op::gpu; }, "the operator has a member gpu, but not `void gpu(flowd::GpuContext&) "
                                           "const` (public): it would have no GPU variant");
    static_assert(
        !requires { &Op::combine_gpu; },
        "the operator has a member combine_gpu, but not `flowd::Item combine_gpu(flowd::GpuScanContext&, "
        "const flowd::Item&, const flowd::Item&) const` (public): it would have no GPU variant");
    static_assert(!requires { &Op::compare_gpu; },
                  "the operator has a member compare_gpu, but not `void compare_gpu(flowd::GpuAllPairsContext&, "
                  "const flowd::Item&, const flowd::Item&, std::span<double>) const` (public): it would have no GPU "
                  "variant");
  }
  static_assert(HasGpuCompare<Op> || !requires { &Op::preprocess_gpu; },
                "preprocess_gpu is part of an all-pairs operator's GPU variant: declare compare_gpu too");
  f.spec = std::move(spec);
  return f;
}

template <OperatorType... Ops> PluginDescriptor make_plugin(std::string name, std::string version, std::string doc) {
  return {std::move(name), std::move(version), std::move(doc), {make_factory<Ops>()...}};
}

inline Json manifest_of(const PluginDescriptor& d) {
  Json j = {{"manifest_version", manifest_version},
            {"abi", abi_version},
            {"sdk_version", std::string(version_string)},
            {"plugin", {{"name", d.name}, {"version", d.version}, {"doc", d.doc}}}};
  j["operators"] = Json::array();
  for (const auto& f : d.operators) j["operators"].push_back(to_json(f.spec));
  return j;
}

}  // namespace flowd

#define FLOWD_PLUGIN(NAME, VERSION, DOC, ...)                                                             \
  namespace flowd_plugin_exports {                                                                        \
  static const ::flowd::PluginDescriptor& descriptor() {                                                  \
    static const ::flowd::PluginDescriptor d = ::flowd::make_plugin<__VA_ARGS__>(NAME, VERSION, DOC);     \
    return d;                                                                                             \
  }                                                                                                       \
  std::uint32_t abi() { return ::flowd::abi_version; }                                                    \
  const char* fingerprint() {                                                                             \
    static const std::string s = ::flowd::abi_fingerprint();                                              \
    return s.c_str();                                                                                     \
  }                                                                                                       \
  const char* manifest() {                                                                                \
    static const std::string s = ::flowd::manifest_of(descriptor()).dump();                               \
    return s.c_str();                                                                                     \
  }                                                                                                       \
  const ::flowd::PluginDescriptor& entry() { return descriptor(); }                                       \
  }                                                                                                       \
  BOOST_DLL_ALIAS(flowd_plugin_exports::abi, flowd_plugin_abi)                                            \
  BOOST_DLL_ALIAS(flowd_plugin_exports::fingerprint, flowd_plugin_fingerprint)                            \
  BOOST_DLL_ALIAS(flowd_plugin_exports::manifest, flowd_plugin_manifest)                                  \
  BOOST_DLL_ALIAS(flowd_plugin_exports::entry, flowd_plugin_entry)

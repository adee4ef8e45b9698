#pragma once
// The plugin ABI. A plugin is refused unless both agree with the engine's:
// the version changes when SDK layouts change on purpose; the fingerprint
// catches a plugin built with another standard library or JSON library, or
// against other SDK headers (sdk_hash, a hash of the headers computed when
// flowd is built) — an SDK edit that forgot to raise the version.
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "flowd/operator.hpp"
#include "flowd/sdk_hash.hpp"

namespace flowd {

// 2: GPU variants (gpu.hpp), Context::simulate_compute.
// 3: sub-task output ports by name (SubRef::port, SubTasks::result).
// 4: sinks' staged output files (SinkContext::output_folder ... discard).
// 5: the scan pattern (Scan, ScanContext, GpuScanContext,
//    OperatorFactory::gpu_scan_variant).
// 6: the all-pairs pattern's GPU variant (GpuAllPairsContext,
//    OperatorFactory::gpu_allpairs_variant).
// 7: SourceContext::finished and skip (a resumed run reads nothing it will
//    not use); ParamSpec::names_input (validate checks inputs exist).
// Not `inline`: each plugin reports its own, not the first loaded one's
// (flowd/sdk_hash.hpp says why).
constexpr std::uint32_t abi_version = 7;

inline std::string abi_fingerprint() {
  std::string s;
#if defined(_GLIBCXX_USE_CXX11_ABI)
  s += "libstdc++/cxx11abi=" + std::to_string(_GLIBCXX_USE_CXX11_ABI);
#elif defined(_LIBCPP_VERSION)
  s += "libc++";
#else
  s += "unknown-stdlib";
#endif
  s += ";json=" + std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." + std::to_string(NLOHMANN_JSON_VERSION_MINOR);
  s += ";sizes=" + std::to_string(sizeof(Array)) + "," + std::to_string(sizeof(Table)) + "," +
       std::to_string(sizeof(Item)) + "," + std::to_string(sizeof(OperatorSpec)) + "," +
       std::to_string(sizeof(Json)) + "," + std::to_string(sizeof(std::function<void()>));
  s += ";sdk=" + std::string(sdk_hash);
  return s;
}

}  // namespace flowd

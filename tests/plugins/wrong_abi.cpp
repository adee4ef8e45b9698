// A plugin built for another ABI version: exports by hand what FLOWD_PLUGIN
// would, but claims ABI 999. Its manifest is still readable.
#include <cstdint>
#include <string>

#include <boost/dll/alias.hpp>

namespace wrong_abi {
std::uint32_t abi() { return 999; }
const char* fingerprint() { return "from-the-future"; }
const char* manifest() {
  return R"({"manifest_version":1,"abi":999,"sdk_version":"9.0.0",
             "plugin":{"name":"future","version":"9.0.0","doc":"built for ABI 999"},
             "operators":[{"name":"future.op","doc":"","pattern":"map","variants":["cpu"],
                           "inputs":[],"outputs":[],"params":[]}]})";
}
int entry() { return 0; }  // never called: the ABI check refuses the plugin first
}  // namespace wrong_abi

BOOST_DLL_ALIAS(wrong_abi::abi, flowd_plugin_abi)
BOOST_DLL_ALIAS(wrong_abi::fingerprint, flowd_plugin_fingerprint)
BOOST_DLL_ALIAS(wrong_abi::manifest, flowd_plugin_manifest)
BOOST_DLL_ALIAS(wrong_abi::entry, flowd_plugin_entry)

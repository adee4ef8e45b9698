#pragma once
// One plugin file: what its manifest says, and opening it for use.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "flowd/plugin.hpp"

namespace flowd::plugin {

// The identity of a file on disk; a cached manifest is reused only while it
// is unchanged.
struct FileStamp {
  std::uintmax_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::uint64_t inode = 0;
  friend bool operator==(const FileStamp&, const FileStamp&) = default;
  static std::optional<FileStamp> of(const std::filesystem::path& p);
};

// What inspecting a .so found. A refused plugin keeps whatever it declared
// (from its manifest) so messages can say "operator X is in Y, refused because".
struct PluginRecord {
  std::filesystem::path path;
  FileStamp stamp;
  bool refused = false;
  std::string refusal;  // why, e.g. "built for flowd ABI 2; this engine uses ABI 1"
  std::uint32_t abi = 0;
  std::string fingerprint;
  std::string name;
  std::string version;
  std::string doc;
  std::vector<OperatorSpec> operators;
  Json manifest;  // as exported, for `flowd plugins --json`
};

// Reads the ABI and manifest of a plugin file. Never throws: problems become
// a refused record. The library is closed again afterwards.
PluginRecord inspect_plugin(const std::filesystem::path& path);

// An opened plugin whose ABI matched; keeps the library mapped while any
// operator created from it lives.
class LoadedPlugin {
public:
  // Throws flowd::Error naming the file if it cannot be opened or no longer
  // matches the engine's ABI.
  static std::shared_ptr<const LoadedPlugin> open(const std::filesystem::path& path);

  const PluginDescriptor& descriptor() const noexcept { return *descriptor_; }
  const std::filesystem::path& path() const noexcept { return path_; }
  const OperatorFactory* factory(std::string_view op) const noexcept;

private:
  std::filesystem::path path_;
  boost::dll::shared_library lib_;
  const PluginDescriptor* descriptor_ = nullptr;
};

// Whether `name` is a valid operator name: lower-case dotted, "family.op".
bool valid_operator_name(std::string_view name);

}  // namespace flowd::plugin

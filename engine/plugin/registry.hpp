#pragma once
// The plugin registry: where operators come from.
//
// The search path is scanned for *.so files; each file's manifest is read
// once and cached (keyed by path and file identity) in the user's cache
// directory, so a later run opens only the plugins its workflow uses.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plugin/plugin_file.hpp"
#include "util/log.hpp"

namespace flowd::plugin {

// One entry of the search path and where it came from, for messages.
struct SearchDir {
  std::filesystem::path path;  // a directory of plugins or one .so file
  std::string origin;          // "--plugin-path", "FLOWD_PLUGIN_PATH", "workflow plugin_path", "default"
  bool must_exist = false;     // a missing path is an error (explicit) or skipped (default)
};

// An operator ready to instantiate. Holds its library open.
class OperatorHandle {
public:
  OperatorHandle(std::shared_ptr<const LoadedPlugin> plugin, const OperatorFactory& factory)
      : plugin_(std::move(plugin)), factory_(&factory) {}
  const OperatorSpec& spec() const noexcept { return factory_->spec; }
  const OperatorFactory& factory() const noexcept { return *factory_; }
  const LoadedPlugin& plugin() const noexcept { return *plugin_; }
  std::unique_ptr<Operator> create(const Params& params) const { return factory_->create(params); }

private:
  std::shared_ptr<const LoadedPlugin> plugin_;
  const OperatorFactory* factory_;
};

struct RegistryOptions {
  // Manifest cache file; nullopt disables caching.
  std::optional<std::filesystem::path> cache_file;
};

class Registry {
public:
  Registry(std::vector<SearchDir> path, Logger& log, RegistryOptions opts = {});

  // Reads every plugin on the search path (from the cache where unchanged).
  // Throws flowd::Error for an explicitly given path that does not exist.
  void scan();

  const std::vector<PluginRecord>& plugins() const noexcept { return records_; }
  const std::vector<SearchDir>& search_path() const noexcept { return path_; }

  // The declared spec of an operator, from a usable plugin; nullptr if none
  // provides it (then explain() says why).
  const OperatorSpec* find(std::string_view op) const;
  // The plugin record providing `op`, or nullptr.
  const PluginRecord* provider(std::string_view op) const;
  // Why `op` cannot be used: unknown (with a suggestion), only in refused
  // plugins, or provided twice.
  std::string explain(std::string_view op) const;
  std::vector<std::string> operator_names() const;

  // Opens the plugin providing `op` (once per file) and returns its factory.
  // Throws flowd::Error naming the file on any problem.
  OperatorHandle open(std::string_view op);

  // Refused files and duplicate operators found by scan(), one message each.
  const std::vector<std::string>& problems() const noexcept { return problems_; }

private:
  std::vector<std::filesystem::path> candidate_files();
  void load_cache(std::map<std::string, PluginRecord>& cached) const;
  void save_cache() const;

  std::vector<SearchDir> path_;
  Logger& log_;
  RegistryOptions opts_;
  std::vector<PluginRecord> records_;
  std::map<std::string, std::size_t, std::less<>> provider_;               // op -> usable record index
  std::map<std::string, std::vector<std::size_t>, std::less<>> duplicates_;  // op -> all usable providers
  std::vector<std::string> problems_;
  std::map<std::string, std::shared_ptr<const LoadedPlugin>> loaded_;
};

// The directory holding the plugins installed with this flowd binary,
// relative to the executable (bin/flowd -> lib/flowd/plugins).
std::optional<std::filesystem::path> default_plugin_dir();

}  // namespace flowd::plugin

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
// Earlier entries shadow later ones: an operator found in an entry hides the
// same name in every later entry.
struct SearchDir {
  std::filesystem::path path;  // a directory of plugins or one .so file
  std::string origin;          // "--plugin-path", "FLOWD_PLUGIN_PATH", "workflow plugin_path", "default"
  bool must_exist = false;     // a missing path is an error (explicit) or skipped (others)
  // When skipped: with a warning (a FLOWD_PLUGIN_PATH typo) or quietly (the
  // default directory, absent in a partial install).
  bool warn_if_missing = true;
};

// An operator of a usable plugin hidden by the same name in an earlier
// search-path entry.
struct Shadowed {
  std::string op;
  std::size_t record = 0;  // index in Registry::plugins(): the hidden one
  std::size_t by = 0;      // index in Registry::plugins(): the one used
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

  // Reads every plugin on the search path (from the cache where unchanged)
  // and resolves operator names: the first search-path entry providing a
  // name wins; two usable plugins of that one entry providing it are an
  // error for that name. Throws flowd::Error for an explicitly given path
  // that does not exist.
  void scan();

  const std::vector<PluginRecord>& plugins() const noexcept { return records_; }
  const std::vector<SearchDir>& search_path() const noexcept { return path_; }

  // The declared spec of an operator, from a usable plugin; nullptr if none
  // provides it (then explain() says why).
  const OperatorSpec* find(std::string_view op) const;
  // The plugin record providing `op`, or nullptr.
  const PluginRecord* provider(std::string_view op) const;
  // Why `name` cannot be used: an operator unknown (with a suggestion), only
  // in refused plugins, or provided twice in one entry; or the name (or
  // file name) of a refused plugin, with the reason.
  std::string explain(std::string_view name) const;
  std::vector<std::string> operator_names() const;

  // Opens the plugin providing `op` (once per file) and returns its factory.
  // Throws flowd::Error naming the file on any problem.
  OperatorHandle open(std::string_view op);

  // What scan() found wrong, one message each: refused files, duplicate
  // operators, search-path entries skipped as missing or unreadable.
  const std::vector<std::string>& problems() const noexcept { return problems_; }
  // Operators hidden by an earlier search-path entry (also logged at debug).
  const std::vector<Shadowed>& shadowed() const noexcept { return shadowed_; }
  // The index in search_path() of the entry plugins()[record] was found in.
  std::size_t entry_of(std::size_t record) const noexcept { return entry_[record]; }

private:
  struct Candidate {
    std::filesystem::path file;
    std::size_t entry;  // index in path_
  };
  std::vector<Candidate> candidate_files();
  void resolve_names();
  void load_cache(std::map<std::string, PluginRecord>& cached) const;
  void save_cache() const;

  std::vector<SearchDir> path_;
  Logger& log_;
  RegistryOptions opts_;
  std::vector<PluginRecord> records_;
  std::vector<std::size_t> entry_;  // per record: its search-path entry
  std::vector<Shadowed> shadowed_;
  std::map<std::string, std::size_t, std::less<>> provider_;                 // op -> usable record index
  std::map<std::string, std::vector<std::size_t>, std::less<>> duplicates_;  // op -> its providers in one entry
  std::vector<std::string> problems_;
  std::map<std::string, std::shared_ptr<const LoadedPlugin>> loaded_;
};

// The directory holding the plugins installed with this flowd binary,
// relative to the executable (bin/flowd -> lib/flowd/plugins).
std::optional<std::filesystem::path> default_plugin_dir();

}  // namespace flowd::plugin

#pragma once
// What every command shares: the plugin search path and the registry.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "plugin/registry.hpp"
#include "util/log.hpp"

namespace flowd::cli {

struct PluginOptions {
  std::vector<std::string> plugin_path;  // --plugin-path, each may hold ':'-separated entries
  bool no_cache = false;                 // --no-plugin-cache
};

// --plugin-path, then FLOWD_PLUGIN_PATH, then the workflow's plugin_path,
// then the plugins installed with this binary.
std::vector<plugin::SearchDir> search_path(const PluginOptions& opts,
                                           const std::vector<std::filesystem::path>& workflow_path = {});

plugin::Registry make_registry(const PluginOptions& opts, Logger& log,
                               const std::vector<std::filesystem::path>& workflow_path = {});

// Parses one sub-command's arguments (`positional` names the option that
// takes the first bare argument). Returns the exit code to stop with after
// --help or a usage error, or nullopt to go on.
std::optional<int> parse_command(const std::vector<std::string>& args,
                                 const boost::program_options::options_description& desc, const char* usage,
                                 const char* positional, boost::program_options::variables_map& vm);

}  // namespace flowd::cli

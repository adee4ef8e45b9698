#include "cli/setup.hpp"

#include <cstdlib>
#include <iostream>

#include "cli/exit_codes.hpp"
#include "util/fs.hpp"

namespace flowd::cli {

namespace fs = std::filesystem;

namespace {
void split_into(const std::string& list, const std::string& origin, bool must_exist, std::vector<plugin::SearchDir>& out) {
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto colon = list.find(':', start);
    const std::string part = list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!part.empty()) out.push_back({part, origin, must_exist});
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
}
}  // namespace

std::vector<plugin::SearchDir> search_path(const PluginOptions& opts, const std::vector<fs::path>& workflow_path) {
  std::vector<plugin::SearchDir> dirs;
  for (const auto& p : opts.plugin_path) split_into(p, "--plugin-path", true, dirs);
  if (const char* env = std::getenv("FLOWD_PLUGIN_PATH"); env && *env) split_into(env, "FLOWD_PLUGIN_PATH", false, dirs);
  for (const auto& p : workflow_path) dirs.push_back({p, "the workflow's plugin_path", true});
  if (auto d = plugin::default_plugin_dir()) dirs.push_back({*d, "the default plugin directory", false, false});
  return dirs;
}

plugin::Registry make_registry(const PluginOptions& opts, Logger& log, const std::vector<fs::path>& workflow_path) {
  plugin::RegistryOptions ro;
  if (!opts.no_cache)
    if (auto dir = user_cache_dir()) ro.cache_file = *dir / "plugin-registry.json";
  plugin::Registry r(search_path(opts, workflow_path), log, ro);
  r.scan();
  for (const auto& p : r.problems()) log.warn(p);
  return r;
}

std::optional<int> parse_command(const std::vector<std::string>& args,
                                 const boost::program_options::options_description& desc, const char* usage,
                                 const char* positional, boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  po::positional_options_description pos;
  pos.add(positional, 1);
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << usage << "\n\n" << desc << "\n";
      return exit_ok;
    }
    po::notify(vm);
  } catch (const po::required_option& e) {
    // The bare argument, which has an option's name only inside flowd: say
    // what is missing in the usage line's words (issue 38: "the option
    // '--workflow' is required but missing" for `flowd run`).
    if (e.get_option_name() == std::string("--") + positional) {
      std::cerr << "flowd: the " << (std::string(positional) == "workflow" ? "workflow file" : positional)
                << " is missing\n" << usage << "\n(see --help)\n";
      return exit_usage;
    }
    std::cerr << "flowd: " << e.what() << "\n" << usage << "\n(see --help)\n";
    return exit_usage;
  } catch (const po::error& e) {
    std::cerr << "flowd: " << e.what() << "\n" << usage << "\n(see --help)\n";
    return exit_usage;
  }
  return std::nullopt;
}

}  // namespace flowd::cli

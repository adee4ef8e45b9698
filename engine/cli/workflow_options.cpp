#include "cli/workflow_options.hpp"

#include "workflow/validate.hpp"
#include "workflow/workflow.hpp"

namespace po = boost::program_options;

namespace flowd::cli {

namespace {

std::vector<workflow::Override> overrides(const std::vector<std::string>& sets) {
  std::vector<workflow::Override> out;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw po::error("--set expects name=value or stage.param=value, got '" + s + "'");
    out.push_back({s.substr(0, eq), s.substr(eq + 1)});
  }
  return out;
}

}  // namespace

void add_common(po::options_description& d, CommonOptions& o) {
  d.add_options()
      ("set,s", po::value(&o.sets)->composing(), "override a variable (name=value) or a parameter (stage.param=value); repeatable")
      ("plugin-path,P", po::value(&o.plugins.plugin_path)->composing(), "directory or .so to search for plugins first; repeatable, ':'-separated")
      ("no-plugin-cache", po::bool_switch(&o.plugins.no_cache), "re-read every plugin's manifest instead of using the cache")
      ("quiet,q", po::bool_switch(&o.quiet), "only warnings and errors")
      ("verbose,v", po::bool_switch(&o.verbose), "debug messages too")
      ("help,h", "show this help");
}

Logger make_logger(const CommonOptions& o) {
  return Logger::to_stderr(o.quiet ? LogLevel::warning : (o.verbose ? LogLevel::debug : LogLevel::info));
}

// Loads, validates and builds the graph; throws ValidationError or flowd::Error.
workflow::Graph load_graph(const CommonOptions& o, Logger& log) {
  workflow::Workflow wf = workflow::load_workflow(o.workflow, overrides(o.sets));
  auto registry = make_registry(o.plugins, log, wf.plugin_path);
  return workflow::validate(std::move(wf), registry);
}


}  // namespace flowd::cli

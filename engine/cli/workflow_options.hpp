#pragma once
// The options every command that reads a workflow takes (--set,
// --plugin-path, --quiet, --verbose), and the workflow loaded with them.
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/setup.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::cli {

struct CommonOptions {
  std::string workflow;
  std::vector<std::string> sets;
  PluginOptions plugins;
  bool quiet = false;
  bool verbose = false;
};

void add_common(boost::program_options::options_description& d, CommonOptions& o);

Logger make_logger(const CommonOptions& o);

// Loads, validates and builds the graph; throws ValidationError or flowd::Error.
workflow::Graph load_graph(const CommonOptions& o, Logger& log);

}  // namespace flowd::cli

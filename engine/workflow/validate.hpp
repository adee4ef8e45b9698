#pragma once
// Checks a workflow against the operators its stages name and builds the
// graph: operators exist, ports exist and their types are compatible,
// required inputs are connected, parameters have the declared types and
// ranges, the graph is acyclic and has a source. Operators are instantiated
// last, so their own parameter checks are reported the same way.
#include <map>
#include <set>
#include <string>

#include "plugin/registry.hpp"
#include "workflow/diagnostics.hpp"
#include "workflow/graph.hpp"

namespace flowd::workflow {

// Throws ValidationError listing every problem.
Graph validate(Workflow wf, plugin::Registry& registry);

// The map, scan and all-pairs stages of `wf` that this process can run, and
// the source and sink stages named in `placed` (a placement moved them to
// worker nodes), each opened on its own (operator, sub-task operators, parameters,
// instance) with no edges: what a cluster worker node needs, since the
// coordinator routes. A stage whose
// operator cannot be opened here (plugin missing or failing to load,
// sub-task operator missing) is left out and named in `unavailable` with the
// reason, rather than failing: the node reports it and gets no such tasks.
struct OpenedStages {
  Graph graph;
  std::map<std::string, std::string> unavailable;  // stage -> why
};
OpenedStages open_map_stages(const Workflow& wf, plugin::Registry& registry, const std::set<std::string>& placed = {});

// The inputs a graph's stages read (parameters declared input_path()) that
// do not exist here, at their pointers: `flowd validate` reports them. Not
// part of validate(): a cluster run's coordinator need not see inputs that
// a source placed on another site reads there. "synthetic:" data sets are
// not checked.
std::vector<Diagnostic> missing_inputs(const Graph& g);

// The parameters of one stage with defaults filled in, or the problems.
Params resolve_params(const OperatorSpec& spec, const Json& given, const std::string& at, Diagnostics& d);

}  // namespace flowd::workflow

#pragma once
// Checks a workflow against the operators its stages name and builds the
// graph: operators exist, ports exist and their types are compatible,
// required inputs are connected, parameters have the declared types and
// ranges, the graph is acyclic and has a source. Operators are instantiated
// last, so their own parameter checks are reported the same way.
#include "plugin/registry.hpp"
#include "workflow/diagnostics.hpp"
#include "workflow/graph.hpp"

namespace flowd::workflow {

// Throws ValidationError listing every problem.
Graph validate(Workflow wf, plugin::Registry& registry);

// The parameters of one stage with defaults filled in, or the problems.
Params resolve_params(const OperatorSpec& spec, const Json& given, const std::string& at, Diagnostics& d);

}  // namespace flowd::workflow

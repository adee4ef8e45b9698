#pragma once
// The provenance record sinks store beside their results: which workflow
// (hash and resolved text), which flowd and plugin versions, which parameters.
#include <string>
#include <vector>

#include "flowd/item.hpp"
#include "workflow/graph.hpp"

namespace flowd::runtime {

Json make_provenance(const workflow::Graph& graph, const std::vector<std::string>& command_line);

// SHA-256 of the workflow after variable substitution and overrides: two
// runs with the same hash ran the same stages with the same parameters.
std::string workflow_hash(const workflow::Workflow& wf);

}  // namespace flowd::runtime

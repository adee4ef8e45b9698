#include "cli/graph_listing.hpp"

#include "cli/columns.hpp"

namespace flowd::cli {

std::string graph_listing(const workflow::Graph& g) {
  Columns table;
  for (const auto& s : g.stages) {
    std::string inputs;
    for (std::size_t port = 0; port < s.inputs.size(); ++port) {
      if (!s.inputs[port]) continue;
      const auto& from = g.stages[s.inputs[port]->stage];
      inputs += (inputs.empty() ? "" : ", ") + s.spec().inputs[port].name + " <- " + from.name + "." +
                from.spec().outputs[s.inputs[port]->port].name;
    }
    // Several connected inputs: the stage runs once per key-matched tuple.
    if (s.connected_inputs() > 1) inputs += "  (joined by item key)";
    table.row({s.name, s.spec().name, inputs});
  }
  return table.str("  ");
}

}  // namespace flowd::cli

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
    // Several connected inputs: the stage runs once per key-matched tuple,
    // except a scan (series and items read by key) and an all-pairs stage.
    const Pattern p = s.spec().pattern;
    if (p == Pattern::allpairs)
      inputs += s.connected_inputs() > 1 ? "  (every pair of the two sets)" : "  (every pair of the set)";
    else if (s.connected_inputs() > 1 && p != Pattern::scan && !s.consecutive_pairs)
      inputs += "  (joined by item key)";
    table.row({s.name, s.spec().name, inputs});
  }
  return table.str("  ");
}

}  // namespace flowd::cli

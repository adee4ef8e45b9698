#pragma once
// The validated graph as `flowd validate` prints it: one line per stage in
// execution order with its operator and, per connected input port, the
// stage and output port feeding it — so a branch or a join reads as one.
#include <string>

#include "workflow/graph.hpp"

namespace flowd::cli {

// "  join  test.pair  a <- a.out, b <- b.out  (joined by item key)\n" ...
std::string graph_listing(const workflow::Graph& g);

}  // namespace flowd::cli

#pragma once
// Named presets of generator parameters, each modelling one difficulty of
// real H&E tiles (docs/tools.md lists them), for comparing segmentation
// methods condition by condition.
#include <string>
#include <string_view>
#include <vector>

#include "hne/generate.hpp"

namespace flowd::hne {

struct Condition {
  std::string_view name;
  std::string_view description;
};

// Every condition, in the order reports list them.
const std::vector<Condition>& conditions();

// Sets the parameters condition `name` stands for in `p` and leaves the
// others (size, seed, ...) as they are. Throws std::invalid_argument naming
// the valid conditions for an unknown name.
void apply_condition(std::string_view name, Params& p);

}  // namespace flowd::hne

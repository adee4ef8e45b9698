#pragma once
// What each stage of a workflow costs per source item, the planner's input
// (docs/cluster.md "Placement"): written by `flowd run --stage-profile FILE`
// from a run's counters, or by hand.
//
//   {"version": 1, "source_items": 64,
//    "stages": {"segment": {"seconds": 0.21, "bytes_out": 1048576, "items_out": 1,
//                           "input_bytes": 0}, ...}}
//
// Per source item: `seconds` of compute on a node of speed 1 (the profile's
// machine), `bytes_out` and `items_out` handed to its consumers (a sink's:
// the results it writes), `input_bytes` of input data it reads (for a
// source, the data behind what it emits). A source may say `burst` (≥ 1,
// default 1): its slowest call over its mean, the items' worth of work one
// call does before its items come out together (a tile reader that decodes
// a whole image on its first tile of four: 4).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "flowd/item.hpp"
#include "placement/model.hpp"
#include "workflow/graph.hpp"

namespace flowd::placement {

struct StageProfile {
  double seconds = 0, bytes_out = 0, items_out = 0, input_bytes = 0;
  double burst = 1;
};

struct Profile {
  std::uint64_t source_items = 0;  // the items the profiled run's sources emitted
  std::map<std::string, StageProfile, std::less<>> stages;
};

Json to_json(const Profile& p);
// Throws workflow::ValidationError with every problem at its JSON pointer.
Profile profile_from_json(const Json& doc, const std::string& file);
Profile load_profile(const std::filesystem::path& file);
// Writes atomically; throws flowd::Error naming the file.
void save_profile(const Profile& p, const std::filesystem::path& file);

// The planner's problem for a workflow: its stages in topological order,
// each with the profile's costs (a stage the profile lacks is an error
// naming it), consumers from the graph's edges, sources (no inputs) and
// sinks (no outputs) marked, and the sinks fixed to the last site, which
// receives the results.
Problem problem_of(const workflow::Graph& g, const Profile& p, const Sites& sites, std::uint64_t items);

}  // namespace flowd::placement

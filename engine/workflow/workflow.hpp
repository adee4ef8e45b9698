#pragma once
// A workflow document after parsing, variable substitution and overrides,
// before it is checked against the operators (see validate.hpp).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flowd/item.hpp"
#include "workflow/diagnostics.hpp"

namespace flowd::workflow {

using OrderedJson = nlohmann::ordered_json;

inline constexpr int format_version = 1;

struct StageDecl {
  std::string name;
  std::string op;
  std::string doc;
  Json params = Json::object();                // after ${var} substitution
  std::map<std::string, std::string> inputs;  // input port -> "stage.port"
  // Context labels (docs/cluster.md "Labels") as written: where a cluster run
  // may place the stage's tasks. Null: anywhere. validate() parses them into
  // StageNode::labels (workflow/labels.hpp).
  Json labels = nullptr;
  // A scan stage's strategy (sched/scan_strategy.hpp names; empty: auto).
  std::string strategy;
  // A map stage fed consecutive pairs of one keyed series ("consecutive";
  // empty: items matched by key). docs/workflow-format.md, "Pairs".
  std::string pairs;
  // An all-pairs stage's tuning ({"leaf_pairs", "cache_items", "max_loads", "load_ahead"});
  // null: defaults. docs/workflow-format.md, "All-pairs stages".
  Json allpairs = nullptr;
};

// The optional "run" section; command-line flags override each field.
struct RunSection {
  std::optional<std::string> scheduler;
  std::optional<int> cpu;          // worker threads; 0 = all cores
  std::optional<std::string> gpu;  // "none" | "all" | a count
  std::optional<bool> keep_going;
  std::optional<int> max_in_flight;  // items per source alive at once
};

struct Workflow {
  std::filesystem::path file;  // empty for a workflow built in memory
  int version = format_version;
  std::string name;
  std::string description;
  std::vector<std::filesystem::path> plugin_path;  // resolved against the file's directory
  std::map<std::string, Json> vars;                // final values
  std::vector<StageDecl> stages;                   // in document order
  RunSection run;
  OrderedJson resolved;  // the whole document after substitution: hashed for provenance
  // Problems found while reading that do not stop validation; validate()
  // reports them with its own, all together.
  std::vector<Diagnostic> problems;

  const StageDecl* stage(std::string_view n) const {
    for (const auto& s : stages)
      if (s.name == n) return &s;
    return nullptr;
  }
};

// One --set: "name=value" sets a variable, "stage.param=value" a parameter.
// The value is read as JSON when it parses as JSON, else as a string.
struct Override {
  std::string target;
  std::string value;
};

// Reads and checks the document's structure. Throws ValidationError for a
// document that cannot be read at all (unreadable file, JSON syntax error);
// other problems are kept in Workflow::problems for validate() to report.
Workflow load_workflow(const std::filesystem::path& file, const std::vector<Override>& overrides = {});
Workflow parse_workflow(std::string_view text, const std::string& display_name,
                        const std::vector<Override>& overrides = {}, const std::filesystem::path& base_dir = {});

}  // namespace flowd::workflow

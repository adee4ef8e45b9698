#include "workflow/validate.hpp"

#include <filesystem>
#include <system_error>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "workflow/labels.hpp"
#include "util/exceptions.hpp"
#include "util/text.hpp"
#include "workflow/diagnostics.hpp"

namespace flowd::workflow {

namespace {

std::vector<std::string> port_names(const std::vector<PortSpec>& ports) {
  std::vector<std::string> n;
  for (const auto& p : ports) n.push_back(p.name);
  return n;
}

std::string list_or_none(const std::vector<std::string>& names) { return names.empty() ? "none" : join(names, ", "); }

// An all-pairs stage: the set on its first input, optionally a second set
// (then every pair of the two), one output (the score table); "pairs" picks
// the triangle's diagonal; "allpairs" tunes the leaves and the cache.
void check_allpairs(const StageDecl& s, const OperatorSpec& spec, Diagnostics& d) {
  if (spec.inputs.empty() || spec.inputs.size() > 2 || spec.outputs.size() != 1)
    d.add(pointer({"stages", s.name, "op"}), "all-pairs operator '" + spec.name +
                                                 "' must have one or two inputs (the sets) and one output (the scores)");
  const bool two_sets = spec.inputs.size() == 2 && s.inputs.count(spec.inputs[1].name);
  if (!s.pairs.empty()) {
    const std::string at = pointer({"stages", s.name, "pairs"});
    if (two_sets && s.pairs != "rectangle")
      d.add(at, "a stage with two sets computes every pair of them (\"rectangle\"), not '" + s.pairs + "'");
    else if (!two_sets && s.pairs != "triangle" && s.pairs != "triangle-with-diagonal")
      d.add(at, "unknown pairing '" + s.pairs + "' for an all-pairs stage over one set; pairings: \"triangle\" "
                "(a < b, the default), \"triangle-with-diagonal\" (a <= b)");
  }
  if (s.allpairs.is_null()) return;
  for (const auto& [k, v] : s.allpairs.items()) {
    const std::string at = pointer({"stages", s.name, "allpairs", k});
    const std::int64_t lowest = k == "cache_items" || k == "gpu_cache_items" ? 0 : 1;
    if (k == "load_ahead" || k == "peer_cache") {
      if (!v.is_boolean()) d.add(at, "expected true or false, got " + v.dump());
    } else if (k != "leaf_pairs" && k != "cache_items" && k != "gpu_cache_items" && k != "max_loads")
      d.add(at, "unknown all-pairs setting '" + k +
                    "'; settings: leaf_pairs, cache_items, gpu_cache_items, max_loads, load_ahead, peer_cache");
    else if (!v.is_number_integer() || v.get<std::int64_t>() < lowest)
      d.add(at, "expected an integer >= " + std::to_string(lowest) + ", got " + v.dump());
  }
}

// "strategy" belongs to scan stages and names a strategy; "pairs" belongs to
// map stages whose first two inputs both read one output.
void check_scan_and_pairs(const StageDecl& s, const OperatorSpec& spec, Diagnostics& d) {
  if (spec.pattern == Pattern::scan && (spec.inputs.empty() || spec.outputs.size() != 1))
    d.add(pointer({"stages", s.name, "op"}),
          "scan operator '" + spec.name + "' must have the series as its first input and one output");
  if (!s.strategy.empty()) {
    const std::string at = pointer({"stages", s.name, "strategy"});
    if (spec.pattern != Pattern::scan)
      d.add(at, "only scan stages take a strategy; '" + spec.name + "' is a " + std::string(name_of(spec.pattern)) +
                    " operator");
    else if (!sched::parse_scan_strategy(s.strategy))
      d.add(at, "unknown scan strategy '" + s.strategy + "'; strategies: " + std::string(sched::scan_strategy_names()));
  }
  if (spec.pattern == Pattern::allpairs) {
    check_allpairs(s, spec, d);
    return;
  }
  if (!s.allpairs.is_null())
    d.add(pointer({"stages", s.name, "allpairs"}), "only all-pairs stages take \"allpairs\"; '" + spec.name +
                                                       "' is a " + std::string(name_of(spec.pattern)) + " operator");
  if (!s.pairs.empty()) {
    const std::string at = pointer({"stages", s.name, "pairs"});
    if (s.pairs != "consecutive" && s.pairs != "consecutive-with-first") {
      d.add(at, "unknown pairing '" + s.pairs + "'; pairings: \"consecutive\", \"consecutive-with-first\"");
    } else if (spec.pattern != Pattern::map) {
      d.add(at,
            "only map stages take pairs; '" + spec.name + "' is a " + std::string(name_of(spec.pattern)) + " operator");
    } else if (spec.inputs.size() < 2 || s.inputs.size() != 2 || !s.inputs.count(spec.inputs[0].name) ||
               !s.inputs.count(spec.inputs[1].name) ||
               s.inputs.at(spec.inputs[0].name) != s.inputs.at(spec.inputs[1].name)) {
      const std::string a = spec.inputs.size() > 0 ? spec.inputs[0].name : "first";
      const std::string b = spec.inputs.size() > 1 ? spec.inputs[1].name : "second";
      d.add(at, "a stage fed consecutive pairs connects its inputs '" + a + "' and '" + b +
                    "' (and no other) to the same \"stage.port\"");
    }
  }
}

}  // namespace

std::vector<Diagnostic> missing_inputs(const Graph& g) {
  std::vector<Diagnostic> out;
  for (const auto& st : g.stages)
    for (const auto& p : st.spec().params) {
      if (!p.names_input || !st.params.has(p.name)) continue;
      const Json& v = st.params.json().at(p.name);
      if (!v.is_string()) continue;
      const std::string path = v.get<std::string>();
      if (path.empty() || path.starts_with("synthetic:")) continue;
      std::error_code ec;
      const auto status = std::filesystem::status(path, ec);
      if (std::filesystem::exists(status)) continue;
      out.push_back({pointer({"stages", st.name, "params", p.name}),
                     "input '" + path + "' " +
                         (ec && ec != std::errc::no_such_file_or_directory ? "cannot be read: " + ec.message()
                                                                           : std::string("does not exist")) +
                         (std::filesystem::path(path).is_relative()
                              ? " (relative to the current folder, " + std::filesystem::current_path(ec).string() + ")"
                              : std::string())});
    }
  return out;
}

Params resolve_params(const OperatorSpec& spec, const Json& given, const std::string& at, Diagnostics& d) {
  Json values = Json::object();
  std::vector<std::string> names;
  for (const auto& p : spec.params) names.push_back(p.name);
  for (const auto& [name, value] : given.items()) {
    const ParamSpec* p = spec.param(name);
    if (!p) {
      d.add(at + pointer({name}), "operator '" + spec.name + "' has no parameter '" + name + "'" +
                                      did_you_mean(name, names) + "; parameters: " + list_or_none(names));
      continue;
    }
    // A value already reported (e.g. an undefined variable) is not reported again.
    if (auto problem = p->check(value); problem && !d.has(at + pointer({name}))) d.add(at + pointer({name}), *problem);
    values[name] = value;
  }
  for (const auto& p : spec.params) {
    if (values.contains(p.name)) continue;
    if (p.default_value) values[p.name] = *p.default_value;
    else d.add(at, "missing required parameter '" + p.name + "' (" + p.expectation() + ")" +
                       (p.description.empty() ? "" : ": " + p.description));
  }
  return Params(std::move(values));
}

namespace {

// Opens a stage's operator (and the operators it runs as sub-tasks) and
// creates its instance; problems go to `d` at the stage's pointers.
std::optional<StageNode> open_stage(const StageDecl& s, const Params& params, std::size_t index,
                                    plugin::Registry& registry, Diagnostics& d) {
  const std::size_t before = d.items().size();
  try {
    auto handle = registry.open(s.op);
    std::map<std::string, plugin::OperatorHandle, std::less<>> uses;
    for (const auto& sub : handle.spec().uses) {
      try {
        uses.emplace(sub, registry.open(sub));
      } catch (const std::exception& e) {
        d.add(pointer({"stages", s.name, "op"}), "operator '" + s.op + "' runs '" + sub + "' as a sub-task, which cannot be used: " + e.what());
      }
    }
    if (d.items().size() != before) return std::nullopt;
    StageNode node{s.name, index, std::move(handle), std::move(uses), params, nullptr, {}, {}, {}};
    if (auto strategy = sched::parse_scan_strategy(s.strategy)) node.strategy = *strategy;
    if (node.spec().pattern == Pattern::allpairs) {
      const auto& in = node.spec().inputs;
      node.allpairs.shape = in.size() == 2 && s.inputs.count(in[1].name) ? sched::PairShape::rectangle
                            : s.pairs == "triangle-with-diagonal"       ? sched::PairShape::triangle_with_diagonal
                                                                        : sched::PairShape::triangle;
      if (s.allpairs.is_object()) {
        auto get = [&](const char* k, std::uint64_t dflt) {
          const auto it = s.allpairs.find(k);
          return it != s.allpairs.end() && it->is_number_integer() ? it->get<std::uint64_t>() : dflt;
        };
        node.allpairs.leaf_pairs = get("leaf_pairs", 0);
        node.allpairs.cache_items = get("cache_items", 0);
        node.allpairs.gpu_cache_items = get("gpu_cache_items", 0);
        node.allpairs.max_loads = get("max_loads", 8);
        if (const auto it = s.allpairs.find("load_ahead"); it != s.allpairs.end() && it->is_boolean())
          node.allpairs.load_ahead = it->get<bool>();
        if (const auto it = s.allpairs.find("peer_cache"); it != s.allpairs.end() && it->is_boolean())
          node.allpairs.peer_cache = it->get<bool>();
      }
    } else {
      node.consecutive_pairs = !s.pairs.empty();
      node.first_pair_alone = s.pairs == "consecutive-with-first";
    }
    node.op = node.handle.create(node.params);
    node.inputs.resize(node.spec().inputs.size());
    node.consumers.resize(node.spec().outputs.size());
    return node;
  } catch (const ParamError& e) {
    d.add(pointer({"stages", s.name, "params", e.param()}), e.what());
  } catch (...) {
    d.add(pointer({"stages", s.name}),
          "operator '" + s.op + "' could not be created: " + current_exception_message("its constructor"));
  }
  return std::nullopt;
}

}  // namespace

OpenedStages open_map_stages(const Workflow& wf, plugin::Registry& registry, const std::set<std::string>& placed) {
  OpenedStages out;
  for (const auto& s : wf.stages) {
    Diagnostics d;
    const OperatorSpec* spec = registry.find(s.op);
    if (!spec) {
      out.unavailable[s.name] = registry.explain(s.op);
      continue;
    }
    // All-pairs stages too: a cluster run's worker nodes run their leaves.
    const bool moved_here = (spec->pattern == Pattern::source || spec->pattern == Pattern::sink) && placed.contains(s.name);
    if (spec->pattern != Pattern::map && spec->pattern != Pattern::scan && spec->pattern != Pattern::allpairs &&
        !moved_here)
      continue;
    const Params params = resolve_params(*spec, s.params, pointer({"stages", s.name, "params"}), d);
    std::optional<StageNode> node;
    if (d.empty()) node = open_stage(s, params, out.graph.stages.size(), registry, d);
    if (!node) {
      std::vector<std::string> why;
      for (const auto& item : d.items()) why.push_back(item.where + ": " + item.message);
      out.unavailable[s.name] = join(why, "; ");
      continue;
    }
    out.graph.stages.push_back(std::move(*node));
  }
  out.graph.workflow = wf;
  return out;
}

Graph validate(Workflow wf, plugin::Registry& registry) {
  Diagnostics d(wf.problems);
  const std::string file = wf.file.empty() ? wf.name : wf.file.string();

  // 1. Operators.
  std::map<std::string, const OperatorSpec*> specs;
  for (const auto& s : wf.stages) {
    if (s.op.empty()) continue;  // reported by the parser
    const OperatorSpec* spec = registry.find(s.op);
    if (!spec) d.add(pointer({"stages", s.name, "op"}), registry.explain(s.op));
    specs[s.name] = spec;
  }

  // 2. Ports, edges and types.
  std::vector<std::string> stage_names;
  for (const auto& s : wf.stages) stage_names.push_back(s.name);
  std::map<std::string, std::vector<std::string>> producers;  // stage -> upstream stages, for cycle detection
  for (const auto& s : wf.stages) {
    const OperatorSpec* spec = specs[s.name];
    if (!spec) continue;
    for (const auto& [port, ref] : s.inputs) {
      const std::string at = pointer({"stages", s.name, "inputs", port});
      const auto in = spec->input_index(port);
      if (!in) {
        d.add(at, "operator '" + spec->name + "' has no input port '" + port + "'" +
                      did_you_mean(port, port_names(spec->inputs)) + "; inputs: " + list_or_none(port_names(spec->inputs)));
        continue;
      }
      const auto dot = ref.find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == ref.size()) {
        d.add(at, "expected \"stage.port\", got \"" + ref + "\"");
        continue;
      }
      const std::string up = ref.substr(0, dot), up_port = ref.substr(dot + 1);
      const StageDecl* upstream = wf.stage(up);
      if (!upstream) {
        d.add(at, "no stage '" + up + "'" + did_you_mean(up, stage_names));
        continue;
      }
      producers[s.name].push_back(up);
      const OperatorSpec* up_spec = specs[up];
      if (!up_spec) continue;
      const auto out = up_spec->output_index(up_port);
      if (!out) {
        d.add(at, "stage '" + up + "' (" + up_spec->name + ") has no output port '" + up_port + "'" +
                      did_you_mean(up_port, port_names(up_spec->outputs)) + "; outputs: " +
                      list_or_none(port_names(up_spec->outputs)));
        continue;
      }
      const PortType& want = spec->inputs[*in].type;
      const PortType& have = up_spec->outputs[*out].type;
      if (!want.compatible_with(have))
        d.add(at, "type mismatch: " + ref + " produces " + have.str() + " but input '" + port + "' of " + spec->name +
                      " expects " + want.str());
    }
    for (const auto& p : spec->inputs)
      if (!p.optional && !s.inputs.count(p.name))
        d.add(pointer({"stages", s.name, "inputs"}), "required input '" + p.name + "' (" + p.type.str() +
                                                         ") of " + spec->name + " is not connected");
  }

  // 3. Cycles (depth-first search over producer edges).
  {
    std::map<std::string, int> state;  // 0 new, 1 on stack, 2 done
    std::vector<std::string> path;
    std::function<bool(const std::string&)> visit = [&](const std::string& n) {
      if (state[n] == 2) return false;
      if (state[n] == 1) {
        auto from = std::find(path.begin(), path.end(), n);
        std::vector<std::string> cycle(from, path.end());
        cycle.push_back(n);
        d.add(pointer({"stages", n, "inputs"}), "cycle: " + join(cycle, " <- ") + " (each stage consumes the next)");
        return true;
      }
      state[n] = 1;
      path.push_back(n);
      for (const auto& up : producers[n])
        if (visit(up)) return true;
      path.pop_back();
      state[n] = 2;
      return false;
    };
    for (const auto& s : wf.stages)
      if (visit(s.name)) break;
  }

  // 4. Parameters and patterns.
  std::map<std::string, Params> params;
  bool has_source = false;
  for (const auto& s : wf.stages) {
    const OperatorSpec* spec = specs[s.name];
    if (!spec) continue;
    params[s.name] = resolve_params(*spec, s.params, pointer({"stages", s.name, "params"}), d);
    has_source |= spec->pattern == Pattern::source;
    if (spec->pattern == Pattern::reduce && (spec->inputs.size() != 1 || spec->outputs.size() != 1))
      d.add(pointer({"stages", s.name, "op"}), "reduce operator '" + spec->name + "' must have one input and one output");
    check_scan_and_pairs(s, *spec, d);
  }
  // 5. Context labels (docs/cluster.md "Labels"): checked in every run, so
  // a workflow is valid or not whether it runs in one process or many.
  // Parsed here once; the graph carries the result to the cluster runtime.
  std::map<std::string, StageLabels> labels;
  for (const auto& s : wf.stages) {
    if (s.labels.is_null()) continue;
    auto parsed = parse_stage_labels(s.labels, pointer({"stages", s.name, "labels"}));
    for (const auto& e : parsed.errors) d.add(e.pointer, e.message);
    labels[s.name] = std::move(parsed.value);
  }
  const bool all_resolved = std::all_of(specs.begin(), specs.end(), [](const auto& kv) { return kv.second != nullptr; });
  if (!has_source && all_resolved && !wf.stages.empty())
    d.add("/stages", "no stage is a source (an operator with pattern 'source'), so nothing would run");
  if (!d.empty()) throw ValidationError(file, d.items());

  // 6. Instantiate in topological order; operators check their own parameters.
  Graph g;
  std::vector<std::string> order;
  {
    std::map<std::string, bool> placed;
    std::function<void(const std::string&)> place = [&](const std::string& n) {
      if (placed[n]) return;
      placed[n] = true;
      for (const auto& up : producers[n]) place(up);
      order.push_back(n);
    };
    for (const auto& s : wf.stages) place(s.name);
  }
  std::map<std::string, std::size_t> index;
  for (const auto& name : order) {
    if (auto node = open_stage(*wf.stage(name), params[name], g.stages.size(), registry, d)) {
      node->labels = std::move(labels[name]);
      index[name] = g.stages.size();
      g.stages.push_back(std::move(*node));
    }
  }
  if (!d.empty()) throw ValidationError(file, d.items());

  for (auto& node : g.stages) {
    const StageDecl& s = *wf.stage(node.name);
    for (const auto& [port, ref] : s.inputs) {
      const auto dot = ref.find('.');
      const std::size_t up = index.at(ref.substr(0, dot));
      const std::size_t in = *node.spec().input_index(port);
      const std::size_t out = *g.stages[up].spec().output_index(ref.substr(dot + 1));
      node.inputs[in] = PortRef{up, out};
      g.stages[up].consumers[out].push_back(PortRef{node.index, in});
    }
  }
  g.workflow = std::move(wf);
  return g;
}

}  // namespace flowd::workflow

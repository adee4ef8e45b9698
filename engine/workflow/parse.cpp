// Reading a workflow document: syntax, structure, variables and overrides.
#include <algorithm>
#include <set>

#include "util/fs.hpp"
#include "util/text.hpp"
#include "workflow/diagnostics.hpp"
#include "workflow/json_reader.hpp"
#include "workflow/substitute.hpp"
#include "workflow/workflow.hpp"

namespace flowd::workflow {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> top_keys = {"version", "name", "description", "plugin_path", "vars", "stages", "run"};
const std::vector<std::string> stage_keys = {"op", "doc", "params", "inputs", "labels", "strategy", "pairs", "allpairs"};
const std::vector<std::string> run_keys = {"scheduler", "cpu", "gpu", "keep_going", "max_in_flight"};

bool identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

std::string type_name(const OrderedJson& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_null()) return "null";
  if (j.is_array()) return "an array";
  return "an object";
}

void check_keys(const OrderedJson& obj, const std::vector<std::string>& allowed, const std::string& at,
                Diagnostics& d) {
  for (const auto& [key, v] : obj.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      d.add(at + pointer({key}),
            "unknown field '" + key + "'" + did_you_mean(key, allowed) + "; allowed: " + join(allowed, ", "));
}

Json from_ordered(const OrderedJson& j) { return Json::parse(j.dump()); }

// Not OrderedJson::parse: its objects look every key up as they insert it,
// quadratic in an object's size (50 000 variables took seconds).
OrderedJson to_ordered(const Json& j) { return read_json(j.dump()).value; }

// A --set value in a message: long values (a generated one, say) cut short.
std::string abbreviated(const std::string& value) {
  constexpr std::size_t keep = 60;
  return value.size() <= keep ? value : value.substr(0, keep) + "...(" + std::to_string(value.size()) + " bytes)";
}

void apply_overrides(OrderedJson& doc, const std::vector<Override>& overrides, Diagnostics& d) {
  for (const auto& o : overrides) {
    const std::string where = "--set " + o.target + "=" + abbreviated(o.value);
    const auto dot = o.target.find('.');
    // Levels above the value: the document, "vars" / "stages", stage, "params".
    const std::size_t above = dot == std::string::npos ? 2 : 4;
    JsonRead parsed = read_json(o.value, max_nesting_depth - above);
    if (parsed.failure == JsonRead::Failure::too_deep) {
      d.add(where, "the value has " + parsed.message + " (the document's limit, " + std::to_string(max_nesting_depth) +
                       ", counts the " + std::to_string(above) + " levels above the value)");
      continue;
    }
    // Not JSON: the text itself, as a string.
    OrderedJson value = parsed.failure == JsonRead::Failure::none ? std::move(parsed.value) : OrderedJson(o.value);
    if (dot == std::string::npos) {
      if (!doc.contains("vars") || !doc["vars"].is_object() || !doc["vars"].contains(o.target)) {
        std::vector<std::string> names;
        if (doc.contains("vars") && doc["vars"].is_object())
          for (const auto& [k, v] : doc["vars"].items())
            names.push_back(k);
        d.add(where, "the workflow has no variable '" + o.target + "'" + did_you_mean(o.target, names) +
                         (names.empty() ? "" : "; variables: " + join(names, ", ")) +
                         " (use stage.param=value for a parameter)");
        continue;
      }
      doc["vars"][o.target] = value;
      continue;
    }
    const std::string stage = o.target.substr(0, dot), param = o.target.substr(dot + 1);
    if (!doc.contains("stages") || !doc["stages"].is_object() || !doc["stages"].contains(stage)) {
      std::vector<std::string> names;
      if (doc.contains("stages") && doc["stages"].is_object())
        for (const auto& [k, v] : doc["stages"].items())
          names.push_back(k);
      d.add(where, "the workflow has no stage '" + stage + "'" + did_you_mean(stage, names));
      continue;
    }
    if (param.empty() || param.find('.') != std::string::npos) {
      d.add(where, "expected stage.param=value");
      continue;
    }
    auto& s = doc["stages"][stage];
    if (!s.is_object()) continue;  // reported by the structure check
    if (!s.contains("params")) s["params"] = OrderedJson::object();
    if (s["params"].is_object()) s["params"][param] = value;
  }
}

}  // namespace

Workflow parse_workflow(std::string_view text, const std::string& display, const std::vector<Override>& overrides,
                        const fs::path& base_dir) {
  Diagnostics d;
  JsonRead parsed = read_json(text);
  if (parsed.failure == JsonRead::Failure::syntax)
    throw ValidationError(display, {{display + ":" + line_column(text, parsed.byte), parsed.message}});
  if (parsed.failure == JsonRead::Failure::too_deep)
    throw ValidationError(display, {{shorten_pointer(parsed.pointer),
                                     parsed.message + " (" + display + ":" + line_column(text, parsed.byte) + ")"}});
  for (auto& dup : parsed.duplicates)
    d.add(std::move(dup.where), std::move(dup.message));
  OrderedJson doc = std::move(parsed.value);
  if (!doc.is_object()) throw ValidationError(display, {{"/", "a workflow is a JSON object, got " + type_name(doc)}});
  apply_overrides(doc, overrides, d);

  Workflow w;
  check_keys(doc, top_keys, "", d);

  if (!doc.contains("version")) {
    d.add("/version", "missing; write \"version\": " + std::to_string(format_version));
  } else if (!doc["version"].is_number_integer()) {
    d.add("/version", "expected an integer, got " + type_name(doc["version"]));
  } else if (doc["version"].get<int>() != format_version) {
    d.add("/version", "format version " + doc["version"].dump() + " is not supported; this flowd reads version " +
                          std::to_string(format_version));
  }
  for (const char* key : {"name", "description"})
    if (doc.contains(key) && !doc[key].is_string())
      d.add(pointer({key}), "expected a string, got " + type_name(doc[key]));
  w.name = doc.value("name", display);
  w.description = doc.value("description", "");

  OrderedJson vars = OrderedJson::object();
  if (doc.contains("vars")) {
    if (!doc["vars"].is_object()) {
      d.add("/vars", "expected an object of variables, got " + type_name(doc["vars"]));
    } else {
      for (const auto& [k, v] : doc["vars"].items()) {
        if (!identifier(k)) d.add(pointer({"vars", k}), "variable names are letters, digits, '_' and '-'");
        // A list (cvtree's k: [5, 6, 7]) is a whole value, never part of a
        // string; its elements are taken as written.
        auto scalar = [](const auto& x) { return x.is_string() || x.is_number() || x.is_boolean(); };
        const bool list = v.is_array() && std::all_of(v.begin(), v.end(), scalar);
        if (!(scalar(v) || list))
          d.add(pointer({"vars", k}), "expected a string, number, boolean or a list of them, got " + type_name(v));
      }
      vars = doc["vars"];
    }
  }
  Substituter sub(vars, d);
  for (const auto& [k, v] : vars.items()) {
    const std::string at = pointer({"vars", k});
    w.vars[k] = sub.var(k, Where(at));
  }

  if (doc.contains("plugin_path")) {
    const auto& pp = doc["plugin_path"];
    std::vector<std::pair<const OrderedJson*, std::string>> entries;
    if (pp.is_string())
      entries.emplace_back(&pp, "/plugin_path");
    else if (pp.is_array())
      for (std::size_t i = 0; i < pp.size(); ++i)
        entries.emplace_back(&pp[i], "/plugin_path/" + std::to_string(i));
    else
      d.add("/plugin_path", "expected a path or an array of paths, got " + type_name(pp));
    for (auto& [e, at] : entries) {
      const Json v = sub.value(*e, Where(at));
      if (!v.is_string()) {
        d.add(at, "expected a path string");
        continue;
      }
      fs::path p(v.get<std::string>());
      w.plugin_path.push_back(p.is_relative() ? base_dir / p : p);
    }
  }

  if (!doc.contains("stages")) {
    d.add("/stages", "missing; a workflow needs at least one stage");
  } else if (!doc["stages"].is_object() || doc["stages"].empty()) {
    d.add("/stages", "expected a non-empty object of named stages, got " +
                         (doc["stages"].is_object() ? std::string("an empty object") : type_name(doc["stages"])));
  } else {
    for (auto& [name, s] : doc["stages"].items()) {
      const std::string at = pointer({"stages", name});
      if (!identifier(name)) d.add(at, "stage names are letters, digits, '_' and '-' (no dots)");
      if (!s.is_object()) {
        d.add(at, "expected an object with \"op\", got " + type_name(s));
        continue;
      }
      check_keys(s, stage_keys, at, d);
      StageDecl st;
      st.name = name;
      if (!s.contains("op"))
        d.add(at + "/op", "missing; name the operator this stage runs (see `flowd plugins`)");
      else if (!s["op"].is_string())
        d.add(at + "/op", "expected an operator name, got " + type_name(s["op"]));
      else
        st.op = s["op"].get<std::string>();
      if (s.contains("doc") && s["doc"].is_string()) st.doc = s["doc"].get<std::string>();
      if (s.contains("params")) {
        if (!s["params"].is_object())
          d.add(at + "/params", "expected an object, got " + type_name(s["params"]));
        else {
          const std::string params_at = at + "/params";
          st.params = sub.value(s["params"], Where(params_at));
          s["params"] = to_ordered(st.params);
        }
      }
      if (s.contains("inputs")) {
        if (!s["inputs"].is_object())
          d.add(at + "/inputs", "expected an object of port: \"stage.port\", got " + type_name(s["inputs"]));
        else
          for (const auto& [port, ref] : s["inputs"].items()) {
            if (!ref.is_string())
              d.add(at + pointer({"inputs", port}), "expected \"stage.port\", got " + type_name(ref));
            else
              st.inputs[port] = ref.get<std::string>();
          }
      }
      if (s.contains("labels")) st.labels = from_ordered(s["labels"]);  // checked by validate()
      // Checked by validate(), which knows the operator's pattern.
      for (const char* key : {"strategy", "pairs"}) {
        if (!s.contains(key)) continue;
        if (!s[key].is_string()) {
          d.add(at + "/" + key, std::string("expected a string, got ") + type_name(s[key]));
          continue;
        }
        const Json v = sub.value(s[key], Where(at + "/" + key));
        if (!v.is_string()) {
          if (!v.is_null()) d.add(at + "/" + key, std::string("expected a string, got ") + type_name(to_ordered(v)));
          continue;
        }
        s[key] = to_ordered(v);
        (key[0] == 's' ? st.strategy : st.pairs) = v.get<std::string>();
      }
      if (s.contains("allpairs")) {
        const std::string ap = at + "/allpairs";
        if (!s["allpairs"].is_object()) {
          d.add(ap, std::string("expected an object, got ") + type_name(s["allpairs"]));
        } else {
          st.allpairs = sub.value(s["allpairs"], Where(ap));
          s["allpairs"] = to_ordered(st.allpairs);
        }
      }
      w.stages.push_back(std::move(st));
    }
  }

  if (doc.contains("run")) {
    const auto& r = doc["run"];
    if (!r.is_object()) {
      d.add("/run", "expected an object, got " + type_name(r));
    } else {
      check_keys(r, run_keys, "/run", d);
      if (r.contains("scheduler")) {
        if (r["scheduler"].is_string())
          w.run.scheduler = r["scheduler"].get<std::string>();
        else
          d.add("/run/scheduler", "expected a string, got " + type_name(r["scheduler"]));
      }
      if (r.contains("cpu")) {
        if (r["cpu"].is_number_integer() && r["cpu"].get<int>() >= 0)
          w.run.cpu = r["cpu"].get<int>();
        else
          d.add("/run/cpu", "expected a worker count >= 0 (0 = all cores), got " + r["cpu"].dump());
      }
      if (r.contains("gpu")) {
        const auto& g = r["gpu"];
        if (g.is_string())
          w.run.gpu = g.get<std::string>();
        else if (g.is_number_integer() && g.get<int>() >= 0)
          w.run.gpu = std::to_string(g.get<int>());
        else
          d.add("/run/gpu", "expected \"none\", \"all\" or a count, got " + g.dump());
      }
      if (r.contains("keep_going")) {
        if (r["keep_going"].is_boolean())
          w.run.keep_going = r["keep_going"].get<bool>();
        else
          d.add("/run/keep_going", "expected true or false, got " + type_name(r["keep_going"]));
      }
      if (r.contains("max_in_flight")) {
        if (r["max_in_flight"].is_number_integer() && r["max_in_flight"].get<int>() >= 1)
          w.run.max_in_flight = r["max_in_flight"].get<int>();
        else
          d.add("/run/max_in_flight", "expected an integer >= 1, got " + r["max_in_flight"].dump());
      }
    }
  }

  w.problems = d.items();
  doc["vars"] = to_ordered(Json(w.vars));
  w.resolved = std::move(doc);
  return w;
}

Workflow load_workflow(const fs::path& file, const std::vector<Override>& overrides) {
  const std::string name = file.string();
  // A directory opens as a stream that reads nothing: said plainly, not as
  // a JSON syntax error at 1:1.
  std::error_code ec;
  if (fs::is_directory(file, ec))
    throw ValidationError(name, {{name, name + " is a directory, not a workflow file (give the .json file in it)"}});
  std::string text;
  try {
    text = read_file(file);
  } catch (const Error& e) {
    throw ValidationError(name, {{name, e.what()}});
  }
  Workflow w = parse_workflow(text, file.string(), overrides, file.parent_path());
  w.file = file;
  return w;
}

}  // namespace flowd::workflow

#include "workflow/labels.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "workflow/diagnostics.hpp"

namespace flowd::workflow {

namespace {

using json = nlohmann::json;

std::string child(std::string_view parent, std::string_view key) { return std::string(parent) + pointer({key}); }

std::string child(std::string_view parent, std::size_t index) { return child(parent, std::to_string(index)); }

std::string type_name(const json& v) { return v.type_name(); }

bool valid_label(std::string_view s) {
  if (s.empty()) return false;
  return std::none_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f;
  });
}

// A list of distinct, valid labels. Duplicates are errors rather than being
// merged: in "prefer" a duplicate would make the order ambiguous, and
// elsewhere it is almost always a typo for another label.
std::vector<std::string> label_list(const json& v, const std::string& ptr, std::vector<LabelError>& errors) {
  std::vector<std::string> out;
  if (!v.is_array()) {
    errors.push_back({ptr, "expected an array of label strings, got " + type_name(v)});
    return out;
  }
  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto p = child(ptr, i);
    if (!v[i].is_string()) {
      errors.push_back({p, "a label must be a string, got " + type_name(v[i])});
      continue;
    }
    const auto& s = v[i].get_ref<const std::string&>();
    if (!valid_label(s)) {
      errors.push_back({p, s.empty() ? "a label must not be empty"
                                     : "label '" + s + "' contains whitespace or a control character"});
      continue;
    }
    if (!seen.insert(s).second) {
      errors.push_back({p, "label '" + s + "' appears twice"});
      continue;
    }
    out.push_back(s);
  }
  return out;
}

bool has(const NodeLabels& node, std::string_view label) {
  return std::find(node.names.begin(), node.names.end(), label) != node.names.end();
}

constexpr std::string_view site_prefix = "site:";

}  // namespace

Parsed<NodeLabels> parse_node_labels(const json& labels, std::string_view pointer) {
  Parsed<NodeLabels> out;
  const std::string ptr(pointer);
  if (labels.is_array()) {
    out.value.names = label_list(labels, ptr, out.errors);
  } else if (labels.is_object()) {
    for (const auto& [key, value] : labels.items()) {
      const auto p = child(ptr, key);
      if (key == "names") {
        out.value.names = label_list(value, p, out.errors);
      } else if (key == "rank") {
        if (value.is_number_integer()) out.value.rank = value.get<std::int64_t>();
        else out.errors.push_back({p, "\"rank\" must be an integer, got " + type_name(value)});
      } else {
        out.errors.push_back({p, "unknown key \"" + key + "\" (node labels have \"names\" and \"rank\")"});
      }
    }
  } else {
    out.errors.push_back({ptr, "node labels must be an array of labels or an object with \"names\" and "
                               "\"rank\", got " + type_name(labels)});
    return out;
  }
  int sites = 0;
  for (const auto& n : out.value.names) sites += n.rfind(site_prefix, 0) == 0 ? 1 : 0;
  if (sites > 1) {
    out.errors.push_back({labels.is_array() ? ptr : child(ptr, "names"),
                          "a node has at most one \"site:\" label (it has " + std::to_string(sites) + ")"});
  }
  return out;
}

Parsed<StageLabels> parse_stage_labels(const json& labels, std::string_view pointer) {
  Parsed<StageLabels> out;
  const std::string ptr(pointer);
  if (labels.is_array()) {
    out.value.all = label_list(labels, ptr, out.errors);
    return out;
  }
  if (!labels.is_object()) {
    out.errors.push_back({ptr, "stage labels must be an array of required labels or an object, got " +
                                   type_name(labels)});
    return out;
  }
  for (const auto& [key, value] : labels.items()) {
    const auto p = child(ptr, key);
    if (key == "all") {
      out.value.all = label_list(value, p, out.errors);
    } else if (key == "any") {
      out.value.any = label_list(value, p, out.errors);
      if (value.is_array() && value.empty()) {
        out.errors.push_back({p, "\"any\" must not be empty: no node could match it (leave it out instead)"});
      }
    } else if (key == "prefer") {
      out.value.prefer = label_list(value, p, out.errors);
    } else if (key == "anywhere") {
      if (value.is_boolean()) out.value.anywhere = value.get<bool>();
      else out.errors.push_back({p, "\"anywhere\" must be true or false, got " + type_name(value)});
    } else if (key == "rank") {
      const std::string s = value.is_string() ? value.get<std::string>() : std::string();
      if (s == "any") out.value.rank = RankPolicy::any;
      else if (s == "biggest") out.value.rank = RankPolicy::biggest;
      else if (s == "smallest") out.value.rank = RankPolicy::smallest;
      else out.errors.push_back({p, "\"rank\" must be \"biggest\", \"smallest\" or \"any\", got " + value.dump()});
    } else {
      out.errors.push_back(
          {p, "unknown key \"" + key + "\" (stage labels have \"all\", \"any\", \"prefer\", \"anywhere\", \"rank\")"});
    }
  }
  if (out.value.anywhere && out.value.prefer.empty() && labels.contains("anywhere")) {
    out.errors.push_back({child(ptr, "anywhere"),
                          "\"anywhere\" is the fallback for \"prefer\", which is missing or empty"});
  }
  return out;
}

std::optional<int> preference(const StageLabels& stage, const NodeLabels& node) {
  for (const auto& l : stage.all) {
    if (!has(node, l)) return std::nullopt;
  }
  if (!stage.any.empty() &&
      std::none_of(stage.any.begin(), stage.any.end(), [&](const auto& l) { return has(node, l); })) {
    return std::nullopt;
  }
  if (stage.prefer.empty()) return 0;
  for (std::size_t i = 0; i < stage.prefer.size(); ++i) {
    if (has(node, stage.prefer[i])) return static_cast<int>(i);
  }
  if (stage.anywhere) return static_cast<int>(stage.prefer.size());
  return std::nullopt;
}

bool can_run(const StageLabels& stage, const NodeLabels& node) { return preference(stage, node).has_value(); }

std::optional<std::string> site_of(const NodeLabels& node) {
  for (const auto& n : node.names) {
    if (n.rfind(site_prefix, 0) == 0) return n.substr(site_prefix.size());
  }
  return std::nullopt;
}

}  // namespace flowd::workflow

#pragma once
// The machine-readable manifest: operator specs as JSON. Plugins export it
// (flowd_plugin_manifest); the engine caches it to resolve operators without
// opening every plugin, and `flowd plugins --json` prints it.
#include <string>

#include <nlohmann/json.hpp>

#include "flowd/operator.hpp"

namespace flowd {

// Not `inline`: each plugin reports its own (flowd/sdk_hash.hpp says why).
constexpr int manifest_version = 1;

inline Json to_json(const PortSpec& p) {
  return {{"name", p.name}, {"type", p.type.str()}, {"doc", p.doc}, {"optional", p.optional}};
}

inline Json to_json(const ParamSpec& p) {
  Json j = {{"name", p.name}, {"type", std::string(name_of(p.type))}, {"doc", p.description}};
  j["required"] = p.required();
  if (p.default_value) j["default"] = *p.default_value;
  if (p.minimum) j["min"] = *p.minimum;
  if (p.maximum) j["max"] = *p.maximum;
  if (!p.allowed.empty()) j["allowed"] = p.allowed;
  if (p.names_input) j["input_path"] = true;
  return j;
}

inline Json to_json(const OperatorSpec& s) {
  Json j = {{"name", s.name}, {"doc", s.doc}, {"pattern", std::string(name_of(s.pattern))}};
  j["variants"] = Json::array();
  for (Device d : s.variants) j["variants"].push_back(std::string(name_of(d)));
  if (s.speedup_hint) j["speedup_hint"] = *s.speedup_hint;
  if (!s.uses.empty()) j["uses"] = s.uses;
  for (const char* side : {"inputs", "outputs"}) {
    j[side] = Json::array();
    for (const auto& p : (side[0] == 'i' ? s.inputs : s.outputs)) j[side].push_back(to_json(p));
  }
  j["params"] = Json::array();
  for (const auto& p : s.params) j["params"].push_back(to_json(p));
  return j;
}

inline PortSpec port_from_json(const Json& j) {
  PortSpec p;
  p.name = j.at("name").get<std::string>();
  const auto type = j.at("type").get<std::string>();
  const auto parsed = PortType::parse(type);
  if (!parsed) throw Error("manifest: port '" + p.name + "' has malformed type '" + type + "'");
  p.type = *parsed;
  p.doc = j.value("doc", "");
  p.optional = j.value("optional", false);
  return p;
}

inline ParamSpec param_from_json(const Json& j) {
  ParamSpec p;
  p.name = j.at("name").get<std::string>();
  const auto type = j.at("type").get<std::string>();
  bool known = false;
  for (auto t : {ParamType::boolean, ParamType::integer, ParamType::number, ParamType::string, ParamType::json})
    if (name_of(t) == type) p.type = t, known = true;
  if (!known) throw Error("manifest: parameter '" + p.name + "' has unknown type '" + type + "'");
  if (j.contains("default")) p.default_value = j["default"];
  if (j.contains("min")) p.minimum = j["min"].get<double>();
  if (j.contains("max")) p.maximum = j["max"].get<double>();
  if (j.contains("allowed")) p.allowed = j["allowed"].get<std::vector<Json>>();
  p.description = j.value("doc", "");
  p.names_input = j.value("input_path", false);
  return p;
}

inline OperatorSpec spec_from_json(const Json& j) {
  OperatorSpec s;
  s.name = j.at("name").get<std::string>();
  s.doc = j.value("doc", "");
  const auto pattern = j.at("pattern").get<std::string>();
  bool known = false;
  for (auto p : {Pattern::source, Pattern::map, Pattern::reduce, Pattern::sink, Pattern::scan, Pattern::allpairs})
    if (name_of(p) == pattern) s.pattern = p, known = true;
  if (!known) throw Error("manifest: operator '" + s.name + "' has unknown pattern '" + pattern + "'");
  for (const auto& v : j.at("variants")) s.variants.push_back(v.get<std::string>() == "gpu" ? Device::gpu : Device::cpu);
  if (j.contains("speedup_hint")) s.speedup_hint = j["speedup_hint"].get<double>();
  if (j.contains("uses")) s.uses = j["uses"].get<std::vector<std::string>>();
  for (const auto& p : j.at("inputs")) s.inputs.push_back(port_from_json(p));
  for (const auto& p : j.at("outputs")) s.outputs.push_back(port_from_json(p));
  for (const auto& p : j.at("params")) s.params.push_back(param_from_json(p));
  return s;
}

}  // namespace flowd

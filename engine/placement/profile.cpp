#include "placement/profile.hpp"

#include <algorithm>
#include <cmath>

#include "util/fs.hpp"
#include "workflow/diagnostics.hpp"
#include "workflow/json_reader.hpp"

namespace flowd::placement {

Json to_json(const Profile& p) {
  Json stages = Json::object();
  for (const auto& [name, s] : p.stages) {
    stages[name] = {{"seconds", s.seconds}, {"bytes_out", s.bytes_out}, {"items_out", s.items_out},
                    {"input_bytes", s.input_bytes}};
    if (s.burst > 1) stages[name]["burst"] = s.burst;
  }
  return {{"version", 1}, {"source_items", p.source_items}, {"stages", std::move(stages)}};
}

Profile profile_from_json(const Json& doc, const std::string& file) {
  workflow::Diagnostics d;
  Profile p;
  if (!doc.is_object()) throw workflow::ValidationError(file, {{"", "expected an object with \"stages\""}});
  for (const auto& [k, v] : doc.items())
    if (k != "version" && k != "source_items" && k != "stages") d.add(workflow::pointer({k}), "unknown key \"" + k + "\"");
  if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<std::int64_t>() != 1)
    d.add("/version", "expected 1");
  if (doc.contains("source_items")) {
    if (!doc["source_items"].is_number_unsigned())
      d.add("/source_items", "expected a whole number, got " + doc["source_items"].dump());
    else
      p.source_items = doc["source_items"].get<std::uint64_t>();
  }
  const Json stages = doc.value("stages", Json());
  if (!stages.is_object()) {
    d.add("/stages", "expected an object: the cost of each stage per source item");
  } else {
    for (const auto& [name, s] : stages.items()) {
      const std::string at = workflow::pointer({"stages", name});
      if (!s.is_object()) {
        d.add(at, "expected an object");
        continue;
      }
      StageProfile sp;
      for (const auto& [k, v] : s.items()) {
        double* field = k == "seconds" ? &sp.seconds : k == "bytes_out" ? &sp.bytes_out
                        : k == "items_out" ? &sp.items_out : k == "input_bytes" ? &sp.input_bytes
                        : k == "burst" ? &sp.burst : nullptr;
        if (!field) {
          d.add(at + workflow::pointer({k}), "unknown key \"" + k + "\"");
        } else if (k == "burst" && (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 1)) {
          d.add(at + workflow::pointer({k}), "expected a number, at least 1, got " + v.dump());
        } else if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
          d.add(at + workflow::pointer({k}), "expected a number, at least 0, got " + v.dump());
        } else {
          *field = v.get<double>();
        }
      }
      p.stages[name] = sp;
    }
  }
  if (!d.empty()) throw workflow::ValidationError(file, d.items());
  return p;
}

Profile load_profile(const std::filesystem::path& file) {
  return profile_from_json(workflow::read_json_file(file, "stage profile"), file.string());
}

void save_profile(const Profile& p, const std::filesystem::path& file) {
  try {
    write_file_atomic(file, to_json(p).dump(2) + "\n");
  } catch (const std::exception& e) {
    throw Error("cannot write the stage profile '" + file.string() + "': " + e.what());
  }
}

Problem problem_of(const workflow::Graph& g, const Profile& p, const Sites& sites, std::uint64_t items) {
  Problem out;
  out.sites = sites;
  out.items = items;
  std::vector<std::string> missing;
  for (const auto& s : g.stages) {
    StageCost c;
    c.name = s.name;
    const auto it = p.stages.find(s.name);
    if (it == p.stages.end()) {
      missing.push_back(s.name);
    } else {
      c.seconds = it->second.seconds;
      c.bytes_out = it->second.bytes_out;
      c.items_out = it->second.items_out;
      c.input_bytes = it->second.input_bytes;
      c.burst = it->second.burst;
    }
    for (const auto& port : s.consumers)
      for (const auto& ref : port)
        if (std::find(c.consumers.begin(), c.consumers.end(), ref.stage) == c.consumers.end())
          c.consumers.push_back(ref.stage);
    c.source = s.connected_inputs() == 0 || c.input_bytes > 0;
    c.sink = s.spec().outputs.empty();
    out.stages.push_back(std::move(c));
  }
  // The last site receives the results (sites.hpp): a sink writes its
  // files on its own site, so it is held there unless a caller fixes it
  // elsewhere (flowd plan --fix).
  out.fixed.assign(out.stages.size(), std::nullopt);
  for (std::size_t i = 0; i < out.stages.size(); ++i)
    if (out.stages[i].sink) out.fixed[i] = sites.size() - 1;
  if (!missing.empty()) {
    std::string names;
    for (const auto& n : missing) names += (names.empty() ? "'" : ", '") + n + "'";
    throw Error("the stage profile has no costs for " + names +
                " (run the workflow once with --stage-profile FILE, or add them by hand)");
  }
  check(out);
  return out;
}

}  // namespace flowd::placement

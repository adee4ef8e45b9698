#include "cli/run_placement.hpp"

#include <cstdio>

#include "placement/profile.hpp"
#include "workflow/json_reader.hpp"

namespace flowd::cli {

namespace {

// Sources and sinks run on the coordinator in every run.
bool on_coordinator(const workflow::StageNode& s) { return s.connected_inputs() == 0 || s.spec().outputs.empty(); }

placement::Placement read_plan(const workflow::Graph& g, const placement::Sites& sites, const std::string& file) {
  const Json doc = workflow::read_json_file(file, "placement");
  if (!doc.is_object() || !doc.contains("stages") || !doc["stages"].is_object())
    throw Error("placement '" + file + "': expected {\"stages\": {STAGE: SITE, ...}} (flowd plan --write)");
  placement::Placement where(g.stages.size(), sites.size());
  for (const auto& [name, site] : doc["stages"].items()) {
    const workflow::StageNode* s = g.find(name);
    if (!s) throw Error("placement '" + file + "': /stages/" + name + ": the workflow has no stage '" + name + "'");
    if (!site.is_string() || sites.find(site.get<std::string>()) == sites.size())
      throw Error("placement '" + file + "': /stages/" + name + ": expected one of the sites' names, got " + site.dump());
    where[s->index] = sites.find(site.get<std::string>());
  }
  for (const auto& s : g.stages)
    if (where[s.index] == sites.size())
      throw Error("placement '" + file + "': no site for stage '" + s.name + "'");
  return where;
}

}  // namespace

AppliedPlacement apply_placement(workflow::Graph& g, const PlacementOptions& o, Logger& log) {
  if (o.sites.empty()) throw Error("--placement needs --sites FILE: the chain of sites to place the stages on");
  AppliedPlacement out;
  out.sites = placement::load_sites(o.sites);
  const std::size_t home = out.sites.coordinator;
  std::optional<placement::Problem> problem;
  if (!o.profile.empty()) {
    const placement::Profile profile = placement::load_profile(o.profile);
    problem = placement::problem_of(g, profile, out.sites, std::max<std::uint64_t>(profile.source_items, 1));
    problem->fixed.assign(g.stages.size(), std::nullopt);
    for (const auto& s : g.stages)
      if (on_coordinator(s)) problem->fixed[s.index] = home;
  }
  if (o.placement == "auto") {
    if (!problem) throw Error("--placement auto needs --profile FILE (flowd run --stage-profile FILE)");
    const placement::Plan plan = placement::plan(*problem);
    out.where = plan.where;
  } else {
    out.where = read_plan(g, out.sites, o.placement);
    for (const auto& s : g.stages)
      if (on_coordinator(s) && out.where[s.index] != home)
        throw Error("placement '" + o.placement + "': stage '" + s.name + "' is a " +
                    (s.connected_inputs() == 0 ? "source" : "sink") + ", which runs on the coordinator at site '" +
                    out.sites.sites[home].name + "', not at '" + out.sites.sites[out.where[s.index]].name +
                    "' (moving sources and sinks is not built yet; flowd plan --write writes a placement that "
                    "keeps them there)");
  }
  if (problem) out.predicted = placement::predict(*problem, out.where);
  std::string summary;
  for (auto& s : g.stages) {
    const std::string& site = out.sites.sites[out.where[s.index]].name;
    summary += (summary.empty() ? "" : ", ") + s.name + "@" + site;
    if (on_coordinator(s)) continue;
    const workflow::StageLabels& had = s.labels;
    if (!had.all.empty() || !had.any.empty() || !had.prefer.empty())
      log.warn("stage '" + s.name + "': its labels are replaced by the placement's site '" + site + "'");
    s.labels = workflow::StageLabels{};
    s.labels.all = {out.sites.sites[out.where[s.index]].label};
  }
  std::string predicted;
  if (out.predicted) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "; predicted %.2f s, bottleneck ", out.predicted->total);
    predicted = buf + out.predicted->bottleneck_name;
  }
  log.info("placement (" + std::string(o.placement == "auto" ? "planned" : o.placement) + "): " + summary + predicted);
  return out;
}

}  // namespace flowd::cli

#include "cli/run_placement.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "placement/profile.hpp"
#include "workflow/json_reader.hpp"

namespace flowd::cli {

namespace {

placement::Placement read_plan(const workflow::Graph& g, const placement::Sites& sites, const std::string& file) {
  const Json doc = workflow::read_json_file(file, "placement");
  if (!doc.is_object() || !doc.contains("stages") || !doc["stages"].is_object())
    throw Error("placement '" + file + "': expected {\"stages\": {STAGE: SITE, ...}} (flowd plan --write)");
  placement::Placement where(g.stages.size(), sites.size());
  for (const auto& [name, site] : doc["stages"].items()) {
    const workflow::StageNode* s = g.find(name);
    if (!s) throw Error("placement '" + file + "': /stages/" + name + ": the workflow has no stage '" + name + "'");
    if (!site.is_string() || sites.find(site.get<std::string>()) == sites.size())
      throw Error("placement '" + file + "': /stages/" + name + ": expected one of the sites' names, got " +
                  site.dump());
    where[s->index] = sites.find(site.get<std::string>());
  }
  for (const auto& s : g.stages)
    if (where[s.index] == sites.size()) throw Error("placement '" + file + "': no site for stage '" + s.name + "'");
  return where;
}

}  // namespace

AppliedPlacement apply_placement(workflow::Graph& g, const PlacementOptions& o, Logger& log) {
  if (o.sites.empty()) throw Error("--placement needs --sites FILE: the chain of sites to place the stages on");
  if (!(o.replan_margin > 0))
    throw Error("--replan-margin " + std::to_string(o.replan_margin) + ": expected a fraction above 0 (0.5: half)");
  AppliedPlacement out;
  out.sites = placement::load_sites(o.sites);
  const std::size_t home = out.sites.coordinator;
  std::optional<placement::Problem> problem;
  if (!o.profile.empty()) {
    const placement::Profile profile = placement::load_profile(o.profile);
    problem = placement::problem_of(g, profile, out.sites, std::max<std::uint64_t>(profile.source_items, 1));
  }
  if (o.placement == "auto") {
    if (!problem) throw Error("--placement auto needs --profile FILE (flowd run --stage-profile FILE)");
    const placement::Plan plan = placement::plan(*problem);
    out.where = plan.where;
  } else {
    out.where = read_plan(g, out.sites, o.placement);
    // The file says where its sources and sinks run (flowd plan --fix may
    // have put a sink elsewhere than the last site): predict it as written,
    // and keep them there when re-planning.
    if (problem)
      for (std::size_t i = 0; i < problem->stages.size(); ++i)
        problem->fixed[i] = problem->stages[i].source || problem->stages[i].sink
                                ? std::optional<std::size_t>(out.where[i])
                                : std::nullopt;
  }
  if (problem) out.predicted = placement::predict(*problem, out.where);
  out.problem = problem;
  out.planned = o.placement == "auto";
  const std::string summary = describe(g, out);
  for (auto& s : g.stages) {
    const std::string& site = out.sites.sites[out.where[s.index]].name;
    // A source or sink at the coordinator's site stays in the coordinator's
    // process; elsewhere its labels send it to a node there
    // (source_on_a_node, sink_on_a_node).
    const bool source_or_sink = s.connected_inputs() == 0 || s.spec().outputs.empty();
    if (source_or_sink && out.where[s.index] == home) {
      s.labels = {};
      continue;
    }
    const workflow::StageLabels& had = s.labels;
    if (!had.all.empty() || !had.any.empty() || !had.prefer.empty())
      log.warn("stage '" + s.name + "': its labels are replaced by the placement's site '" + site + "'");
    s.labels = site_labels(out.sites.sites[out.where[s.index]]);
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

placement::Profile measured_profile(const workflow::Graph& g, const runtime::Progress& final) {
  placement::Profile p;
  p.source_items = final.source_items;
  const double n = static_cast<double>(std::max<std::uint64_t>(final.source_items, 1));
  for (std::size_t i = 0; i < final.stages.size() && i < g.stages.size(); ++i) {
    const auto& s = final.stages[i];
    placement::StageProfile sp;
    sp.seconds = s.busy_seconds / n;
    sp.bytes_out = static_cast<double>(s.bytes_out) / n;
    sp.items_out = static_cast<double>(s.items_out) / n;
    if (g.stages[i].connected_inputs() == 0) {
      sp.input_bytes = sp.bytes_out;
      // How bursty the source is: its slowest next() over its mean.
      const double mean = s.tasks_done > 0 ? s.busy_seconds / static_cast<double>(s.tasks_done) : 0;
      if (mean > 0) sp.burst = std::max(1.0, s.longest_call_seconds / mean);
    }
    p.stages[s.name] = sp;
  }
  for (std::size_t i = 0; i < g.stages.size() && i < final.stages.size(); ++i) {
    if (!g.stages[i].spec().outputs.empty()) continue;
    placement::StageProfile& sink = p.stages[final.stages[i].name];
    for (const auto& in : g.stages[i].inputs)
      if (in && in->stage < final.stages.size()) {
        const placement::StageProfile& from = p.stages[final.stages[in->stage].name];
        sink.bytes_out += from.bytes_out;
        sink.items_out += from.items_out;
      }
  }
  return p;
}

std::optional<placement::Prediction> demand_driven(const workflow::Graph& g, const PlacementOptions& o) {
  const placement::Sites sites = placement::load_sites(o.sites);
  if (o.profile.empty()) return std::nullopt;
  const placement::Profile profile = placement::load_profile(o.profile);
  return placement::predict_demand_driven(
      placement::problem_of(g, profile, sites, std::max<std::uint64_t>(profile.source_items, 1)));
}

bool moves_during_a_run(const workflow::StageNode& s) { return !s.spec().outputs.empty() && s.connected_inputs() > 0; }

std::string describe(const workflow::Graph& g, const AppliedPlacement& placed) {
  std::string out;
  for (const auto& s : g.stages)
    out += (out.empty() ? "" : ", ") + s.name + "@" + placed.sites.sites[placed.where[s.index]].name;
  return out;
}

workflow::StageLabels site_labels(const placement::Site& site) {
  workflow::StageLabels l;
  l.all = {site.label};
  return l;
}

std::optional<placement::Placement> Replanner::check(const runtime::Progress& p, std::string* why) {
  if (!placed_.planned || !placed_.problem) return std::nullopt;
  const std::uint64_t step = std::max<std::uint64_t>(4, p.expected_items.value_or(0) / 10);
  if (p.retired_items < std::max(step, next_check_) || p.source_items == 0) return std::nullopt;
  placement::Problem& problem = *placed_.problem;
  const double items = static_cast<double>(p.source_items);
  double total = 0;
  std::vector<std::optional<double>> measured(problem.stages.size());
  // A source or sink keeps its node (its operator's state, a sink's files
  // are there): it stays on its site whatever the new plan says.
  if (problem.fixed.empty()) problem.fixed.assign(problem.stages.size(), std::nullopt);
  for (std::size_t i = 0; i < problem.stages.size(); ++i)
    if (problem.stages[i].source || problem.stages[i].sink) problem.fixed[i] = placed_.where[i];
  auto movable = [&](std::size_t i) { return !problem.fixed[i]; };
  for (std::size_t i = 0; i < p.stages.size() && i < problem.stages.size(); ++i) {
    if (p.stages[i].tasks_done < 2) continue;
    const placement::Site& site = placed_.sites.sites[placed_.where[i]];
    // Per task times tasks per source item (at least one): the busy time
    // over the items emitted would count items whose tasks have not run.
    const double tasks = static_cast<double>(p.stages[i].tasks_done);
    measured[i] = p.stages[i].busy_seconds / tasks * std::max(1.0, tasks / items) * site.speed;
    if (movable(i)) total += *measured[i];
  }
  // Only the stages a plan can move decide: sources and sinks stay where
  // they are whatever they cost.
  std::string drift;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (!measured[i] || !movable(i) || *measured[i] < 0.05 * total) continue;
    const double was = problem.stages[i].seconds;
    if (std::abs(*measured[i] - was) > margin_ * std::max(was, 1e-9)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s%s measured %.4g s/item, profiled %.4g", drift.empty() ? "" : "; ",
                    problem.stages[i].name.c_str(), *measured[i], was);
      drift += buf;
    }
  }
  if (drift.empty()) return std::nullopt;
  next_check_ = p.retired_items + step;
  for (std::size_t i = 0; i < measured.size(); ++i)
    if (measured[i]) problem.stages[i].seconds = *measured[i];
  const placement::Plan plan = placement::plan(problem);
  if (why) *why = drift;
  if (plan.where == placed_.where) return std::nullopt;
  placed_.where = plan.where;
  placed_.predicted = plan.predicted;
  return plan.where;
}

}  // namespace flowd::cli

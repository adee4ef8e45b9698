// flowd plan: where each stage of a workflow should run on a chain of
// sites (engine/placement; docs/cluster.md "Placement"), beside the
// obvious defaults.
#include <algorithm>
#include <optional>
#include <cstdio>
#include <iostream>

#include <boost/program_options.hpp>

#include "cli/columns.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/run_placement.hpp"
#include "cli/workflow_options.hpp"
#include "placement/planner.hpp"
#include "placement/profile.hpp"
#include "placement/sensitivity.hpp"
#include "util/fs.hpp"

namespace po = boost::program_options;

namespace flowd::cli {

namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s >= 100 ? "%.0f s" : s >= 1 ? "%.2f s" : "%.3f s", s);
  return buf;
}

std::string per_item(const placement::Prediction& p) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g s/item", p.bottleneck);
  std::string out = p.bottleneck_name + " (" + buf + ")";
  if (p.burst_seconds > 0) out += "; a bursty source's ends: " + seconds(p.burst_seconds);
  return out;
}

// The site with the most compute (speed × nodes; the first of equals).
std::size_t compute_site(const placement::Sites& s) {
  std::size_t best = 0;
  for (std::size_t j = 1; j < s.size(); ++j)
    if (s.sites[j].speed * s.sites[j].nodes > s.sites[best].speed * s.sites[best].nodes) best = j;
  return best;
}

std::string ms_per_mb(double seconds_per_byte) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms/MB", seconds_per_byte * 1e9);
  return buf;
}

// "segment@data, features@data": the stages `other` puts elsewhere than `where`.
std::string moves(const placement::Problem& p, const placement::Placement& where, const placement::Placement& other) {
  std::string out;
  for (std::size_t i = 0; i < where.size(); ++i)
    if (other[i] != where[i]) out += (out.empty() ? "" : ", ") + p.stages[i].name + "@" + p.sites.sites[other[i]].name;
  return out;
}

// How far the plan holds for each host's cost of moving items
// (placement/sensitivity.hpp). Re-plans some 40 times a host, so only
// where one plan is quick.
void print_sensitivity(const placement::Problem& p, const placement::Plan& plan) {
  const bool any = std::any_of(p.sites.hosts.begin(), p.sites.hosts.end(),
                               [](const placement::Host& h) { return h.transfer_cpu > 0; });
  if (!any) return;
  std::cout << "\nhow far the plan holds (what moving items costs a host is the model's least certain term):\n";
  if (plan.tried > 100'000) {
    std::cout << "  not computed: one plan tried " << plan.tried
              << (plan.method == "exhaustive" ? " placements\n" : " candidate bottlenecks\n");
    return;
  }
  for (const auto& s : placement::transfer_sensitivity(p, plan)) {
    const placement::Host& h = p.sites.hosts[s.host];
    char share[160];
    std::snprintf(share, sizeof share, "%.3g MB an item, %.3g s of its %.4g s/item", plan.predicted.host_moved_bytes[s.host] / 1e6,
                  plan.predicted.host_moved_bytes[s.host] * h.transfer_cpu / h.cores, plan.predicted.host_seconds[s.host]);
    std::cout << "  host " << h.name << " (" << ms_per_mb(h.transfer_cpu) << " at each end; " << share << "):\n"
              << "    the same plan from " << ms_per_mb(s.low) << (s.low_is_scan_end ? " (as far as tried)" : "")
              << " to " << ms_per_mb(s.high) << (s.high_is_scan_end ? " (as far as tried)" : "") << "\n";
    if (s.above)
      std::cout << "    above " << ms_per_mb(s.high) << ": " << moves(p, plan.where, s.above->where) << " ("
                << seconds(s.above->predicted.total) << ")\n";
    if (s.below)
      std::cout << "    below " << ms_per_mb(s.low) << ": " << moves(p, plan.where, s.below->where) << " ("
                << seconds(s.below->predicted.total) << ")\n";
  }
}

}  // namespace

int cmd_plan(const Args& args) {
  CommonOptions o;
  std::string sites_file, profile_file, write_file;
  std::uint64_t items = 0;
  std::vector<std::string> fix;
  po::options_description desc("Options");
  desc.add_options()("workflow", po::value(&o.workflow)->required(), "workflow JSON file")
      ("sites", po::value(&sites_file)->required(), "the chain of sites (docs/cluster.md \"Sites\")")
      ("profile", po::value(&profile_file)->required(),
       "each stage's cost per source item (flowd run --stage-profile FILE, or by hand)")
      ("items", po::value(&items), "source items to plan for (default: the profile's)")
      ("fix", po::value(&fix)->composing(),
       "STAGE=SITE: a stage that must run on a site (a source next to its data; a sink, which is otherwise at the "
       "last site, where its files should be written); repeatable")
      ("write", po::value(&write_file),
       "write the placement, which flowd run --placement applies, to FILE");
  add_common(desc, o);
  po::variables_map vm;
  if (auto rc = parse_command(args, desc, "usage: flowd plan WORKFLOW.json --sites SITES.json --profile PROFILE.json "
                                          "[--items N] [options]",
                              "workflow", vm))
    return *rc;
  Logger log = make_logger(o);
  try {
    const auto g = load_graph(o, log);
    const placement::Sites sites = placement::load_sites(sites_file);
    const placement::Profile profile = placement::load_profile(profile_file);
    if (items == 0) items = std::max<std::uint64_t>(profile.source_items, 1);
    placement::Problem problem = placement::problem_of(g, profile, sites, items);
    for (const auto& f : fix) {
      const auto eq = f.find('=');
      const workflow::StageNode* s = eq == std::string::npos ? nullptr : g.find(f.substr(0, eq));
      if (!s) throw Error("--fix " + f + ": expected STAGE=SITE with a stage of the workflow");
      const std::size_t site = sites.find(f.substr(eq + 1));
      if (site == sites.size()) throw Error("--fix " + f + ": no site '" + f.substr(eq + 1) + "' in " + sites_file);
      problem.fixed[s->index] = site;
    }
    const placement::Plan plan = placement::plan(problem);

    std::string chain;
    for (const auto& s : sites.sites) chain += (chain.empty() ? "" : " -> ") + s.name;
    std::cout << o.workflow << " on " << chain << ", " << items << " items (profile " << profile_file << ")\n"
              << "search: " << plan.method << " ("
              << plan.tried << (plan.method == "exhaustive" ? " placements" : " candidate bottlenecks") << ")\n\n";
    Columns stages;
    stages.row({"stage", "site", "s/item", "out/item"});
    const auto groups = placement::fused_groups(problem, plan.where);
    for (std::size_t i = 0; i < problem.stages.size(); ++i) {
      const auto& st = problem.stages[i];
      char cost[32], out[32];
      std::snprintf(cost, sizeof cost, "%.4g", st.seconds);
      std::snprintf(out, sizeof out, "%.3g MB", st.bytes_out / 1e6);
      stages.row({st.name, sites.sites[plan.where[i]].name, cost, out});
    }
    std::cout << stages.str("  ");
    std::cout << "fused (run back to back on one node):";
    for (const auto& grp : groups) {
      if (grp.size() < 2) continue;
      std::cout << " [";
      for (std::size_t k = 0; k < grp.size(); ++k) std::cout << (k ? " " : "") << problem.stages[grp[k]].name;
      std::cout << "]";
    }
    std::cout << (std::all_of(groups.begin(), groups.end(), [](const auto& g2) { return g2.size() < 2; }) ? " none\n\n"
                                                                                                          : "\n\n");

    Columns table;
    table.row({"placement", "predicted", "bottleneck"});
    table.row({"planned", seconds(plan.predicted.total), per_item(plan.predicted)});
    // The defaults, whatever --fix holds.
    placement::Problem unfixed = problem;
    unfixed.fixed.clear();
    auto everything_at = [&](std::size_t j) {
      return placement::predict(unfixed, placement::Placement(problem.stages.size(), j));
    };
    const auto at_data = everything_at(0);
    const auto at_compute = everything_at(compute_site(sites));
    const auto demand = placement::predict_demand_driven(unfixed);
    table.row({"everything at " + sites.sites[0].name + " (the data site)", seconds(at_data.total), per_item(at_data)});
    table.row({"everything at " + sites.sites[compute_site(sites)].name + " (the most compute)",
               seconds(at_compute.total), per_item(at_compute)});
    table.row({"demand-driven (today's default, modelled)", seconds(demand.total), per_item(demand)});
    std::cout << table.str("  ");
    print_sensitivity(problem, plan);

    if (!write_file.empty()) {
      Json stages_json = Json::object();
      for (std::size_t i = 0; i < problem.stages.size(); ++i)
        stages_json[problem.stages[i].name] = sites.sites[plan.where[i]].name;
      const Json doc = {{"version", 1},
                        {"sites", sites_file},
                        {"items", items},
                        {"method", plan.method},
                        {"predicted_seconds", plan.predicted.total},
                        {"bottleneck", plan.predicted.bottleneck_name},
                        {"stages", stages_json}};
      write_file_atomic(write_file, doc.dump(2) + "\n");
      log.info("placement written to " + write_file);
    }
    return exit_ok;
  } catch (const std::exception& e) {
    log.error(e.what());
    return exit_invalid;
  }
}

}  // namespace flowd::cli

#pragma once
// What the planner weighs (seed 003's cost model, for a stream; docs/
// cluster.md "Placement"): per source item, each stage's compute time on a
// node of speed 1 and the bytes and items it hands its consumers; the chain
// of sites (sites.hpp); and how many source items flow.
//
// A placement gives every stage a site. Per source item, site j takes
//   T(C_j) = max(Σ over its stages of seconds / (speed_j · nodes_j),
//                Σ over its sources of seconds / speed_j)
// (a source runs on one node, one next() at a time, however many the site has)
// and each direction of link j (between sites j and j + 1)
//   T(L_j) = Σ over what crosses it of bytes / bandwidth_j + items · overhead_j,
// where a stage's output crosses the links from its site to each consumer's
// on another site, once per such consumer (each pulls its own copy from
// where it was made: flowd relays nothing; only what downstream stages
// consume crosses), the input data cross from the first site to each
// source's, and a sink's results from its site to the last.
// Consumers may sit before their producer in the chain (a coordinator at
// the last site sends tiles back to the cluster): the paper's chain is the
// case where every item flows forward. Sites on one host (sites.hpp) also
// share its cores, and pay the CPU of moving items, between sites and
// between the processes of one site (the coordinator's and a worker
// node's; two worker nodes, for the (n − 1) / n of a site of n nodes'
// tasks whose inputs another of its nodes made): per item
//   T(H) = (Σ over its sites j, over their stages, of seconds / speed_j
//           + Σ over its sites j of the bytes j sends and receives · transfer_cpu_H) / cores_H
// (each end of a crossing pays; sites an item only passes through pay nothing).
// For N items
//   total = (N − 1) · max_k T_k + Σ_j T(C_j) + Σ_j T(L_j) + Σ latencies of the links used,
// the bottleneck k being a site, a link or a host: the stream's steady state
// plus one item's way through (the paper's formula; its DP minimised the
// second part alone). A host is a capacity, not a step of an item's way, so
// it adds to the first part only.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "placement/sites.hpp"

namespace flowd::placement {

// T(C_j) above: a site's time per item for `parallel` seconds of every
// stage on it, of which `serial` are sources'.
double site_time(const Site& s, double parallel, double serial);

struct StageCost {
  std::string name;
  double seconds = 0;    // compute per source item on a node of speed 1
  double bytes_out = 0;  // per source item: what its consumers read, or a sink's results
  double items_out = 1;  // messages per source item (items it emits)
  std::vector<std::size_t> consumers;  // stages reading its outputs (later in the order)
  bool source = false;                 // reads the input data, which sit on the first site
  double input_bytes = 0;              // per source item, read by a source
  bool sink = false;                   // its results go to the last site
  double burst = 1;                    // a source: items its slowest call makes at once (profile.hpp)
};

struct Problem {
  std::vector<StageCost> stages;  // in topological order: producers before consumers
  Sites sites;
  std::uint64_t items = 1;
  // Stages that must run on a given site (the coordinator's sources and
  // sinks, for flowd run): empty, or one entry per stage.
  std::vector<std::optional<std::size_t>> fixed;
};

using Placement = std::vector<std::size_t>;  // the site of each stage

struct Prediction {
  double total = 0;       // seconds for all items
  double bottleneck = 0;  // seconds per item at the bottleneck
  std::string bottleneck_name;  // "site cluster", "link storage -> cluster" or "host vm"
  // Per item. Links: forward (site j to j + 1) at j, backward at m − 1 + j.
  // Hosts: as in Sites::hosts.
  std::vector<double> site_seconds, link_seconds, host_seconds;
  std::vector<double> link_bytes;
  std::vector<double> host_moved_bytes;  // per item, what each host's sites send and receive (both ends)
  double burst_seconds = 0;  // of `total`: what bursty sources add at the stream's ends
};

// Throws std::invalid_argument naming the problem: a stage before one it
// consumes, a consumer index out of range, or negative costs.
void check(const Problem& p);

// Whether every stage is on a site of the chain and every fixed stage on
// its site.
bool feasible(const Problem& p, const Placement& where);

Prediction predict(const Problem& p, const Placement& where);

// Today's demand-driven placement, modelled: sources and sinks on the
// coordinator (at the sites' `coordinator`), every other stage's tasks
// spread over all sites' nodes in proportion to speed × nodes, each task's
// inputs sent from the coordinator's site to its node's and its outputs
// back; a sink's results from the coordinator's site to the last.
Prediction predict_demand_driven(const Problem& p);

// Runs of consecutive stages on one site where each reads the one before:
// fused, run back to back on one node (their items never cross a link).
std::vector<std::vector<std::size_t>> fused_groups(const Problem& p, const Placement& where);

}  // namespace flowd::placement

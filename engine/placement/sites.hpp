#pragma once
// A chain of sites (seed 003, "Coarse-grained pipelined parallelism";
// docs/cluster.md "Sites"): computing units C_1..C_m joined by links
// L_1..L_{m−1}; the first site holds the input data, the last receives the
// results. A site's nodes are the cluster's nodes labelled "site:NAME".
//
//   {"version": 1,
//    "sites": [{"name": "storage", "nodes": 1, "speed": 1.0}, ...],
//    "links": [{"from": "storage", "to": "cluster", "bandwidth_mb_s": 10,
//               "latency_ms": 5, "message_overhead_ms": 0.2}, ...],
//    "coordinator": "workstation",
//    "hosts": [{"name": "vm", "cores": 2, "sites": ["storage", "cluster"],
//               "transfer_cpu_ms_per_mb": 4.5}]}
//
// "hosts" (optional) names sites that share one machine's cores: virtual
// machines or containers on one box, or an emulation of several sites on
// one computer. Their stages then compete for those cores as well as for
// their own site's nodes, and so does moving items: each MB one of its
// sites sends or receives costs the host transfer_cpu_ms_per_mb of CPU
// (encryption, copies, the kernel's network stack; `flowd calibrate
// --transfer` measures it).
//
// Read with every problem reported at its JSON pointer, as workflows are.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "flowd/item.hpp"

namespace flowd::placement {

struct Site {
  std::string name;
  std::string label;   // the node label of its nodes: "site:NAME"
  int nodes = 1;       // nodes that run its stages' tasks side by side
  double speed = 1.0;  // one node's speed relative to the profile's (2: twice as fast)
};

// Sites that share one machine: their stages' work per item, at their
// sites' speeds, is spread over `cores`.
struct Host {
  std::string name;
  double cores = 1;
  std::vector<std::size_t> sites;  // indices into Sites::sites
  // CPU seconds per byte one of its sites sends or receives over a link
  // (each end of a crossing pays its own).
  double transfer_cpu = 0;
};

// The link between sites[i] and sites[i + 1].
struct Link {
  double bandwidth = 0;         // bytes per second
  double latency = 0;           // seconds, once per link a stream crosses
  double message_overhead = 0;  // seconds per item sent over it
};

struct Sites {
  std::vector<Site> sites;  // in chain order: the data site first, the client site last
  std::vector<Link> links;  // links[i] joins sites[i] and sites[i + 1]
  // Where `flowd run` (the coordinator, which runs the sinks) is:
  // "coordinator": NAME, default the last site.
  std::size_t coordinator = 0;
  std::vector<Host> hosts;  // sites sharing a machine; most sites share none
  std::size_t size() const noexcept { return sites.size(); }
  // The index of the site named `name`, or size().
  std::size_t find(std::string_view name) const noexcept;
};

// Throws workflow::ValidationError (every problem at its JSON pointer,
// `file` naming the source) for a malformed description.
Sites parse_sites(const Json& doc, const std::string& file);
Sites load_sites(const std::filesystem::path& file);

}  // namespace flowd::placement

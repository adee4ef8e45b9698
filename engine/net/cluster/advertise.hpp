#pragma once
// The address the coordinator puts in the rendezvous file.
//
// A coordinator bound to a wildcard (tcp://0.0.0.0:P, tcp://*:P) or to an
// interface name (tcp://eth0:P) has no address a worker could connect to:
// ZMQ_LAST_ENDPOINT says "0.0.0.0". It must advertise something reachable
// from the other nodes instead. Choice, first that applies:
//   1. FLOWD_ADVERTISE=HOST (a name or address): always wins, for clusters
//      where the node name resolves to the wrong network (e.g. the
//      management Ethernet rather than InfiniBand's IPoIB).
//   2. An endpoint on a loopback address stays as it is: only workers on the
//      same machine can use it, which the caller must check against the
//      launcher's node list.
//   3. Bound to an interface name: that interface's IPv4 address.
//   4. Bound to a wildcard: SLURMD_NODENAME under Slurm (the name Slurm
//      itself uses to reach the node), else the first interface that is up,
//      not loopback and not link-local (169.254/16), in getifaddrs order.
//   5. Bound to a concrete address or host name: unchanged.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/cluster/launcher.hpp"

namespace flowd::net::cluster {

struct Interface {
  std::string name;  // "eth0"
  std::string ipv4;  // dotted quad
  bool up = false;
  bool loopback = false;
};

// This machine's IPv4 interface addresses (getifaddrs), in the kernel's
// order. Throws flowd::Error when getifaddrs fails.
std::vector<Interface> ipv4_interfaces();

struct AdvertiseContext {
  std::optional<std::string> override_host;  // FLOWD_ADVERTISE
  std::optional<std::string> slurm_node;     // SLURMD_NODENAME
  std::vector<Interface> interfaces;
};

// Reads FLOWD_ADVERTISE and SLURMD_NODENAME from env, interfaces from this
// machine.
AdvertiseContext advertise_context(const Env& env);

// `bound` is the endpoint the socket really got (ZMQ_LAST_ENDPOINT, so the
// port is concrete). Non-TCP endpoints are returned unchanged. Throws
// flowd::Error when no reachable address can be found, saying to set
// FLOWD_ADVERTISE.
std::string advertised_endpoint(std::string_view bound, const AdvertiseContext& ctx);

// What a node tells the others to connect to for a socket bound at `bound`:
// `host` when given (--advertise), else what advertised_endpoint() finds
// from this process's environment and interfaces.
std::string advertise_as(std::string_view bound, const std::string& host);

}  // namespace flowd::net::cluster

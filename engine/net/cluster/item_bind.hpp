#pragma once
// Where a worker node serves its items when `flowd worker` is given no
// --bind (docs/cluster.md "Starting workers by hand").
//
// Other nodes pull items from that address, so it must be one they reach.
// Loopback works only when every node is on this machine: a worker whose
// coordinator is on another host binds the address this host reaches the
// coordinator from (the kernel's route to it), which is the network the
// cluster shares. Without CURVE keys the item server stays on loopback:
// the endpoint policy (security/policy.hpp) refuses plain TCP elsewhere.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/cluster/advertise.hpp"

namespace flowd::net::cluster {

// This host's IPv4 address on the route to `host` (a name or dotted quad),
// found by connecting a UDP socket, which sends nothing; nullopt when the
// host does not resolve or no route leads there.
std::optional<std::string> source_address_towards(const std::string& host);

// The item server's bind for a worker whose coordinator is at
// `coordinator` (tcp://HOST:PORT): tcp://127.0.0.1:* for a loopback
// (or ipc://) coordinator or without keys, else tcp://ADDR:* with ADDR as above.
// Throws flowd::Error naming the coordinator when no route is found.
std::string default_item_bind(std::string_view coordinator, bool keys);

// Whether `address` (a dotted quad, as ZeroMQ reports a peer) is loopback
// or one of `interfaces`: a peer on this machine.
bool on_this_machine(std::string_view address, const std::vector<Interface>& interfaces);

}  // namespace flowd::net::cluster

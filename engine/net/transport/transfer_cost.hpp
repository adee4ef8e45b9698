#pragma once
// What moving items costs a machine's CPUs (docs/cluster.md "Sites", a
// host's "transfer_cpu_ms_per_mb"; `flowd calibrate --transfer`): an item
// server and a client in this process fetch one item again and again over
// loopback TCP, with CURVE as between sites, and the process's CPU time
// (every thread, user and kernel) is divided by the bytes moved. Both ends
// run here, so each end's share is about half. A real network adds the
// kernel's work for a NIC or a shaping queue, which loopback does not have:
// the figure is a floor for a real link.
#include <cstdint>

namespace flowd::net::transport {

struct TransferCost {
  double cpu_seconds_per_byte = 0;  // both ends together
  double bytes_per_second = 0;      // wall-clock throughput of the fetches
  bool curve = false;  // encrypted (libzmq with CURVE), as between sites
};

// Throws flowd::Error when the server cannot bind or a fetch fails.
TransferCost measure_transfer_cost(std::uint64_t item_bytes, int fetches);

}  // namespace flowd::net::transport

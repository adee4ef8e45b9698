#pragma once
// The command-line options of cluster runs, shared by `flowd run` (the
// coordinator) and `flowd worker`, and how they become keys and labels.
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "flowd/item.hpp"
#include "net/security/keys.hpp"

namespace flowd::cli {

struct ClusterOptions {
  // Coordinator.
  int workers = 0;        // --workers: local worker processes
  int worker_cpus = 0;    // --worker-cpus: CPU threads per local worker (0: cores / workers)
  int worker_lookahead = -1;  // --worker-lookahead: passed to local workers as --lookahead
  int worker_pull_ahead = -1;  // --worker-pull-ahead: passed to local workers as --pull-ahead (-1: theirs)
  std::string worker_store;   // --worker-store: passed to local workers as --store
  std::string listen;     // --listen: where remote workers connect
  int expect = 0;         // --expect: remote workers to wait for
  std::string key;        // --key: the coordinator's secret key file
  std::string authorised_keys;  // --authorised-keys
  std::string steal = "on";
  int heartbeat_ms = 500;
  int missed_heartbeats = 4;
  int wait_seconds = 120;  // for workers to join
  // Worker (and launcher ranks).
  std::string worker_key;       // --worker-key: a worker's secret key file
  std::string coordinator_key;  // --coordinator-key: the coordinator's public key file
};

void add_coordinator_options(boost::program_options::options_description& d, ClusterOptions& o);
void add_worker_key_options(boost::program_options::options_description& d, ClusterOptions& o);

// The worker's CURVE credentials: FLOWD_WORKER_CURVE (local workers), else
// --worker-key with --coordinator-key (or `server_key` from a rendezvous
// file); nullopt when none is given. Throws flowd::Error naming the file.
std::optional<net::security::ClientCredentials> worker_credentials(const ClusterOptions& o,
                                                                   const std::string& server_key = {});

// --label NAME (repeatable) and --rank N as a node's labels.
Json node_labels(const std::vector<std::string>& labels, long rank);

}  // namespace flowd::cli

#include "cli/cluster_options.hpp"

#include "flowd/error.hpp"

namespace po = boost::program_options;
namespace sec = flowd::net::security;

namespace flowd::cli {

void add_coordinator_options(po::options_description& d, ClusterOptions& o) {
  d.add_options()
      ("workers", po::value(&o.workers), "run on N local worker processes (keys generated in memory, loopback only)")
      ("worker-cpus", po::value(&o.worker_cpus), "CPU threads per local worker process (default: cores / workers, at least 1)")
      ("worker-lookahead", po::value(&o.worker_lookahead), "tasks each local worker asks for beyond its threads (default: = threads)")
      ("worker-pull-ahead", po::value(&o.worker_pull_ahead), "of those, tasks whose inputs each local worker pulls while its threads are busy (default 1)")
      ("worker-store", po::value(&o.worker_store), "local workers keep their items in HDF5 files in DIR instead of memory")
      ("listen", po::value(&o.listen), "coordinate workers that connect to ADDR (tcp://IP:PORT; non-loopback needs --key)")
      ("expect", po::value(&o.expect), "with --listen: wait for N workers before starting")
      ("key", po::value(&o.key), "the coordinator's CURVE secret key file (flowd keygen)")
      ("authorised-keys", po::value(&o.authorised_keys), "public keys of the workers allowed to join, one per line")
      ("steal", po::value(&o.steal), "on|off: idle workers steal queued tasks from busy ones (default on)")
      ("heartbeat-ms", po::value(&o.heartbeat_ms), "heartbeat period in ms (default 500)")
      ("missed-heartbeats", po::value(&o.missed_heartbeats), "a node is lost after N silent periods (default 4)")
      ("wait-workers", po::value(&o.wait_seconds), "seconds to wait for the workers to join (default 120)");
}

void add_worker_key_options(po::options_description& d, ClusterOptions& o) {
  d.add_options()
      ("worker-key", po::value(&o.worker_key), "a worker's CURVE secret key file")
      ("coordinator-key", po::value(&o.coordinator_key), "the coordinator's public key file");
}

std::optional<sec::ClientCredentials> worker_credentials(const ClusterOptions& o, const std::string& server_key) {
  if (auto env = sec::take_client_credentials_from_env()) return env;
  if (o.worker_key.empty()) {
    if (!o.coordinator_key.empty()) throw Error("--coordinator-key needs --worker-key (this worker's own key pair)");
    return std::nullopt;
  }
  sec::ClientCredentials c;
  c.own = sec::load_secret_key(o.worker_key).keys;
  if (!o.coordinator_key.empty()) c.server_public_key = sec::load_public_key(o.coordinator_key).public_key;
  else if (!server_key.empty()) c.server_public_key = server_key;
  else throw Error("--worker-key needs --coordinator-key (the coordinator's public key file)");
  return c;
}

Json node_labels(const std::vector<std::string>& labels, long rank) {
  Json names = Json::array();
  for (const auto& l : labels) names.push_back(l);
  if (rank == 0) return names;
  return Json{{"names", names}, {"rank", rank}};
}

}  // namespace flowd::cli

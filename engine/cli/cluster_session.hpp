#pragma once
// The coordinator's side of a cluster run around a runtime::Run: the
// Coordinator (sockets, assignment), its keys, the local worker processes of
// --workers, the rendezvous file of a launcher's rank 0. A plain run has
// none of it.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cluster_options.hpp"
#include "cli/local_workers.hpp"
#include "net/cluster/launcher.hpp"
#include "net/node/coordinator.hpp"
#include "runtime/run_types.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::cli {

struct SessionContext {
  std::string workflow_file;
  std::vector<std::string> plugin_path;  // -P, handed to workers
  bool quiet = false, verbose = false;
  std::optional<net::cluster::LaunchInfo> launch;  // rank 0 of srun/mpirun
};

class ClusterSession {
public:
  // nullptr when the options ask for no cluster. Throws flowd::Error (bad
  // keys, endpoints refused, workers that never joined).
  static std::unique_ptr<ClusterSession> start(const ClusterOptions& o, const SessionContext& ctx,
                                               const workflow::Graph& graph, const runtime::RunOptions& ro, Logger& log);
  ~ClusterSession();

  net::node::Coordinator& coordinator() noexcept { return *coordinator_; }
  // Source items alive at once when --max-in-flight is not given: enough
  // for every worker's slots and lookahead, not only this process's threads.
  int default_in_flight(int local_workers) const;
  // Says bye to the workers and waits for local ones to leave.
  void finish();

private:
  ClusterSession() = default;
  std::unique_ptr<net::node::Coordinator> coordinator_;
  std::unique_ptr<LocalWorkers> local_;
};

}  // namespace flowd::cli

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
#include "cli/exit_codes.hpp"
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

// Why a session could not start, with the exit code it means
// (docs/cli.md): options that do not go together are a bad command line
// (1), unusable key files are refused input (2), and what goes wrong once
// the coordinator runs (an address in use, workers that never join within
// --wait-workers) is a failed run (3).
class SessionError : public Error {
public:
  SessionError(ExitCode code, const std::string& message) : Error(message), code_(code) {}
  ExitCode code() const noexcept { return code_; }

private:
  ExitCode code_;
};

class ClusterSession {
public:
  // nullptr when the options ask for no cluster. Throws SessionError.
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
  // start() once the options are known to go together.
  static std::unique_ptr<ClusterSession> start_checked(const ClusterOptions& o, const SessionContext& ctx,
                                                       const workflow::Graph& graph, const runtime::RunOptions& ro,
                                                       Logger& log);
  std::unique_ptr<net::node::Coordinator> coordinator_;
  std::unique_ptr<LocalWorkers> local_;
};

}  // namespace flowd::cli

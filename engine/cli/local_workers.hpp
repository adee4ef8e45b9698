#pragma once
// `flowd run --workers N`: N worker processes of this same binary on this
// machine, each given its CURVE credentials through the environment (never
// the command line, which every user sees in ps).
#include <sys/types.h>

#include <string>
#include <vector>

#include "net/security/keys.hpp"
#include "util/log.hpp"

namespace flowd::cli {

class LocalWorkers {
public:
  // Starts `flowd worker --connect endpoint <args...>` once per credential;
  // throws flowd::Error when a process cannot be started.
  LocalWorkers(const std::string& endpoint, const std::vector<std::string>& args,
               const std::vector<net::security::ClientCredentials>& credentials, Logger& log);
  // Waits for the workers to leave (they do once the coordinator says bye),
  // killing those still there after a grace period; a worker that ended
  // otherwise than with exit 0 is reported.
  ~LocalWorkers();
  LocalWorkers(const LocalWorkers&) = delete;
  LocalWorkers& operator=(const LocalWorkers&) = delete;

  const std::vector<pid_t>& pids() const noexcept { return pids_; }

private:
  std::vector<pid_t> pids_;
  Logger& log_;
};

}  // namespace flowd::cli

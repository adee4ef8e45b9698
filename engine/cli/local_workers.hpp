#pragma once
// `flowd run --workers N`: N worker processes of this same binary on this
// machine, each given its CURVE credentials through the environment (never
// the command line, which every user sees in ps).
//
// While the run goes on, a watcher thread notices a worker that dies (a
// crash in an operator, the OOM killer, kill -9), tells the coordinator at
// once with how it ended and which item its crash report named, and starts a
// replacement with the same credentials, up to max_replacements per worker,
// so one bad item does not take every worker with it.
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "net/node/coordinator.hpp"
#include "net/security/keys.hpp"
#include "util/log.hpp"

namespace flowd::cli {

// What the watcher tells the coordinator.
struct LocalWorkerHooks {
  // +1 before a replacement starts; -1 when one ended before it registered.
  std::function<void(int)> expect_more;
  // Whether the worker process of that name has registered.
  std::function<bool(const std::string&)> registered;
  // A worker process ended while the run went on.
  std::function<void(const std::string& name, net::node::WorkerLoss)> ended;
};

class LocalWorkers {
public:
  static constexpr int max_replacements = 3;  // per worker, per run

  // Starts `flowd worker --connect endpoint <args...>` once per credential;
  // throws flowd::Error when a process cannot be started. A replacement that
  // has not registered within `join_timeout` is killed.
  LocalWorkers(const std::string& endpoint, const std::vector<std::string>& args,
               const std::vector<net::security::ClientCredentials>& credentials, Logger& log,
               LocalWorkerHooks hooks = {}, std::chrono::seconds join_timeout = std::chrono::seconds(120));
  // Stops replacing, then waits for the workers to leave (they do once the
  // coordinator says bye), killing those still there after a grace period; a
  // worker that ended otherwise than with exit 0 is reported.
  ~LocalWorkers();
  LocalWorkers(const LocalWorkers&) = delete;
  LocalWorkers& operator=(const LocalWorkers&) = delete;

  // The run is over: workers that end from now on are not replaced (call
  // before the coordinator says bye).
  void stop_replacing();

private:
  struct Worker {
    net::security::ClientCredentials credentials;
    pid_t pid = -1;
    int note_fd = -1;  // read end of the pipe its crash report writes to
    int replacements = 0;
    bool joining = false;  // a replacement that has not registered yet
    std::chrono::steady_clock::time_point join_deadline{};
  };

  void spawn(Worker& w);
  void watch();
  void ended(Worker& w, int status);

  std::string endpoint_;
  std::vector<std::string> args_;
  Logger& log_;
  LocalWorkerHooks hooks_;
  std::chrono::seconds join_timeout_;
  std::mutex m_;  // workers_, between the watcher and the destructor
  std::vector<Worker> workers_;
  std::atomic<bool> stop_{false};
  std::thread watcher_;  // last: started once everything above exists
};

}  // namespace flowd::cli

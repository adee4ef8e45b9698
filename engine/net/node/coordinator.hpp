#pragma once
// The coordinator of a cluster run (docs/cluster.md "Runtime protocol"): the
// RemoteExecutor through which a runtime::Run sends its map tasks to worker
// nodes. It binds three sockets under one CURVE server key (or none, on
// loopback): membership (hello/welcome/heartbeats), the task channel
// (registration, request_work, assign_task, task_done, steals, releases)
// and an item server for the values this process made (holder 0).
//
// Threads: the task channel's socket belongs to one thread that makes every
// placement decision; results reach the run through a dispatcher thread, so
// done() never runs under a lock of ours and may submit, fetch or drain.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowd/item.hpp"
#include "flowd/operator.hpp"
#include "net/node/protocol.hpp"
#include "net/node/steal_policy.hpp"
#include "net/security/curve.hpp"
#include "runtime/remote.hpp"
#include "trace/recorder.hpp"
#include "workflow/graph.hpp"

namespace flowd::net::node {

struct CoordinatorCurve {
  security::KeyPair server;             // all three sockets
  security::AuthorisedKeys authorised;  // the worker keys
};

struct CoordinatorOptions {
  // Host for the task channel and item server binds; each gets its own
  // ephemeral port whatever port this names.
  std::string bind_host_endpoint = "tcp://127.0.0.1:*";
  // The membership bind: what workers connect to (--listen); port may be fixed.
  std::string membership_endpoint = "tcp://127.0.0.1:*";
  // The host put in the endpoints sent to workers (--advertise). Empty: a
  // wildcard bind is advertised as cluster::advertise_as finds (FLOWD_ADVERTISE,
  // the Slurm node, an interface); any other bind as bound.
  std::string advertise_host{};
  std::optional<CoordinatorCurve> curve{};
  std::chrono::milliseconds heartbeat_period{500};
  std::uint32_t missed_heartbeats = 4;
  bool steal = true;
  // What a steal is taken to cost (steal_policy.hpp): it is sent only when
  // the tasks it moves would wait longer where they are.
  StealCosts steal_costs{};
  // Prefer giving a node tasks whose inputs it holds (--locality).
  bool locality = true;
  std::uint64_t steal_seed = 1;
  std::chrono::milliseconds fetch_timeout{std::chrono::minutes(2)};
  // A task whose node failed retryably (or was lost) is run again at most
  // this many times before it fails the run.
  std::uint32_t max_attempts = 8;
  std::function<void(LogLevel, std::string_view)> log{};
  // Where steals are counted as they happen (counter "tasks stolen"); may
  // be null. Must outlive the Coordinator.
  trace::Recorder* recorder = nullptr;
};

// How a worker was lost, for deciding which of its tasks to blame.
struct WorkerLoss {
  std::string reason;    // "was killed by signal 11 (SIGSEGV)", "lost (no message for ...)"
  bool crashed = false;  // not an orderly leave: the tasks it was running are suspects
  // The stage and item key its crash report named, when its parent read it.
  std::optional<std::pair<std::string, std::string>> running{};
};

struct CoordinatorStats {
  std::uint64_t assigned = 0, done = 0, failed = 0, reassigned = 0, recomputed = 0, fetched_by_coordinator = 0;
  // Steals: requests sent, answered with nothing (the victim had started
  // them meanwhile), and tasks moved by them.
  std::uint64_t steal_requests = 0, steal_replies_empty = 0, stolen = 0;
  std::uint64_t bytes_fetched = 0;
  std::uint64_t rejected = 0;  // malformed or unexpected task-channel messages
  std::size_t workers = 0;     // live, registered
  std::size_t workers_lost = 0;  // registered, then lost or left before the end
};

// wait_for_workers was interrupted: the run never started.
class WaitInterrupted : public Error {
public:
  using Error::Error;
};

class Coordinator final : public runtime::RemoteExecutor {
public:
  // Binds the item server, the task channel and membership (throws
  // flowd::Error when an endpoint is refused or in use). `config` is the
  // RunConfig template; the endpoints and keys are filled in here.
  Coordinator(const workflow::Graph& graph, RunConfig config, CoordinatorOptions options);
  // finish(), then joins every thread.
  ~Coordinator() override;
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // The membership endpoint with the real port: what `flowd worker --connect` uses.
  const std::string& endpoint() const;
  // The welcome config as served (endpoints and keys filled in).
  const RunConfig& config() const noexcept { return config_; }

  // Blocks until n workers have registered on the task channel; throws
  // flowd::Error after `timeout`, naming how many joined and who. Also tells
  // the coordinator how many workers to expect before it declares a stage
  // impossible to run. When `interrupt` turns true (SIGINT/SIGTERM) the
  // wait ends within 100 ms with WaitInterrupted.
  void wait_for_workers(std::size_t n, std::chrono::milliseconds timeout, const std::atomic<bool>* interrupt = nullptr);
  std::vector<std::string> worker_names() const;
  // Whether a worker of that name ever registered (it may be gone since).
  bool has_registered(const std::string& name) const;
  // `delta` more (or fewer) registrations to wait for before a stage with no
  // live worker is failed: a replacement for a dead local worker is coming.
  void expect_more_workers(int delta);
  // The worker process named `name` ended (its parent saw it): its tasks go
  // elsewhere now, without waiting for missed heartbeats, and those it may
  // have died of count a loss (see poison_losses). Any thread.
  void worker_process_ended(const std::string& name, WorkerLoss loss);

  // Map stages, until finish().
  bool takes(std::size_t stage) const override;
  bool takes_source(std::size_t stage) const override;
  bool takes_sink(std::size_t stage) const override;
  std::vector<runtime::RemoteNode> nodes_for(std::size_t stage) const override;
  void submit(runtime::RemoteTask task) override;
  void drain() override;
  void resume() override;
  // Bye to every worker on both channels and stop serving (idempotent). A
  // RemoteItem fetched after this throws; released, it is a no-op.
  void finish();

  // Where a stage's tasks may run from now on (a re-plan of the placement,
  // cli/run_placement.cpp): tasks not yet assigned follow the new labels.
  // Any thread.
  void set_stage_labels(std::size_t stage, workflow::StageLabels labels);

  CoordinatorStats stats() const;
  // [{"id", "name", "tasks", "busy_seconds", "live"}] per registered worker.
  Json worker_report() const;

  // Defined in the private coordinator_state.hpp.
  struct Core;  // the state shared with the socket thread and the items
  struct Loop;  // the sockets and the threads serving them

private:
  RunConfig config_;
  std::shared_ptr<Core> core_;
  std::unique_ptr<Loop> loop_;
  std::string endpoint_;
  std::mutex finish_m_;
  bool finished_ = false;
};

}  // namespace flowd::net::node

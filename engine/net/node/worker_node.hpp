#pragma once
// A cluster run's worker node (`flowd worker`; docs/cluster.md "Runtime
// protocol"): joins the coordinator, opens the map stages it can, serves
// the items it makes from an item server of its own, and runs the tasks
// the coordinator assigns on a runtime::TaskHost.
//
// Threads:
//   - run()'s thread, the *socket thread*, owns the task-channel DEALER and
//     the WorkerQueue: it reads assign_task / steal_request / release_items
//     / bye, starts tasks, sends request_work / task_done / task_failed /
//     steal_reply, and watches the membership client's events.
//   - `slots` fetcher threads, each with its own transport::ItemClient
//     (a client is single-threaded), pull a started task's inputs and
//     submit it to the TaskHost. At most `slots` tasks are started at a
//     time, so a started task never waits for a fetcher.
//   - the TaskHost's workers run operators; a task's completion callback
//     stores its outputs in the node's item store (thread-safe) and hands
//     the result to the socket thread through a locked queue plus an
//     eventfd the socket thread polls next to its socket.
//   - the membership client heartbeats on its own thread; the item server
//     serves on its own.
// Nothing but the socket thread touches a ZeroMQ socket it does not own.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flowd/item.hpp"
#include "net/security/curve.hpp"
#include "plugin/registry.hpp"
#include "runtime/run_types.hpp"
#include "sched/perf_model.hpp"
#include "util/log.hpp"

namespace flowd::net::node {

// A node's name when WorkerNodeOptions::name is empty: "host:pid" of the
// process `pid` on this machine.
std::string default_node_name(long pid);

struct WorkerNodeOptions {
  std::string coordinator;  // the coordinator's membership endpoint (tcp://host:port, ipc://...)
  // Own key pair + the coordinator's public key. The node's item server uses
  // the same pair as its server key.
  std::optional<security::ClientCredentials> curve{};
  std::string name{};                           // default "host:pid"
  // Where the item server binds; empty: cluster::default_item_bind (the
  // address this host reaches the coordinator from, or loopback).
  std::string data_bind{};
  // Host put in the data endpoint (--advertise); empty: as cluster::advertise_as
  // finds for a wildcard bind, else as bound.
  std::string advertise_host{};
  int cpus = 1;                  // CPU worker threads of the TaskHost (0: one per hardware thread)
  runtime::GpuSpec gpus{};       // GPU workers of the TaskHost
  // Extra tasks asked for beyond free slots (-1: as many as slots). They
  // wait unstarted, and are what other nodes may steal.
  int lookahead = -1;
  // Tasks of the lookahead started while every slot is busy, so that their
  // inputs are pulled during the slots' work, not after it (WorkerQueue).
  // 0: a task's inputs are pulled only once a slot is free for it.
  int pull_ahead = 1;
  Json labels = Json::object();  // node labels (workflow/labels.hpp node form), sent in hello and Registration
  // Builds the plugin registry (the CLI: its -P first, then the run's
  // plugin path, which is passed here). Required.
  std::function<plugin::Registry(const std::vector<std::filesystem::path>& extra_plugin_path)> make_registry;
  sched::PerfModel* model = nullptr;
  std::chrono::milliseconds welcome_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds fetch_timeout{std::chrono::minutes(2)};  // one input pull
  // Experiments only: every pull from another node takes at least its bytes
  // at this rate (MB/s), as if the nodes were joined by a slow link
  // (Constellation's throttled inter-cluster links). 0: off.
  double emulate_link_mb_s = 0;
  // Keep outputs in an HDF5 file in this directory instead of memory (items
  // beyond memory; served from disk). Empty: memory.
  std::filesystem::path store_dir{};
  const std::atomic<bool>* interrupt = nullptr;  // SIGINT/SIGTERM: leave with bye
};

struct WorkerNodeStats {
  std::uint64_t tasks_run = 0;     // ended with task_done
  std::uint64_t tasks_failed = 0;  // ended with task_failed (malformed assignments included)
  std::uint64_t tasks_stolen_from_me = 0;
  std::uint64_t items_fetched = 0;  // inputs pulled from other holders
  std::uint64_t bytes_fetched = 0;
  std::uint64_t items_served = 0;   // transfers the item server completed
  std::uint64_t items_released = 0;
  std::uint64_t release_unknown = 0;     // release_items ids this node did not hold
  std::uint64_t messages_rejected = 0;   // malformed or unexpected task-channel messages
};

class WorkerNode {
public:
  // Joins the coordinator (membership hello / welcome), opens the stages
  // it can, starts the item server and registers on the task channel.
  // Throws flowd::Error naming the coordinator's endpoint on failure.
  WorkerNode(WorkerNodeOptions options, Logger& log);
  // Abandons waiting tasks, waits for running operators, leaves.
  ~WorkerNode();
  WorkerNode(const WorkerNode&) = delete;
  WorkerNode& operator=(const WorkerNode&) = delete;

  // Serves until the coordinator says bye (returns 0), the coordinator is
  // lost (logs why, returns 3) or *interrupt is set (reports its tasks as
  // retryable failures, says bye, returns 130). Call once.
  int run();

  std::uint32_t id() const;
  // The item server's endpoint as advertised to peers.
  const std::string& data_endpoint() const;
  // Thread-safe.
  WorkerNodeStats stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flowd::net::node

#pragma once
// Private to the coordinator: included only by its sources in this folder,
// never by other code. The coordinator's state and its socket thread are
// shared by several files, one per concern:
//   coordinator.cpp           the public class: binding the sockets, submit,
//                             drain, finish, stats
//   coordinator_items.cpp     Core as the ItemHost of the run's items:
//                             fetching a value from its holder, releases
//   coordinator_jobs.cpp      job bookkeeping under Core::m: failing and
//                             requeueing tasks, lost nodes, recomputing
//                             lost items from their lineage
//   coordinator_scheduling.cpp  which ready task goes to which node, and
//                             stealing
//   coordinator_handlers.cpp  one function per task-channel message
//   coordinator_socket_loop.cpp  the socket thread's poll loop and sends
//
// Locks: Core::m guards the jobs and workers; every Loop function but run(),
// flush_releases(), send_all() and finish_turn() is called under it.
// Core::release_m is a leaf (taken while items die), Core::pool_m guards
// only the pool of item clients.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "net/membership/membership.hpp"
#include "net/node/assignment.hpp"
#include "net/node/coordinator.hpp"
#include "net/node/remote_item.hpp"
#include "net/node/steal_policy.hpp"
#include "net/security/zap.hpp"
#include "net/transport/client.hpp"
#include "net/transport/server.hpp"
#include "net/zio/zio.hpp"
#include "sched/perf_model.hpp"
#include "store/item_store.hpp"
#include "util/job_thread.hpp"

namespace flowd::net::node {

using Clock = std::chrono::steady_clock;

inline std::string worker_label(std::uint32_t id, const std::string& name) {
  return "worker " + std::to_string(id) + " (" + name + ")";
}

// One task of the run (or an internal recompute) from submit to its result.
struct Job {
  std::uint64_t order = 0;  // key in the ready map: oldest first, recomputes before all
  std::size_t stage = 0;
  std::string key;
  std::vector<runtime::CarriedPtr> inputs;
  std::function<void(runtime::RemoteResult)> done;  // empty for a recompute
  std::shared_ptr<const ClusterItem> target;        // a recompute: the item it makes again
  std::uint32_t emission = 0;
  std::uint32_t attempt = 0;
  std::uint32_t worker = 0;             // while assigned
  std::uint64_t wire_id = 0;            // the current assignment's task id (never reused)
  std::vector<wire::ItemId> published;  // our own values served for this assignment
  // Workers that died while it ran on them, as "worker 2 (host:77) was
  // killed by signal 11 (SIGSEGV)": at poison_losses it is failed, not retried.
  std::vector<std::string> losses;
  bool moved = false;                   // stolen once: never stealable again (TaskSpec::stealable)
  // A scan rank's job (runtime::RemoteTask): inputs' ports, what it is, and
  // the node that must run it.
  std::vector<std::uint32_t> ports;
  Json scan = nullptr;
  std::optional<std::uint32_t> pin;
  bool internal() const noexcept { return target != nullptr; }
};
using JobPtr = std::shared_ptr<Job>;

// A job that ran on this many workers that died is a poison item: it is
// failed, naming them, rather than tried until no worker is left.
inline constexpr std::size_t poison_losses = 2;

struct WorkerState {
  NodeView view;
  std::string routing;                             // task-channel routing id
  std::string data_endpoint;                       // its item server
  std::string public_key;                          // its item server's key
  std::map<std::string, std::string> unavailable;  // stage -> why (Registration)
  bool live = true;
  std::uint64_t credit = 0;
  std::set<std::uint64_t> tasks;  // wire ids assigned to it
  bool steal_pending = false;
  Clock::time_point next_steal{};
  Clock::time_point steal_sent{};     // when its pending steal_request went out
  std::deque<std::uint32_t> thieves;  // steal requests sent to it, in order
  std::uint64_t tasks_run = 0;
  double busy_seconds = 0;
  std::uint32_t slots = 0;  // tasks it runs at once (task-channel hello)
  // Since when pulls from it have failed with nothing pulled from it since
  // (Core::pull_failed); unset while it serves.
  std::optional<Clock::time_point> unreachable_since{};
  std::string label() const { return worker_label(view.id, view.name); }
};

// What one turn of the socket thread decided, acted on after the lock.
struct Turn {
  std::vector<std::pair<std::string, wire::Body>> out;  // routing id, message
  std::vector<std::function<void()>> calls;             // for the dispatcher
};

// The state shared by the public class, the socket thread and the items
// (which keep it alive past the Coordinator: they hold it as ItemHost).
struct Coordinator::Core final : ItemHost, std::enable_shared_from_this<Core> {
  CoordinatorOptions options;
  std::vector<StagePlacement> stages;  // by graph index
  std::vector<bool> is_map;
  std::vector<bool> source_on_a_node;  // StageNode::source_on_a_node
  std::vector<bool> sink_on_a_node;    // StageNode::sink_on_a_node
  std::vector<std::size_t> output_count;
  std::vector<sched::RunningStats> stage_seconds;  // by graph index: the operator's time per task, this run
  // The values this process made, served to workers under names chosen per
  // assignment (two ports of one source may carry equal metadata).
  store::MemoryItemStore published;
  std::string data_endpoint;      // ours, as advertised
  std::string server_public_key;  // "" without CURVE

  mutable std::mutex m;
  std::condition_variable cv;  // workers registered, items relocated, losses, drain
  std::map<std::uint32_t, WorkerState> workers;
  std::map<std::string, std::uint32_t> by_routing;
  std::set<std::uint32_t> gone;
  std::map<std::uint64_t, JobPtr> ready;     // by order
  std::map<std::uint64_t, JobPtr> assigned;  // by wire id
  std::map<const ClusterItem*, JobPtr> recomputing;
  std::uint64_t next_order = 1, next_wire = 1, steal_count = 0;
  std::size_t expected = 0, ever_registered = 0;
  bool drained = false;
  CoordinatorStats st;
  std::atomic<bool> closed{false};
  zio::RateLimitedLog reject_log;
  // Worker processes that ended, as their parent saw it (by worker name),
  // for the socket thread to act on.
  std::vector<std::pair<std::string, WorkerLoss>> ended;
  // Members whose items could not be pulled for longer than the loss bound,
  // for the socket thread to cut off (say bye, then as lost), with why.
  std::vector<std::pair<std::uint32_t, std::string>> cut_off;

  std::mutex release_m;  // leaf lock: taken while items die
  std::map<std::uint32_t, std::vector<wire::ItemId>> releases;

  std::mutex pool_m;
  std::vector<std::unique_ptr<transport::ItemClient>> pool;

  // The Loop's thread for pulls ahead; null before it starts and once it
  // ends. Leaf lock.
  std::mutex ahead_m;
  JobThread* puller = nullptr;

  int wake_fd = -1;  // the socket thread polls it next to its socket

  explicit Core(CoordinatorOptions o);
  ~Core() override;
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  void log(LogLevel l, const std::string& s) const { options.log(l, s); }
  // Silence after which membership declares a node lost.
  std::chrono::milliseconds loss_bound() const { return options.heartbeat_period * options.missed_heartbeats; }
  void wake() noexcept;

  // ---- the ItemHost (coordinator_items.cpp) ----
  void release(std::uint32_t holder, const wire::ItemId& id) noexcept override;
  Item fetch(const ClusterItem& item) override;
  // On `puller` (the Loop's), while there is one.
  std::shared_future<Item> fetch_ahead(const ClusterItem& item) override;
  std::unique_ptr<transport::ItemClient> acquire_client();
  void return_client(std::unique_ptr<transport::ItemClient> c);

  // ---- job bookkeeping, under m (coordinator_jobs.cpp) ----
  std::string holder_label(std::uint32_t id) const;
  // Starts re-making `item` (once) from its lineage.
  void request_recompute(const std::shared_ptr<const ClusterItem>& item);
  void unpublish(Job& job, std::vector<std::function<void()>>& trash);
  // Removes the job from wherever it is and hands it (and its inputs) to
  // the dispatcher to drop, outside every lock.
  void forget(JobPtr job, Turn& t);
  // node_lost: the job's pinned node is gone (RemoteResult::node_lost).
  void fail_job(JobPtr job, const std::string& message, const std::string& node, Turn& t, bool node_lost = false);
  // Back to ready for another node (attempt + 1, unless `counts` is false:
  // the task itself did not fail), or failed after too many.
  void requeue(JobPtr job, std::string why, Turn& t, bool counts = true);
  // A pull from member `holder` failed (no answer). Within the loss bound
  // (heartbeat period × missed heartbeats) since the first such failure
  // the holder may come back; past it, it is queued in cut_off. False when
  // the holder is gone already or unknown.
  bool pull_failed(std::uint32_t holder);
  // Something was pulled from `holder`: it serves again.
  void pulled_from(std::uint32_t holder);
  // Cuts off the members queued in cut_off: bye, then lost (their items are
  // made again where needed).
  void cut_off_unreachable(Turn& t);
  // Requeues the worker's tasks, failing those it may have died of that
  // have now been running on poison_losses dead workers.
  void worker_gone(std::uint32_t id, const WorkerLoss& loss, Turn& t);
  // The tasks of `w` that may have killed it: the one its crash report
  // names, else the ones it was running (the oldest, as a node starts its
  // tasks in the order they came); none when it left in order.
  std::set<std::uint64_t> suspects(const WorkerState& w, const WorkerLoss& loss) const;
};

// The sockets and the threads serving them. The task channel's socket is
// used by `thread` alone once the constructor has started it.
struct Coordinator::Loop {
  Core& core;  // outlives the Loop: the Coordinator holds it longer
  // done() callbacks and what jobs held: dropped or called here, never
  // under a lock of ours, so a callback may submit, fetch or drain.
  JobThread dispatcher;
  // Pulls ahead for the coordinator's own sinks (Core::fetch_ahead): here,
  // not in the Core, so a pull that drops the last reference to an item
  // (and so to the Core) never destroys its own thread.
  JobThread puller;
  std::unique_ptr<transport::ItemServer> item_server;
  zmq::context_t ctx{1};
  // After the context, before the socket (security/zap.hpp).
  std::unique_ptr<security::ZapHandler> zap;
  zmq::socket_t socket;
  // Logs refused connections (with CURVE); reset by the thread before it
  // closes the socket.
  std::unique_ptr<security::HandshakeMonitor> monitor;
  std::unique_ptr<membership::MembershipServer> membership;
  std::string task_endpoint;
  wire::Limits limits{};
  std::uint64_t seq = 0;
  std::deque<std::pair<std::string, wire::Body>> outbox;
  std::atomic<bool> stop{false};
  std::thread thread;

  explicit Loop(Core& c) : core(c) {
    std::lock_guard lock(core.ahead_m);
    core.puller = &puller;
  }
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // ---- scheduling, under core.m (coordinator_scheduling.cpp) ----
  std::string cannot_run(std::size_t stage) const;
  void assign(JobPtr job, WorkerState& w, Turn& t);
  void schedule(Turn& t);
  void steal(const std::vector<NodeView>& live, Turn& t);
  // The victim's tasks as the steal policy sees them for this thief.
  std::vector<HeldTask> held_for_steal(const WorkerState& victim, const WorkerState& thief) const;

  // ---- messages, under core.m (coordinator_handlers.cpp) ----
  void on_message(std::vector<zmq::message_t>& frames, Turn& t);
  void on_hello(const std::string& peer, const wire::Hello& h, std::vector<zmq::message_t>& frames, Turn& t);
  void on_done(WorkerState& w, const wire::TaskDone& d, Turn& t);
  void on_failed(WorkerState& w, const wire::TaskFailed& f, Turn& t);
  void on_steal_reply(WorkerState& victim, const wire::StealReply& s, Turn& t);
  void release_outputs(std::uint32_t holder, const std::vector<wire::TaskOutput>& outputs, Turn& t);
  void reject_locked(const std::string& line);

  // ---- the socket thread (coordinator_socket_loop.cpp) ----
  void run();
  void flush_releases(Turn& t);
  void send_all();
  void finish_turn(Turn& t);
};

}  // namespace flowd::net::node

#pragma once
// Private to the worker node: included only by its sources in this folder,
// never by other code. WorkerNode::Impl is shared by one file per concern:
//   worker_node.cpp        the public class and the teardown
//   worker_node_join.cpp   Impl's constructor, which joins the coordinator:
//                          membership, the run's workflow and plugins, the
//                          item server, registration
//   worker_node_serve.cpp  the socket thread: its poll loop, the messages
//                          it takes (steal requests and releases among them)
//                          and what it sends
//   worker_node_tasks.cpp  an assigned task's life: checking it, queueing it,
//                          storing its outputs and reporting how it ended
//   worker_node_fetch.cpp  the fetcher threads that pull a task's inputs and
//                          hand it to the TaskHost
// worker_node.hpp says which thread does what.
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <sys/eventfd.h>
#include <zmq.hpp>

#include "flowd/error.hpp"
#include "net/membership/membership.hpp"
#include "net/node/protocol.hpp"
#include "net/node/worker_node.hpp"
#include "net/node/worker_queue.hpp"
#include "net/transport/client.hpp"
#include "net/transport/server.hpp"
#include "net/zio/zio.hpp"
#include "runtime/task_host.hpp"
#include "store/item_store.hpp"
#include "wire/wire.hpp"
#include "workflow/graph.hpp"

namespace flowd::net::node {

// Wakes the socket thread's poll from other threads: ZeroMQ polls file
// descriptors next to sockets, and an eventfd is the cheapest one.
class Wakeup {
public:
  Wakeup() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw Error(std::string("worker node: eventfd: ") + std::strerror(errno));
  }
  ~Wakeup() { ::close(fd_); }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  void signal() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto r = ::write(fd_, &one, sizeof one);  // a full counter still wakes the poll
  }
  void clear() noexcept {
    std::uint64_t v = 0;
    [[maybe_unused]] const auto r = ::read(fd_, &v, sizeof v);  // EAGAIN when nothing was signalled
  }
  int fd() const noexcept { return fd_; }

private:
  int fd_;
};

// A task that ended, for the socket thread to report.
struct Completion {
  std::uint64_t task_id = 0;
  bool ok = false;
  bool retryable = false;
  std::string message;  // when not ok
  double seconds = 0;
  std::vector<wire::TaskOutput> outputs;  // when ok: stored already
  std::vector<std::uint32_t> unreachable;  // holders an input could not be pulled from
};

// A job's own item clients (a scan rank's, an all-pairs stretch's), so that
// lanes asking for different items at once pull them in parallel; a client
// is single-threaded, so each has its turn lock.
class JobClients {
public:
  explicit JobClients(const transport::ClientOptions& options, std::size_t count = 4) {
    for (std::size_t i = 0; i < count; ++i) clients_.emplace_back(options);
  }
  // f(client) on the `which`-th client (modulo their number), in its turn.
  template <class F>
  auto with(std::size_t which, F&& f) {
    Client& c = clients_[which % clients_.size()];
    std::lock_guard lock(c.m);
    return f(c.client);
  }

private:
  struct Client {
    explicit Client(const transport::ClientOptions& o) : client(o) {}
    std::mutex m;
    transport::ItemClient client;
  };
  std::deque<Client> clients_;  // deque: a Client never moves
};

// `threads` fetcher threads, each with its own ItemClient, running `work`
// on started tasks. Clients are made here, so a bad option throws in the
// constructor; their sockets are made lazily by the fetching thread.
class FetchPool {
public:
  using Work = std::function<void(transport::ItemClient&, QueuedTask)>;

  FetchPool(std::size_t threads, const transport::ClientOptions& client_options, Work work);
  ~FetchPool() { stop(); }
  FetchPool(const FetchPool&) = delete;
  FetchPool& operator=(const FetchPool&) = delete;

  void push(QueuedTask t);
  // Drops what was not picked up; a fetch in progress ends (succeeds, or
  // fails within the client's retries) before its thread is joined.
  void stop();

private:
  void loop(transport::ItemClient& client);

  Work work_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<QueuedTask> q_;
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

// The payload size an item travels with (ItemRef::bytes, for the
// coordinator's locality preference): exact for arrays and JSON; a table's
// is its serialised size.
std::uint64_t payload_bytes(const Item& item);

struct WorkerNode::Impl {
  WorkerNodeOptions options;
  Logger& log;
  zio::NetLog netlog;
  wire::Limits limits{};
  std::string name;

  std::unique_ptr<membership::MembershipClient> membership;
  std::uint32_t worker_id = 0;
  RunConfig config;
  std::optional<plugin::Registry> registry;  // before graph: the graph's operators come from its plugins
  workflow::Graph graph;
  std::map<std::string, std::string> unavailable;

  // The node's outputs: memory, or an HDF5 file with --store (before server,
  // which reads it).
  std::unique_ptr<store::NodeItemStore> store;
  std::filesystem::path store_file;  // removed when the node ends
  std::unique_ptr<transport::ItemServer> server;
  std::string data_endpoint;

  std::atomic<std::uint64_t> tasks_run{0}, tasks_failed{0}, tasks_stolen{0}, items_fetched{0}, bytes_fetched{0},
      items_released{0}, release_unknown{0}, rejected{0};
  std::atomic<bool> stopping{false};

  // Completions from TaskHost workers and fetchers; before host, whose
  // destructor may still complete running tasks.
  Wakeup wake;
  std::mutex done_m;
  std::vector<Completion> done;

  std::unique_ptr<runtime::TaskHost> host;
  // TaskHost::submit does not promise to be safe from several threads at
  // once; fetchers take turns (a submit only queues the task).
  std::mutex submit_m;
  std::optional<WorkerQueue> queue;  // socket thread only

  zmq::context_t ctx{1};
  zmq::socket_t socket;  // the task channel; the socket thread's only
  std::uint64_t seq = 0;
  std::deque<wire::OutMessage> outbox;  // encoded, waiting for room in the socket
  zio::RateLimitedLog reject_log;
  bool ran = false;

  // Holders the coordinator declared lost (holder_lost), by item endpoint:
  // fetches from them give up at once (ClientOptions::abandon).
  std::mutex lost_m;
  std::map<std::string, std::string> lost_holders;

  transport::ClientOptions client_options;  // for clients made after joining (a scan job's lookups)
  std::unique_ptr<FetchPool> pool;  // last: its threads use everything above

  // Joins, or throws flowd::Error naming the coordinator.
  Impl(WorkerNodeOptions o, Logger& l);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  std::string who() const { return "worker " + std::to_string(worker_id) + " (" + name + ")"; }

  // ---- joining (worker_node_join.cpp) ----
  void join();

  // ---- the socket thread (worker_node_serve.cpp) ----
  int serve();
  // bye: the run is over; sent_away: any other bye (refused, cut off).
  enum class Handled { ok, bye, sent_away };
  Handled handle(std::vector<zmq::message_t>& frames);
  void on_steal(const wire::StealRequest& s);
  void on_release(const wire::ReleaseItems& r);
  // Encodes and queues a message for the coordinator; false when it cannot
  // be encoded (the caller decides what that means).
  bool post(const wire::Body& body);
  // Sends what the socket takes now; the rest waits for the next turn.
  void flush();
  void reject(const std::string& line);
  void fail(std::uint64_t task_id, bool retryable, const std::string& message,
            std::vector<std::uint32_t> unreachable = {});
  void ask_for_work();
  // Interrupted: every task this node holds goes back to the coordinator
  // as a retryable failure, then bye.
  void leave_interrupted();

  // ---- a task's life (worker_node_tasks.cpp) ----
  // On the socket thread:
  void on_assign(const wire::AssignTask& a);
  // Checks an assignment against the graph and the spec; "" when usable.
  std::string check(const wire::AssignTask& a, const TaskSpec& spec, bool& retryable) const;
  void start_tasks();
  void drain_completions();
  void report(Completion c);
  // On fetcher and TaskHost threads:
  void complete(Completion c);
  // Stores the outputs before reporting them: the coordinator may hand
  // them to consumers as soon as task_done arrives.
  void hosted(std::uint64_t task_id, const std::string& key, const std::string& stage, runtime::HostedResult r);

  // ---- fetcher threads (worker_node_fetch.cpp) ----
  void fetch_and_submit(transport::ItemClient& client, QueuedTask task);
  void fetch_and_submit_scan(transport::ItemClient& client, QueuedTask task);
  // Pulls a map task's or a placed sink's inputs into `inputs` (by port).
  // False when one could not be pulled: the task was completed as failed.
  bool pull_inputs(transport::ItemClient& client, const QueuedTask& task, const workflow::StageNode& stage,
                   std::vector<std::optional<Item>>& inputs);
  // An all-pairs stage's job: items pulled (or asked of peers) when the
  // node's cache misses them, preprocessed items served to peers.
  void fetch_and_submit_allpairs(QueuedTask task);
  // An input from this node's store or its holder (throws flowd::Error).
  Item pull(transport::ItemClient& client, const wire::ItemRef& ref, const TaskSpec& spec);

  // ---- after serving (worker_node.cpp) ----
  void shutdown();
};

}  // namespace flowd::net::node

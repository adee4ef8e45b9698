#include "net/node/coordinator.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "flowd/error.hpp"
#include "net/cluster/advertise.hpp"
#include "net/cluster/placement.hpp"
#include "net/membership/membership.hpp"
#include "net/node/assignment.hpp"
#include "net/node/remote_item.hpp"
#include "net/transport/client.hpp"
#include "net/transport/server.hpp"
#include "store/item_store.hpp"
#include "net/zio/zio.hpp"
#include "util/job_thread.hpp"

namespace flowd::net::node {

namespace {

using Clock = std::chrono::steady_clock;

// Longest sleep of the socket thread: bounds how late a membership event is
// acted on and how long stopping takes. Everything else wakes it at once.
constexpr auto max_poll = std::chrono::milliseconds(20);
constexpr int max_receive_batch = 256;
// Ready tasks considered per scheduling pass: keeps a pass cheap with a huge
// backlog; the oldest are considered (internal recomputes come first).
constexpr std::size_t max_scan = 4096;
// Credit a worker may accumulate: a bound on what a confused peer can make
// us send it.
constexpr std::uint64_t max_credit = 1u << 20;
// Internal (recompute) jobs sort before every task of the run.
constexpr std::uint64_t external_order_base = 1ull << 62;
// After an empty steal reply, the thief waits this long before asking again,
// so an idle node does not spin on busy victims.
constexpr auto steal_backoff = std::chrono::milliseconds(100);
constexpr std::size_t release_batch = 4096;

std::string worker_label(std::uint32_t id, const std::string& name) {
  return "worker " + std::to_string(id) + " (" + name + ")";
}

// "tcp://HOST:*" (or the ipc path with a suffix) for the task and data binds.
std::string bind_for(const std::string& host_endpoint, const char* suffix) {
  const auto e = security::parse_endpoint(host_endpoint);
  switch (e.transport) {
    case security::Transport::tcp: {
      const bool v6 = e.address.find(':') != std::string::npos;
      return "tcp://" + (v6 ? "[" + e.address + "]" : e.address) + ":*";
    }
    case security::Transport::ipc: return "ipc://" + e.address + "-" + suffix;
    case security::Transport::inproc: break;
  }
  throw Error("coordinator: cannot bind the " + std::string(suffix) + " socket on '" + host_endpoint +
              "': the cluster runtime needs tcp:// or ipc://");
}

std::uint64_t bytes_of(const Item& item) {
  if (const auto* a = std::get_if<Array>(&item.value)) return a->nbytes();
  return 0;
}

}  // namespace

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
  std::uint32_t worker = 0;   // while assigned
  std::uint64_t wire_id = 0;  // the current assignment's task id (never reused)
  std::vector<wire::ItemId> published;  // our own values served for this assignment
  bool internal() const noexcept { return target != nullptr; }
};
using JobPtr = std::shared_ptr<Job>;

struct WorkerState {
  NodeView view;
  std::string routing;        // task-channel routing id
  std::string data_endpoint;  // its item server
  std::string public_key;     // its item server's key
  std::map<std::string, std::string> unavailable;  // stage -> why (Registration)
  bool live = true;
  std::uint64_t credit = 0;
  std::set<std::uint64_t> tasks;  // wire ids assigned to it
  bool steal_pending = false;
  Clock::time_point next_steal{};
  std::deque<std::uint32_t> thieves;  // steal requests sent to it, in order
  std::uint64_t tasks_run = 0;
  double busy_seconds = 0;
  std::uint32_t slots = 0;  // tasks it runs at once (task-channel hello)
  std::string label() const { return worker_label(view.id, view.name); }
};

// What one turn of the socket thread decided, acted on after the lock.
struct Turn {
  std::vector<std::pair<std::string, wire::Body>> out;  // routing id, message
  std::vector<std::function<void()>> calls;            // for the dispatcher
};

struct Coordinator::Core final : ItemHost, std::enable_shared_from_this<Core> {
  CoordinatorOptions options;
  std::vector<StagePlacement> stages;  // by graph index
  std::vector<bool> is_map;
  std::vector<std::size_t> output_count;
  // The values this process made, served to workers under names chosen per
  // assignment (two ports of one source may carry equal metadata).
  store::MemoryItemStore published;
  std::string data_endpoint;       // ours, as advertised
  std::string server_public_key;   // "" without CURVE

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

  std::mutex release_m;  // leaf lock: taken while items die
  std::map<std::uint32_t, std::vector<wire::ItemId>> releases;

  std::mutex pool_m;
  std::vector<std::unique_ptr<transport::ItemClient>> pool;

  int wake_fd = -1;

  explicit Core(CoordinatorOptions o) : options(std::move(o)) {
    if (!options.log) options.log = [](LogLevel, std::string_view) {};
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0) throw Error("coordinator: eventfd failed: " + std::string(std::strerror(errno)));
  }
  ~Core() override {
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void log(LogLevel l, const std::string& s) const { options.log(l, s); }

  void wake() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd, &one, sizeof one);
  }

  // ---- items -------------------------------------------------------------

  void release(std::uint32_t holder, const wire::ItemId& id) noexcept override {
    if (closed) return;
    try {
      std::lock_guard lock(release_m);
      releases[holder].push_back(id);
    } catch (...) {
      return;  // out of memory: the holder keeps the item until the run ends
    }
    wake();
  }

  std::string holder_label(std::uint32_t id) const {
    const auto it = workers.find(id);
    return it == workers.end() ? "worker " + std::to_string(id) : it->second.label();
  }

  // Under m. Starts re-making `item` (once) from its lineage.
  void request_recompute(const std::shared_ptr<const ClusterItem>& item) {
    if (recomputing.contains(item.get())) return;
    auto job = std::make_shared<Job>();
    job->order = next_order++;
    job->stage = item->lineage().stage;
    job->key = item->lineage().key;
    job->inputs = item->lineage().inputs;
    job->target = item;
    job->emission = item->lineage().emission;
    ready[job->order] = job;
    recomputing[item.get()] = job;
    ++st.recomputed;
    log(LogLevel::info, "recomputing item '" + job->key + "' (output " + std::to_string(job->emission) +
                            " of stage '" + stages[job->stage].name + "'): its holder " + item->holder() +
                            " is gone");
  }

  std::unique_ptr<transport::ItemClient> acquire_client() {
    {
      std::lock_guard lock(pool_m);
      if (!pool.empty()) {
        auto c = std::move(pool.back());
        pool.pop_back();
        return c;
      }
    }
    transport::ClientOptions o;
    if (options.curve) o.curve = security::ClientCredentials{options.curve->server.public_key, options.curve->server};
    o.log = options.log;
    return std::make_unique<transport::ItemClient>(std::move(o));
  }
  void return_client(std::unique_ptr<transport::ItemClient> c) {
    std::lock_guard lock(pool_m);
    pool.push_back(std::move(c));
  }

  Item fetch(const ClusterItem& item) override {
    const std::string& key = item.lineage().key;
    // A holder that vanished without membership noticing yet: give the
    // heartbeats time to declare it before calling the fetch a failure.
    const auto loss_window = options.heartbeat_period * (options.missed_heartbeats + 2);
    for (int round = 0;; ++round) {
      ItemLocation where;
      transport::Peer peer;
      {
        std::unique_lock lock(m);
        for (;;) {
          if (closed) throw Error("fetching item '" + key + "': the coordinator has finished");
          where = item.location();
          if (!where.failed.empty()) throw Error("item '" + key + "' is lost: " + where.failed);
          if (!gone.contains(where.holder)) break;
          if (drained)
            throw Error("fetching item '" + key + "': its holder " + where.holder_name +
                        " is gone and the run is over, so it cannot be recomputed");
          request_recompute(item.shared_from_this());
          wake();
          cv.wait(lock);
        }
        const auto it = workers.find(where.holder);
        if (it == workers.end()) throw Error("fetching item '" + key + "': unknown holder " + where.holder_name);
        peer = transport::Peer{it->second.data_endpoint, it->second.public_key};
      }
      auto client = acquire_client();
      try {
        Item value = client->fetch(peer, where.id, options.fetch_timeout);
        return_client(std::move(client));
        std::lock_guard lock(m);
        ++st.fetched_by_coordinator;
        st.bytes_fetched += where.bytes;
        return value;
      } catch (const transport::FetchError& e) {
        return_client(std::move(client));
        std::unique_lock lock(m);
        cv.wait_for(lock, loss_window, [&] { return gone.contains(where.holder) || closed.load(); });
        if (gone.contains(where.holder) && !closed && round < static_cast<int>(options.max_attempts)) continue;
        throw Error("fetching item '" + key + "' (" + wire::describe(where.id) + ") from " +
                    where.holder_name + ": " + e.what());
      }
    }
  }
};

// ---- the socket thread ------------------------------------------------------

struct Coordinator::Loop {
  std::shared_ptr<Core> core;
  // done() callbacks and what jobs held: dropped or called here, never
  // under a lock of ours, so a callback may submit, fetch or drain.
  JobThread dispatcher;
  std::unique_ptr<transport::ItemServer> item_server;
  zmq::context_t ctx{1};
  // After the context, before the socket (security/zap.hpp).
  std::unique_ptr<security::ZapHandler> zap;
  zmq::socket_t socket;
  std::unique_ptr<membership::MembershipServer> membership;
  std::string task_endpoint;
  wire::Limits limits{};
  std::uint64_t seq = 0;
  std::deque<std::pair<std::string, wire::Body>> outbox;
  std::atomic<bool> stop{false};
  std::thread thread;

  explicit Loop(std::shared_ptr<Core> c) : core(std::move(c)) {}

  ~Loop() {
    stop = true;
    core->wake();
    if (thread.joinable()) thread.join();
  }

  Core& k() { return *core; }

  // ---- under core->m -------------------------------------------------------

  void unpublish(Job& job, std::vector<std::function<void()>>& trash) {
    for (const auto& id : job.published)
      if (auto item = k().published.take(id)) trash.push_back([item = std::move(item)] {});
    job.published.clear();
  }

  // Removes the job from wherever it is and hands it (and its inputs) to
  // the dispatcher to drop, outside every lock.
  void forget(JobPtr job, Turn& t) {
    k().ready.erase(job->order);
    if (job->wire_id) {
      if (const auto it = k().assigned.find(job->wire_id); it != k().assigned.end() && it->second == job)
        k().assigned.erase(it);
      if (const auto w = k().workers.find(job->worker); w != k().workers.end()) w->second.tasks.erase(job->wire_id);
    }
    unpublish(*job, t.calls);
    if (job->target) k().recomputing.erase(job->target.get());
    t.calls.push_back([job] {});
  }

  void fail_job(JobPtr job, const std::string& message, const std::string& node, Turn& t) {
    forget(job, t);
    if (job->internal()) {
      job->target->fail(message);
      k().log(LogLevel::error, "recomputing item '" + job->key + "' failed: " + message);
      k().cv.notify_all();
      return;
    }
    ++k().st.failed;
    runtime::RemoteResult r;
    r.ok = false;
    r.error = message;
    r.key = job->key;
    r.node = node;
    t.calls.push_back([done = std::move(job->done), r = std::move(r)]() mutable {
      if (done) done(std::move(r));
    });
  }

  // Back to ready for another node (attempt + 1), or failed after too many.
  void requeue(JobPtr job, std::string why, Turn& t) {
    const std::string node = k().holder_label(job->worker);
    if (job->attempt + 1 >= k().options.max_attempts) {
      fail_job(job, "task '" + job->key + "' of stage '" + k().stages[job->stage].name + "' failed " +
                        std::to_string(job->attempt + 1) + " times; last on " + node + ": " + why,
               node, t);
      return;
    }
    if (const auto it = k().assigned.find(job->wire_id); it != k().assigned.end() && it->second == job)
      k().assigned.erase(it);
    if (const auto w = k().workers.find(job->worker); w != k().workers.end()) w->second.tasks.erase(job->wire_id);
    unpublish(*job, t.calls);
    ++job->attempt;
    job->worker = 0;
    job->wire_id = 0;
    k().ready[job->order] = job;
    ++k().st.reassigned;
  }

  void worker_gone(std::uint32_t id, const std::string& reason, Turn& t) {
    if (!k().gone.insert(id).second) return;
    const auto it = k().workers.find(id);
    if (it == k().workers.end()) {
      k().cv.notify_all();
      return;
    }
    auto& w = it->second;
    w.live = false;
    k().by_routing.erase(w.routing);
    const std::vector<std::uint64_t> tasks(w.tasks.begin(), w.tasks.end());
    for (const auto wid : tasks)
      if (const auto j = k().assigned.find(wid); j != k().assigned.end()) requeue(j->second, w.label() + " " + reason, t);
    w.tasks.clear();
    w.credit = 0;
    for (const auto thief : w.thieves)
      if (const auto th = k().workers.find(thief); th != k().workers.end()) th->second.steal_pending = false;
    w.thieves.clear();
    k().log(LogLevel::warning, w.label() + " " + reason + "; " + std::to_string(tasks.size()) +
                                   " of its tasks go to other nodes, and the items it held are recomputed when needed");
    k().cv.notify_all();
  }

  std::string cannot_run(std::size_t stage) const {
    const auto& sp = core->stages[stage];
    std::string why = "stage '" + sp.name + "' cannot run on any live worker";
    std::string each;
    for (const auto& [id, w] : core->workers) {
      if (!w.live) {
        each += "; " + w.label() + " is gone";
        continue;
      }
      const auto r = w.unavailable.find(sp.name);
      each += "; " + w.label() + ": " + why_not(sp, w.view, r == w.unavailable.end() ? std::string() : r->second);
    }
    if (core->workers.empty()) each = "; no worker has registered";
    return why + each;
  }

  void assign(JobPtr job, WorkerState& w, Turn& t) {
    const std::uint64_t wire_id = k().next_wire++;
    wire::AssignTask a;
    a.task_id = wire_id;
    a.stage = k().stages[job->stage].name;
    TaskSpec spec;
    spec.key = job->key;
    spec.attempt = job->attempt;
    std::vector<wire::ItemId> published;
    for (std::size_t p = 0; p < job->inputs.size(); ++p) {
      const auto& in = job->inputs[p];
      if (!in) continue;
      wire::ItemRef ref;
      if (in->remote) {
        const auto ci = std::dynamic_pointer_cast<const ClusterItem>(in->remote);
        const auto where = ci->location();
        ref = wire::ItemRef{where.id, where.holder, where.bytes};
        if (const auto h = k().workers.find(where.holder); h != k().workers.end())
          spec.peers[where.holder] = PeerAddress{h->second.data_endpoint, h->second.public_key};
      } else {
        // A value of this process: served by our item server under a name of
        // this assignment; the aliasing pointer keeps the Carried alive.
        ref.id = wire::ItemId{in->item.meta.key, static_cast<std::int64_t>(wire_id), static_cast<std::int64_t>(p)};
        ref.holder = 0;
        ref.bytes = bytes_of(in->item);
        k().published.put(ref.id, std::shared_ptr<const Item>(in, &in->item));
        published.push_back(ref.id);
        spec.peers[0] = PeerAddress{k().data_endpoint, k().server_public_key};
      }
      a.inputs.push_back(std::move(ref));
      spec.ports.push_back(static_cast<std::uint32_t>(p));
    }
    a.spec = spec.to_json();
    job->published = std::move(published);
    if (const auto enc = wire::encode(0, a, limits); !enc) {
      fail_job(job, "task '" + job->key + "' of stage '" + a.stage + "' cannot be sent: " + enc.error().describe(), "",
               t);
      return;
    }
    k().ready.erase(job->order);
    job->worker = w.view.id;
    job->wire_id = wire_id;
    k().assigned[wire_id] = job;
    w.tasks.insert(wire_id);
    --w.credit;
    ++k().st.assigned;
    t.out.emplace_back(w.routing, std::move(a));
  }

  void schedule(Turn& t) {
    auto& c = k();
    if (c.drained || c.closed) return;
    std::vector<NodeView> live;
    for (const auto& [id, w] : c.workers)
      if (w.live) live.push_back(w.view);
    const auto best = best_preferences(c.stages, live);
    // A task waits for a better node only while that node is asking for work
    // too; otherwise an idle node with a fallback label takes it now
    // (Constellation: an executor takes every match of its first context,
    // then of later ones, rather than idling).
    std::vector<NodeView> asking;
    for (const auto& [id, w] : c.workers)
      if (w.live && w.credit > 0) asking.push_back(w.view);
    const auto best_now = best_preferences(c.stages, asking);
    const auto ranks_now = best_ranks(c.stages, asking, best_now);
    const bool may_give_up = c.ever_registered >= std::max<std::size_t>(c.expected, 1);

    std::vector<ReadyTask> cands;
    std::vector<JobPtr> cand_jobs;
    std::vector<std::pair<JobPtr, std::string>> to_fail;
    std::vector<std::shared_ptr<const ClusterItem>> to_recompute;
    std::size_t scanned = 0;
    for (const auto& [order, job] : c.ready) {
      if (scanned++ >= max_scan) break;
      if (!best[job->stage]) {
        if (may_give_up) to_fail.emplace_back(job, cannot_run(job->stage));
        continue;
      }
      ReadyTask rt{order, job->stage, {}};
      bool blocked = false;
      std::string bad;
      for (const auto& in : job->inputs) {
        if (!in || !in->remote) continue;
        const auto ci = std::dynamic_pointer_cast<const ClusterItem>(in->remote);
        if (!ci) {
          bad = "input item '" + in->item.meta.key + "' is held outside this cluster run";
          break;
        }
        const auto where = ci->location();
        if (!where.failed.empty()) {
          bad = "input item '" + in->item.meta.key + "' is lost: " + where.failed;
          break;
        }
        if (c.gone.contains(where.holder)) {
          blocked = true;
          to_recompute.push_back(ci);
          continue;
        }
        rt.inputs.emplace_back(where.holder, where.bytes);
      }
      if (!bad.empty())
        to_fail.emplace_back(job, "task '" + job->key + "' of stage '" + c.stages[job->stage].name + "': " + bad);
      else if (!blocked) {
        cands.push_back(std::move(rt));
        cand_jobs.push_back(job);
      }
    }
    for (const auto& [job, why] : to_fail) fail_job(job, why, "", t);
    for (const auto& ci : to_recompute) c.request_recompute(ci);
    // New recomputes are considered on the next turn, right away.
    if (!to_recompute.empty()) c.wake();

    for (auto& [id, w] : c.workers) {
      if (!w.live) continue;
      while (w.credit > 0 && !cands.empty()) {
        const auto i = choose_task(cands, w.view, c.stages, best_now, c.options.locality, ranks_now);
        if (!i) break;
        const JobPtr job = cand_jobs[*i];
        cands.erase(cands.begin() + static_cast<std::ptrdiff_t>(*i));
        cand_jobs.erase(cand_jobs.begin() + static_cast<std::ptrdiff_t>(*i));
        assign(job, w, t);
      }
    }
    if (c.options.steal) steal(live, t);
  }

  void steal(const std::vector<NodeView>& live, Turn& t) {
    auto& c = k();
    const auto now = Clock::now();
    for (auto& [id, thief] : c.workers) {
      if (!thief.live || thief.credit == 0 || thief.steal_pending || now < thief.next_steal) continue;
      std::vector<NodeView> victims;
      for (const auto& v : live) {
        if (v.id == id) continue;
        const auto& vw = c.workers.at(v.id);
        // Only a node with more tasks than it runs at once has unstarted ones.
        if (vw.tasks.size() <= vw.slots) continue;
        const bool fits = std::any_of(vw.tasks.begin(), vw.tasks.end(), [&](std::uint64_t wid) {
          const auto j = c.assigned.find(wid);
          return j != c.assigned.end() && placement_preference(c.stages[j->second->stage], thief.view).has_value();
        });
        if (fits) victims.push_back(v);
      }
      const auto pick = choose_victim(thief.view, victims, c.options.steal_seed + c.steal_count);
      if (!pick) continue;
      auto& victim = c.workers.at(victims[*pick].id);
      ++c.steal_count;
      ++c.st.steal_requests;
      thief.steal_pending = true;
      victim.thieves.push_back(id);
      // Half of what the victim has queued (at least one), as work stealing
      // does: taking all of it would only move the imbalance to the thief,
      // whose credit counts its lookahead too.
      const std::uint64_t queued = victim.tasks.size() - std::min<std::uint64_t>(victim.tasks.size(), victim.slots);
      const std::uint64_t want = std::min<std::uint64_t>({thief.credit, std::max<std::uint64_t>(1, (queued + 1) / 2), 1u << 16});
      t.out.emplace_back(victim.routing, wire::StealRequest{static_cast<std::uint32_t>(want), id});
    }
  }

  // ---- messages -------------------------------------------------------------

  void on_hello(const std::string& peer, const wire::Hello& h, std::vector<zmq::message_t>& frames, Turn& t) {
    auto& c = k();
    Registration r;
    try {
      r = Registration::from_json(h.info);
    } catch (const std::exception& e) {
      reject_locked("rejected hello from " + zio::peer_name(frames, c.options.curve.has_value()) + ": " + e.what());
      t.out.emplace_back(peer, wire::Bye{std::string("bad registration: ") + e.what()});
      return;
    }
    if (c.gone.contains(r.worker_id)) {
      reject_locked("rejected registration of worker " + std::to_string(r.worker_id) +
                    ": it was declared lost or left; it must join again");
      t.out.emplace_back(peer, wire::Bye{"declared lost or left: join again"});
      return;
    }
    std::optional<membership::WorkerInfo> member;
    for (auto& w : membership->workers())
      if (w.id == r.worker_id) member = std::move(w);
    if (!member) {
      reject_locked("rejected registration of worker " + std::to_string(r.worker_id) + " from " +
                    zio::peer_name(frames, c.options.curve.has_value()) + ": not a member (no welcome with that id)");
      t.out.emplace_back(peer, wire::Bye{"not a member: say hello to membership first"});
      return;
    }
    if (c.options.curve && frames.size() > 1) {
      // A key may register only as the member it joined as.
      std::string user;
      try {
        user = frames[1].gets("User-Id");
      } catch (const zmq::error_t&) {
      }
      if (user != member->user) {
        reject_locked("rejected registration of worker " + std::to_string(r.worker_id) + ": key '" + user +
                      "' is not the key it joined with ('" + member->user + "')");
        t.out.emplace_back(peer, wire::Bye{"registration under another worker's id"});
        return;
      }
    }
    auto [it, fresh] = c.workers.try_emplace(r.worker_id);
    auto& w = it->second;
    if (!fresh) c.by_routing.erase(w.routing);  // reconnected: new routing id
    w.view.id = r.worker_id;
    w.view.name = member->name;
    w.routing = peer;
    // A worker binds its item server after the welcome (under CURVE it needs
    // the peer keys the welcome brings), so the task-channel hello carries
    // the address.
    w.data_endpoint = h.data_endpoint.empty() ? member->data_endpoint : h.data_endpoint;
    w.public_key = r.server_public_key;
    w.slots = h.cpu_slots + h.gpu_slots;
    w.live = true;
    const auto labels = workflow::parse_node_labels(r.labels, "/labels");
    if (labels.ok())
      w.view.labels = labels.value;
    else
      c.log(LogLevel::warning, w.label() + " sent labels that do not parse (" + labels.errors.front().pointer + ": " +
                                   labels.errors.front().message + "); it is treated as unlabelled");
    if (fresh) {
      for (const auto& [stage, reason] : r.unavailable) {
        w.view.unavailable.insert(stage);
        w.unavailable[stage] = reason;
        c.log(LogLevel::warning,
              w.label() + " cannot run stage '" + stage + "': " + reason + "; it gets no such tasks");
      }
      ++c.ever_registered;
      c.log(LogLevel::info, w.label() + " registered on the task channel");
    }
    c.by_routing[peer] = r.worker_id;
    c.cv.notify_all();
  }

  void reject_locked(const std::string& line) {
    ++k().st.rejected;
    k().reject_log(k().options.log, "coordinator task channel: " + line);
  }

  void release_outputs(std::uint32_t holder, const std::vector<wire::TaskOutput>& outputs, Turn& t) {
    wire::ReleaseItems rel;
    for (const auto& o : outputs) rel.ids.push_back(o.ref.id);
    if (!rel.ids.empty())
      if (const auto w = k().workers.find(holder); w != k().workers.end() && w->second.live)
        t.out.emplace_back(w->second.routing, std::move(rel));
  }

  void on_done(WorkerState& w, const wire::TaskDone& d, Turn& t) {
    auto& c = k();
    const auto it = c.assigned.find(d.task_id);
    if (it == c.assigned.end() || it->second->worker != w.view.id) {
      // Reassigned after a loss, stolen, or the run was drained: the
      // outputs are nobody's.
      c.log(LogLevel::debug, "coordinator: task_done for task " + std::to_string(d.task_id) + " from " + w.label() +
                                 ", which no longer runs it; releasing its outputs");
      release_outputs(w.view.id, d.outputs, t);
      return;
    }
    const JobPtr job = it->second;
    const auto& stage = c.stages[job->stage];
    for (const auto& o : d.outputs)
      if (o.port >= c.output_count[job->stage]) {
        release_outputs(w.view.id, d.outputs, t);
        fail_job(job, "on " + w.label() + ": task '" + job->key + "' emitted on output port " +
                          std::to_string(o.port) + ", but stage '" + stage.name + "' has " +
                          std::to_string(c.output_count[job->stage]),
                 w.label(), t);
        return;
      }
    ++w.tasks_run;
    w.busy_seconds += std::max(0.0, d.seconds);
    if (job->internal()) {
      const auto& target = job->target;
      if (job->emission < d.outputs.size()) {
        const auto& o = d.outputs[job->emission];
        target->relocate(ItemLocation{w.view.id, w.label(), o.ref.id, o.ref.bytes, {}});
        std::vector<wire::TaskOutput> others;
        for (std::size_t i = 0; i < d.outputs.size(); ++i)
          if (i != job->emission) others.push_back(d.outputs[i]);
        release_outputs(w.view.id, others, t);
        forget(job, t);
        c.log(LogLevel::info, "recomputed item '" + job->key + "' on " + w.label());
        c.cv.notify_all();
      } else {
        release_outputs(w.view.id, d.outputs, t);
        fail_job(job, "its re-run on " + w.label() + " emitted " + std::to_string(d.outputs.size()) +
                          " items, not the " + std::to_string(job->emission + 1) + " of the first run",
                 w.label(), t);
      }
      return;
    }
    ++c.st.done;
    runtime::RemoteResult r;
    r.ok = true;
    r.node = w.view.name;
    r.seconds = d.seconds;
    auto self = core;
    for (std::uint32_t i = 0; i < d.outputs.size(); ++i) {
      const auto& o = d.outputs[i];
      auto item = std::make_shared<const ClusterItem>(
          std::static_pointer_cast<ItemHost>(self), ItemLocation{w.view.id, w.label(), o.ref.id, o.ref.bytes, {}},
          Lineage{job->stage, job->key, job->inputs, i});
      r.outputs.push_back(runtime::RemoteOutput{o.port, o.meta, std::move(item)});
    }
    forget(job, t);
    t.calls.push_back([done = std::move(job->done), r = std::move(r)]() mutable {
      if (done) done(std::move(r));
    });
  }

  void on_failed(WorkerState& w, const wire::TaskFailed& f, Turn& t) {
    auto& c = k();
    const auto it = c.assigned.find(f.task_id);
    if (it == c.assigned.end() || it->second->worker != w.view.id) {
      c.log(LogLevel::debug, "coordinator: task_failed for task " + std::to_string(f.task_id) + " from " + w.label() +
                                 ", which no longer runs it");
      return;
    }
    const JobPtr job = it->second;
    if (f.retryable) {
      c.log(LogLevel::info, "task '" + job->key + "' of stage '" + c.stages[job->stage].name + "' on " + w.label() +
                                " failed and is run again: " + f.message);
      requeue(job, f.message, t);
      return;
    }
    fail_job(job, "on " + w.label() + ": " + f.message, w.view.name, t);
  }

  void on_steal_reply(WorkerState& victim, const wire::StealReply& s, Turn& t) {
    auto& c = k();
    if (victim.thieves.empty()) {
      reject_locked("steal_reply from " + victim.label() + ", which was asked for none");
      return;
    }
    const std::uint32_t thief_id = victim.thieves.front();
    victim.thieves.pop_front();
    const auto th = c.workers.find(thief_id);
    WorkerState* thief = th != c.workers.end() && th->second.live ? &th->second : nullptr;
    if (thief) {
      thief->steal_pending = false;
      if (s.task_ids.empty()) thief->next_steal = Clock::now() + steal_backoff;
    }
    for (const auto wid : s.task_ids) {
      const auto it = c.assigned.find(wid);
      // Done meanwhile, or never this victim's: nothing to move.
      if (it == c.assigned.end() || it->second->worker != victim.view.id) continue;
      const JobPtr job = it->second;
      c.assigned.erase(it);
      victim.tasks.erase(wid);
      unpublish(*job, t.calls);
      job->worker = 0;
      job->wire_id = 0;
      c.ready[job->order] = job;
      ++c.st.stolen;
      if (thief && thief->credit > 0 && placement_preference(c.stages[job->stage], thief->view)) assign(job, *thief, t);
    }
  }

  void on_message(std::vector<zmq::message_t>& frames, Turn& t) {
    if (frames.empty()) return;
    const std::string peer = frames[0].to_string();
    auto& c = k();
    const bool curve = c.options.curve.has_value();
    if (frames.size() < 2) {
      reject_locked("dropped an empty message from " + zio::peer_name(frames, curve));
      return;
    }
    const auto v = zio::views(frames, 1);
    const auto m = wire::decode(v, limits);
    if (!m) {
      reject_locked("dropped a message from " + zio::peer_name(frames, curve) + ": " + m.error().describe());
      return;
    }
    if (const auto* h = std::get_if<wire::Hello>(&m->body)) {
      on_hello(peer, *h, frames, t);
      return;
    }
    const auto r = c.by_routing.find(peer);
    if (r == c.by_routing.end()) {
      reject_locked("rejected " + std::string(wire::to_string(m->header.type)) + " from " +
                    zio::peer_name(frames, curve) + ", which has not registered");
      return;
    }
    auto& w = c.workers.at(r->second);
    std::visit(
        [&](const auto& b) {
          using T = std::decay_t<decltype(b)>;
          if constexpr (std::is_same_v<T, wire::RequestWork>) {
            w.credit = std::min<std::uint64_t>(max_credit, w.credit + b.cpu_slots);
          } else if constexpr (std::is_same_v<T, wire::TaskDone>) {
            on_done(w, b, t);
          } else if constexpr (std::is_same_v<T, wire::TaskFailed>) {
            on_failed(w, b, t);
          } else if constexpr (std::is_same_v<T, wire::StealReply>) {
            on_steal_reply(w, b, t);
          } else if constexpr (std::is_same_v<T, wire::Bye>) {
            worker_gone(w.view.id, "left (bye on the task channel" + (b.reason.empty() ? "" : ": " + b.reason) + ")",
                        t);
          } else {
            reject_locked("rejected " + std::string(wire::to_string(m->header.type)) + " from " + w.label() +
                          ": the task channel takes hello, request_work, task_done, task_failed, steal_reply and bye");
          }
        },
        m->body);
  }

  // ---- the loop ---------------------------------------------------------------

  void flush_releases(Turn& t) {
    std::map<std::uint32_t, std::vector<wire::ItemId>> batch;
    {
      std::lock_guard lock(k().release_m);
      batch.swap(k().releases);
    }
    if (batch.empty()) return;
    std::lock_guard lock(k().m);
    for (auto& [holder, ids] : batch) {
      const auto w = k().workers.find(holder);
      if (w == k().workers.end() || !w->second.live) continue;  // gone with its store
      for (std::size_t i = 0; i < ids.size(); i += release_batch) {
        wire::ReleaseItems rel;
        const auto end = std::min(ids.size(), i + release_batch);
        rel.ids.assign(std::make_move_iterator(ids.begin() + static_cast<std::ptrdiff_t>(i)),
                       std::make_move_iterator(ids.begin() + static_cast<std::ptrdiff_t>(end)));
        t.out.emplace_back(w->second.routing, std::move(rel));
      }
    }
  }

  void send_all() {
    std::set<std::string> blocked;
    std::deque<std::pair<std::string, wire::Body>> keep;
    while (!outbox.empty()) {
      auto [peer, body] = std::move(outbox.front());
      outbox.pop_front();
      if (blocked.contains(peer)) {
        keep.emplace_back(std::move(peer), std::move(body));
        continue;
      }
      const auto msg = wire::encode(++seq, body, limits);
      if (!msg) {
        k().log(LogLevel::error, "coordinator: cannot encode " + std::string(wire::to_string(wire::type_of(body))) +
                                     ": " + msg.error().describe());
        continue;
      }
      const auto r = zio::send(socket, peer, *msg, true);
      if (r == zio::SendResult::would_block) {
        blocked.insert(peer);
        keep.emplace_back(std::move(peer), std::move(body));
      }
      // unreachable: the peer is gone; membership declares the loss.
    }
    outbox.swap(keep);
  }

  void finish_turn(Turn& t) {
    for (auto& o : t.out) outbox.push_back(std::move(o));
    t.out.clear();
    send_all();
    dispatcher.post_all(std::move(t.calls));
    t.calls.clear();
  }

  void run() {
    while (!stop) {
      try {
        zmq::pollitem_t items[2] = {{socket.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, k().wake_fd, ZMQ_POLLIN, 0}};
        zmq::poll(items, 2, outbox.empty() ? max_poll : std::chrono::milliseconds(2));
        if (items[1].revents & ZMQ_POLLIN) {
          std::uint64_t n = 0;
          [[maybe_unused]] const auto got = ::read(k().wake_fd, &n, sizeof n);
        }
        Turn t;
        for (int i = 0; i < max_receive_batch; ++i) {
          auto frames = zio::receive(socket);
          if (frames.empty()) break;
          std::lock_guard lock(k().m);
          on_message(frames, t);
        }
        while (auto e = membership->poll_event(std::chrono::milliseconds(0))) {
          if (e->kind == membership::MemberEventKind::joined) continue;
          std::lock_guard lock(k().m);
          worker_gone(e->worker.id, std::string(membership::to_string(e->kind)) + " (" + e->reason + ")", t);
        }
        flush_releases(t);
        {
          std::lock_guard lock(k().m);
          schedule(t);
        }
        finish_turn(t);
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        if (e.num() == ETERM) return;
        k().log(LogLevel::error, std::string("coordinator task channel: ") + e.what());
      } catch (const std::exception& e) {
        k().log(LogLevel::error, std::string("coordinator task channel: ") + e.what());
      }
    }
    // Bye on the task channel; membership says its own in its destructor.
    {
      std::lock_guard lock(k().m);
      for (const auto& [id, w] : k().workers)
        if (w.live) outbox.emplace_back(w.routing, wire::Bye{"the run is over"});
    }
    try {
      send_all();
      socket.set(zmq::sockopt::linger, 250);
      socket.close();
    } catch (const std::exception&) {
    }
  }
};

// ---- Coordinator ---------------------------------------------------------------

Coordinator::Coordinator(const workflow::Graph& graph, RunConfig config, CoordinatorOptions options)
    : config_(std::move(config)) {
  core_ = std::make_shared<Core>(std::move(options));
  auto& c = *core_;
  for (const auto& s : graph.stages) {
    c.stages.push_back(StagePlacement{s.name, s.labels});
    c.is_map.push_back(s.spec().pattern == Pattern::map);
    c.output_count.push_back(s.spec().outputs.size());
  }
  const auto& opt = c.options;
  loop_ = std::make_unique<Loop>(core_);
  auto& l = *loop_;

  // Keys: the workers' item servers accept the workers and us.
  std::vector<std::string> peer_keys;
  if (opt.curve) {
    std::istringstream lines(opt.curve->authorised.format());
    for (std::string line; std::getline(lines, line);)
      if (const auto key = line.substr(0, line.find(' ')); !key.empty()) peer_keys.push_back(key);
    peer_keys.push_back(opt.curve->server.public_key);
    c.server_public_key = opt.curve->server.public_key;
  }

  transport::ServerOptions ds;
  ds.endpoint = bind_for(opt.bind_host_endpoint, "data");
  if (opt.curve) ds.curve = transport::CurveServerKeys{opt.curve->server, opt.curve->authorised};
  ds.log = opt.log;
  l.item_server = std::make_unique<transport::ItemServer>(c.published, std::move(ds));
  c.data_endpoint = cluster::advertise_as(l.item_server->endpoint(), opt.advertise_host);

  if (opt.curve) l.zap = std::make_unique<security::ZapHandler>(l.ctx, opt.curve->authorised, opt.log);
  l.socket = zmq::socket_t(l.ctx, zmq::socket_type::router);
  l.socket.set(zmq::sockopt::linger, 0);
  l.socket.set(zmq::sockopt::router_mandatory, true);
  l.socket.set(zmq::sockopt::sndhwm, 10000);
  l.socket.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(l.limits.max_header_bytes));
  if (opt.curve) security::configure_curve_server(l.socket, *l.zap, opt.curve->server);
  l.task_endpoint = cluster::advertise_as(security::secure_bind(l.socket, bind_for(opt.bind_host_endpoint, "task")),
                               opt.advertise_host);

  config_.task_endpoint = l.task_endpoint;
  config_.data_endpoint = c.data_endpoint;
  config_.server_public_key = c.server_public_key;
  config_.peer_public_keys = peer_keys;

  membership::ServerOptions ms;
  ms.endpoint = opt.membership_endpoint;
  if (opt.curve) ms.curve = membership::CurveServerKeys{opt.curve->server, opt.curve->authorised};
  ms.heartbeat_period = opt.heartbeat_period;
  ms.missed_heartbeats = opt.missed_heartbeats;
  ms.config = config_.to_json();
  ms.log = opt.log;
  l.membership = std::make_unique<membership::MembershipServer>(std::move(ms));
  endpoint_ = cluster::advertise_as(l.membership->endpoint(), opt.advertise_host);
  // The socket is used only by the thread from now on.
  l.thread = std::thread([&l] { l.run(); });
}

Coordinator::~Coordinator() { finish(); }

const std::string& Coordinator::endpoint() const { return endpoint_; }

void Coordinator::wait_for_workers(std::size_t n, std::chrono::milliseconds timeout) {
  auto& c = *core_;
  std::unique_lock lock(c.m);
  c.expected = std::max(c.expected, n);
  const auto live = [&] {
    return static_cast<std::size_t>(
        std::count_if(c.workers.begin(), c.workers.end(), [](const auto& w) { return w.second.live; }));
  };
  if (c.cv.wait_for(lock, timeout, [&] { return live() >= n || c.closed; }) && !c.closed) return;
  std::string registered;
  for (const auto& [id, w] : c.workers)
    if (w.live) registered += (registered.empty() ? "" : ", ") + w.label();
  const std::size_t have = live();
  lock.unlock();
  std::string joined;
  if (loop_ && loop_->membership)
    for (const auto& w : loop_->membership->workers())
      joined += (joined.empty() ? "" : ", ") + worker_label(w.id, w.name);
  throw Error("only " + std::to_string(have) + " of " + std::to_string(n) + " workers registered within " +
              std::to_string(timeout.count()) + " ms at " + endpoint_ + "; registered: " +
              (registered.empty() ? "none" : registered) + "; joined membership: " + (joined.empty() ? "none" : joined) +
              " (a worker that joined but never registered could not load the workflow: see its log)");
}

std::vector<std::string> Coordinator::worker_names() const {
  std::lock_guard lock(core_->m);
  std::vector<std::string> names;
  for (const auto& [id, w] : core_->workers)
    if (w.live) names.push_back(w.view.name);
  return names;
}

bool Coordinator::takes(std::size_t stage) const {
  return stage < core_->is_map.size() && core_->is_map[stage] && !core_->closed;
}

void Coordinator::submit(runtime::RemoteTask task) {
  auto& c = *core_;
  {
    std::lock_guard lock(c.m);
    if (c.drained || c.closed) {
      c.log(LogLevel::debug, "coordinator: task '" + task.key + "' submitted after the run was drained; ignored");
      // Dropped below, outside the lock.
    } else {
      if (task.stage >= c.stages.size()) throw Error("coordinator: submit for unknown stage " + std::to_string(task.stage));
      auto job = std::make_shared<Job>();
      job->order = external_order_base + c.next_order++;
      job->stage = task.stage;
      job->key = std::move(task.key);
      job->inputs = std::move(task.inputs);
      job->done = std::move(task.done);
      c.ready[job->order] = std::move(job);
    }
  }
  c.wake();
}

void Coordinator::drain() {
  auto& c = *core_;
  std::vector<JobPtr> trash;
  {
    std::lock_guard lock(c.m);
    c.drained = true;
    for (auto& [o, j] : c.ready) trash.push_back(j);
    for (auto& [w, j] : c.assigned) trash.push_back(j);
    c.ready.clear();
    c.assigned.clear();
    for (auto& [o, j] : c.recomputing) trash.push_back(j);
    c.recomputing.clear();
    for (auto& [id, w] : c.workers) {
      w.tasks.clear();
      w.thieves.clear();
      w.steal_pending = false;
    }
    for (const auto& j : trash)
      for (const auto& id : j->published) c.published.take(id);
    c.cv.notify_all();
  }
  if (loop_) loop_->dispatcher.drop_all();
  trash.clear();  // outside the lock: inputs and credits go here
}

void Coordinator::finish() {
  std::lock_guard lock(finish_m_);
  if (finished_) return;
  finished_ = true;
  drain();
  core_->closed = true;
  core_->cv.notify_all();
  loop_.reset();  // bye on the task channel, then membership's bye; threads joined
  {
    std::lock_guard rl(core_->release_m);
    core_->releases.clear();
  }
}

CoordinatorStats Coordinator::stats() const {
  std::lock_guard lock(core_->m);
  CoordinatorStats s = core_->st;
  s.workers = static_cast<std::size_t>(
      std::count_if(core_->workers.begin(), core_->workers.end(), [](const auto& w) { return w.second.live; }));
  return s;
}

Json Coordinator::worker_report() const {
  std::lock_guard lock(core_->m);
  Json out = Json::array();
  for (const auto& [id, w] : core_->workers)
    out.push_back(Json{{"id", id}, {"name", w.view.name}, {"tasks", w.tasks_run}, {"busy_seconds", w.busy_seconds},
                       {"live", w.live}, {"slots", w.slots}});
  return out;
}

}  // namespace flowd::net::node

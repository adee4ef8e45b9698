// Job bookkeeping under Core::m: where a job is (ready, assigned, being
// recomputed), what happens to it when it fails or its node is lost, and
// recomputing a lost item from its lineage. Nothing here touches a socket:
// messages and callbacks go into the Turn, acted on after the lock.
#include <algorithm>

#include "net/node/coordinator_state.hpp"

namespace flowd::net::node {

std::string Coordinator::Core::holder_label(std::uint32_t id) const {
  const auto it = workers.find(id);
  return it == workers.end() ? "worker " + std::to_string(id) : it->second.label();
}

void Coordinator::Core::request_recompute(const std::shared_ptr<const ClusterItem>& item) {
  if (recomputing.contains(item.get())) return;
  if (!item->lineage().remakeable) {
    // A scan's, an all-pairs job's or a placed source's outputs: a re-run
    // would not make the same items (other steals, a source's state moved on).
    item->fail("its holder " + item->holder() +
               " is gone, and items a scan, all-pairs or placed source stage made on a worker node are not made again");
    log(LogLevel::error, "item '" + item->lineage().key + "' of stage '" + stages[item->lineage().stage].name +
                             "' is lost: its holder " + item->holder() +
                             " is gone, and what a scan, all-pairs or placed source stage made is not recomputed");
    cv.notify_all();
    return;
  }
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
  log(LogLevel::info, "recomputing item '" + job->key + "' (output " + std::to_string(job->emission) + " of stage '" +
                          stages[job->stage].name + "'): its holder " + item->holder() + " is gone");
}

void Coordinator::Core::unpublish(Job& job, std::vector<std::function<void()>>& trash) {
  for (const auto& id : job.published)
    if (auto item = published.take(id)) trash.push_back([item = std::move(item)] {});
  job.published.clear();
}

void Coordinator::Core::forget(JobPtr job, Turn& t) {
  ready.erase(job->order);
  if (job->wire_id) {
    if (const auto it = assigned.find(job->wire_id); it != assigned.end() && it->second == job) assigned.erase(it);
    if (const auto w = workers.find(job->worker); w != workers.end()) w->second.tasks.erase(job->wire_id);
  }
  unpublish(*job, t.calls);
  if (job->target) recomputing.erase(job->target.get());
  t.calls.push_back([job] {});
}

void Coordinator::Core::fail_job(JobPtr job, const std::string& message, const std::string& node, Turn& t,
                                 bool node_lost) {
  forget(job, t);
  if (job->internal()) {
    job->target->fail(message);
    log(LogLevel::error, "recomputing item '" + job->key + "' failed: " + message);
    cv.notify_all();
    return;
  }
  ++st.failed;
  runtime::RemoteResult r;
  r.ok = false;
  r.error = message;
  r.key = job->key;
  r.node = node;
  r.node_lost = node_lost;
  t.calls.push_back([done = std::move(job->done), r = std::move(r)]() mutable {
    if (done) done(std::move(r));
  });
}

void Coordinator::Core::requeue(JobPtr job, std::string why, Turn& t, bool counts) {
  const std::string node = holder_label(job->worker);
  if (counts && job->attempt + 1 >= options.max_attempts) {
    fail_job(job,
             "task '" + job->key + "' of stage '" + stages[job->stage].name + "' failed " +
                 std::to_string(job->attempt + 1) + " times; last on " + node + ": " + why,
             node, t);
    return;
  }
  if (const auto it = assigned.find(job->wire_id); it != assigned.end() && it->second == job) assigned.erase(it);
  if (const auto w = workers.find(job->worker); w != workers.end()) w->second.tasks.erase(job->wire_id);
  unpublish(*job, t.calls);
  if (counts) ++job->attempt;
  job->worker = 0;
  job->wire_id = 0;
  ready[job->order] = job;
  ++st.reassigned;
}

std::set<std::uint64_t> Coordinator::Core::suspects(const WorkerState& w, const WorkerLoss& loss) const {
  std::set<std::uint64_t> out;
  if (!loss.crashed) return out;
  if (loss.running) {
    for (const auto wid : w.tasks)
      if (const auto j = assigned.find(wid); j != assigned.end() && j->second->key == loss.running->second &&
                                             stages[j->second->stage].name == loss.running->first)
        out.insert(wid);
    if (!out.empty()) return out;
  }
  // Wire ids grow with each assignment and a node starts its tasks in the
  // order they came, so the ones running were among the oldest it held.
  for (const auto wid : w.tasks) {
    if (out.size() >= std::max<std::uint32_t>(1, w.slots)) break;
    out.insert(wid);
  }
  return out;
}

bool Coordinator::Core::pull_failed(std::uint32_t holder) {
  const auto it = workers.find(holder);
  if (it == workers.end() || !it->second.live || gone.contains(holder)) return false;
  auto& w = it->second;
  const auto now = Clock::now();
  if (!w.unreachable_since) {
    w.unreachable_since = now;
    log(LogLevel::warning, "pulls from " + w.label() + " at " + w.data_endpoint +
                               " get no answer; it stays a member while it heartbeats, and is cut off if nothing can "
                               "be pulled from it for " + std::to_string(loss_bound().count()) + " ms");
    return true;
  }
  if (now - *w.unreachable_since >= loss_bound() &&
      std::none_of(cut_off.begin(), cut_off.end(), [&](const auto& c) { return c.first == holder; })) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - *w.unreachable_since).count();
    cut_off.emplace_back(holder, "its items could not be pulled for " + std::to_string(ms) + " ms");
    wake();
  }
  return true;
}

void Coordinator::Core::pulled_from(std::uint32_t holder) {
  if (const auto it = workers.find(holder); it != workers.end() && it->second.unreachable_since) {
    it->second.unreachable_since.reset();
    log(LogLevel::info, "pulls from " + it->second.label() + " succeed again");
  }
}

void Coordinator::Core::cut_off_unreachable(Turn& t) {
  for (auto& [id, why] : std::exchange(cut_off, {})) {
    const auto it = workers.find(id);
    if (it == workers.end() || !it->second.live) continue;
    // It still heartbeats: the bye tells it to leave rather than wait.
    t.out.emplace_back(it->second.routing, wire::Bye{"cut off: " + why});
    worker_gone(id, {"cut off: " + why}, t);
  }
}

void Coordinator::Core::worker_gone(std::uint32_t id, const WorkerLoss& loss, Turn& t) {
  if (!gone.insert(id).second) return;
  const auto it = workers.find(id);
  if (it == workers.end()) {
    cv.notify_all();
    return;
  }
  auto& w = it->second;
  w.live = false;
  // Pulls from it stop at once, everywhere: a task waiting on one fails
  // now, and is run again once its inputs are made again.
  for (const auto& [other_id, other] : workers)
    if (other.live && other_id != id)
      t.out.emplace_back(other.routing, wire::HolderLost{id, w.data_endpoint, loss.reason});
  by_routing.erase(w.routing);
  const std::string how = w.label() + " " + loss.reason;
  const auto blamed = suspects(w, loss);
  const std::vector<std::uint64_t> tasks(w.tasks.begin(), w.tasks.end());
  std::size_t poisoned = 0;
  for (const auto wid : tasks) {
    const auto j = assigned.find(wid);
    if (j == assigned.end()) continue;
    const JobPtr job = j->second;
    if (blamed.contains(wid)) job->losses.push_back(how);
    if (job->losses.size() < poison_losses) {
      requeue(job, how, t);
      continue;
    }
    ++poisoned;
    std::string list;
    for (const auto& l : job->losses)
      list += (list.empty() ? "" : "; ") + l;
    fail_job(job,
             "poison item: " + std::to_string(job->losses.size()) + " workers died while running it (" + list +
                 "); it is not run again",
             w.label(), t);
  }
  w.tasks.clear();
  w.credit = 0;
  for (const auto thief : w.thieves)
    if (const auto th = workers.find(thief); th != workers.end()) th->second.steal_pending = false;
  w.thieves.clear();
  log(LogLevel::warning, how + "; " + std::to_string(tasks.size() - poisoned) +
                             " of its tasks go to other nodes, and the items it held are recomputed when needed" +
                             (poisoned ? "; " + std::to_string(poisoned) + " failed as poison items" : ""));
  cv.notify_all();
}

}  // namespace flowd::net::node

// Which ready task goes to which node (assignment.hpp decides, this applies
// it to the live state), and work stealing between nodes (steal_policy.hpp
// says when a steal pays). Called by the socket thread under Core::m once
// per turn.
#include <algorithm>

#include "net/node/coordinator_state.hpp"

namespace flowd::net::node {

namespace {

// Ready tasks considered per scheduling pass: keeps a pass cheap with a huge
// backlog; the oldest are considered (internal recomputes come first).
constexpr std::size_t max_scan = 4096;

std::uint64_t bytes_of(const Item& item) {
  if (const auto* a = std::get_if<Array>(&item.value)) return a->nbytes();
  return 0;
}

}  // namespace

std::string Coordinator::Loop::cannot_run(std::size_t stage) const {
  const auto& sp = core.stages[stage];
  std::string why = "stage '" + sp.name + "' cannot run on any live worker";
  std::string each;
  for (const auto& [id, w] : core.workers) {
    if (!w.live) {
      each += "; " + w.label() + " is gone";
      continue;
    }
    const auto r = w.unavailable.find(sp.name);
    each += "; " + w.label() + ": " + why_not(sp, w.view, r == w.unavailable.end() ? std::string() : r->second);
  }
  if (core.workers.empty()) each = "; no worker has registered";
  return why + each;
}

void Coordinator::Loop::assign(JobPtr job, WorkerState& w, Turn& t) {
  const std::uint64_t wire_id = core.next_wire++;
  wire::AssignTask a;
  a.task_id = wire_id;
  a.stage = core.stages[job->stage].name;
  TaskSpec spec;
  spec.key = job->key;
  spec.attempt = job->attempt;
  spec.stealable = !job->moved;
  std::vector<wire::ItemId> published;
  // A job that cannot be described (a bug, not the peer's doing) fails
  // here, once, rather than on every turn that tries to assign it.
  try {
    for (std::size_t p = 0; p < job->inputs.size(); ++p) {
      const auto& in = job->inputs[p];
      if (!in) continue;
      wire::ItemRef ref;
      if (in->remote) {
        const auto ci = std::dynamic_pointer_cast<const ClusterItem>(in->remote);
        const auto where = ci->location();
        ref = wire::ItemRef{where.id, where.holder, where.bytes};
        if (const auto h = core.workers.find(where.holder); h != core.workers.end())
          spec.peers[where.holder] = PeerAddress{h->second.data_endpoint, h->second.public_key};
      } else {
        // A value of this process: served by our item server under a name of
        // this assignment; the aliasing pointer keeps the Carried alive.
        ref.id = wire::ItemId{in->item.meta.key, static_cast<std::int64_t>(wire_id), static_cast<std::int64_t>(p)};
        ref.holder = 0;
        ref.bytes = bytes_of(in->item);
        core.published.put(ref.id, std::shared_ptr<const Item>(in, &in->item));
        published.push_back(ref.id);
        spec.peers[0] = PeerAddress{core.data_endpoint, core.server_public_key};
      }
      a.inputs.push_back(std::move(ref));
      spec.ports.push_back(job->ports.empty() ? static_cast<std::uint32_t>(p) : job->ports.at(p));
    }
    spec.scan = job->scan;
    // An all-pairs job's peer-cache hints name nodes that may hold none of
    // its inputs: the job needs their addresses too.
    if (job->scan.is_object())
      for (const auto& h : job->scan.value("peer_cache", Json::array()))
        for (const auto& id : h.at(1))  // [item, [candidate nodes]]
          if (const auto hw = core.workers.find(id.get<std::uint32_t>()); hw != core.workers.end() && hw->second.live)
            spec.peers[hw->first] = PeerAddress{hw->second.data_endpoint, hw->second.public_key};
    a.spec = spec.to_json();
  } catch (const std::exception& e) {
    for (const auto& id : published)
      if (auto item = core.published.take(id)) t.calls.push_back([item = std::move(item)] {});
    core.fail_job(job, "task '" + job->key + "' of stage '" + a.stage + "' cannot be sent: " + e.what(), "", t);
    return;
  }
  job->published = std::move(published);
  if (const auto enc = wire::encode(0, a, limits); !enc) {
    core.fail_job(job, "task '" + job->key + "' of stage '" + a.stage + "' cannot be sent: " + enc.error().describe(),
                  "", t);
    return;
  }
  core.ready.erase(job->order);
  job->worker = w.view.id;
  job->wire_id = wire_id;
  core.assigned[wire_id] = job;
  w.tasks.insert(wire_id);
  --w.credit;
  ++core.st.assigned;
  t.out.emplace_back(w.routing, std::move(a));
}

void Coordinator::Loop::schedule(Turn& t) {
  if (core.drained || core.closed) return;
  std::vector<NodeView> live;
  for (const auto& [id, w] : core.workers)
    if (w.live) live.push_back(w.view);
  const auto best = best_preferences(core.stages, live);
  // A task waits for a better node only while that node is asking for work
  // too; otherwise an idle node with a fallback label takes it now
  // (Constellation: an executor takes every match of its first context,
  // then of later ones, rather than idling).
  std::vector<NodeView> asking;
  for (const auto& [id, w] : core.workers)
    if (w.live && w.credit > 0) asking.push_back(w.view);
  const auto best_now = best_preferences(core.stages, asking);
  const auto ranks_now = best_ranks(core.stages, asking, best_now);
  const bool may_give_up = core.ever_registered >= std::max<std::size_t>(core.expected, 1);

  std::vector<ReadyTask> cands;
  std::vector<JobPtr> cand_jobs;
  std::vector<std::pair<JobPtr, std::string>> to_fail, pin_lost;
  std::vector<std::shared_ptr<const ClusterItem>> to_recompute;
  std::size_t scanned = 0;
  std::vector<JobPtr> pinned;
  for (const auto& [order, job] : core.ready) {
    if (scanned++ >= max_scan) break;
    if (job->pin) {
      const auto w = core.workers.find(*job->pin);
      if (w == core.workers.end() || !w->second.live) {
        pin_lost.emplace_back(job, "task '" + job->key + "' of stage '" + core.stages[job->stage].name +
                                       "' must run on " + core.holder_label(*job->pin) + ", which is gone");
        continue;
      }
    } else if (!best[job->stage]) {
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
      if (core.gone.contains(where.holder)) {
        blocked = true;
        to_recompute.push_back(ci);
        continue;
      }
      rt.inputs.emplace_back(where.holder, where.bytes);
    }
    if (!bad.empty())
      to_fail.emplace_back(job, "task '" + job->key + "' of stage '" + core.stages[job->stage].name + "': " + bad);
    else if (!blocked && job->pin) {
      pinned.push_back(job);
    } else if (!blocked) {
      cands.push_back(std::move(rt));
      cand_jobs.push_back(job);
    }
  }
  for (const auto& [job, why] : to_fail)
    core.fail_job(job, why, "", t);
  for (const auto& [job, why] : pin_lost)
    core.fail_job(job, why, "", t, true);
  for (const auto& ci : to_recompute)
    core.request_recompute(ci);
  // New recomputes are considered on the next turn, right away.
  if (!to_recompute.empty()) core.wake();

  // A scan rank's job waits for its own node.
  for (const auto& job : pinned)
    if (auto& w = core.workers.at(*job->pin); w.live && w.credit > 0) assign(job, w, t);
  for (auto& [id, w] : core.workers) {
    if (!w.live) continue;
    while (w.credit > 0 && !cands.empty()) {
      const auto i = choose_task(cands, w.view, core.stages, best_now, core.options.locality, ranks_now);
      if (!i) break;
      const JobPtr job = cand_jobs[*i];
      cands.erase(cands.begin() + static_cast<std::ptrdiff_t>(*i));
      cand_jobs.erase(cand_jobs.begin() + static_cast<std::ptrdiff_t>(*i));
      assign(job, w, t);
    }
  }
  if (core.options.steal) steal(live, t);
}

std::vector<HeldTask> Coordinator::Loop::held_for_steal(const WorkerState& victim, const WorkerState& thief) const {
  std::vector<HeldTask> held;
  // Wire ids ascend with assignment: the order the victim starts them.
  for (const auto wid : victim.tasks) {
    const auto j = core.assigned.find(wid);
    if (j == core.assigned.end()) continue;
    const Job& job = *j->second;
    HeldTask h;
    if (const auto& st = core.stage_seconds[job.stage]; st.n > 0) h.seconds = st.mean;
    h.stealable = !job.moved && placement_preference(core.stages[job.stage], thief.view).has_value();
    for (const auto& in : job.inputs) {
      if (!in || !in->remote) continue;  // a value of ours: either would pull it
      const auto ci = std::dynamic_pointer_cast<const ClusterItem>(in->remote);
      if (!ci) continue;
      const auto where = ci->location();
      const auto bytes = static_cast<std::int64_t>(where.bytes);
      h.extra_bytes += (where.holder == thief.view.id ? 0 : bytes) - (where.holder == victim.view.id ? 0 : bytes);
    }
    held.push_back(h);
  }
  return held;
}

void Coordinator::Loop::steal(const std::vector<NodeView>& live, Turn& t) {
  const auto now = Clock::now();
  for (auto& [id, thief] : core.workers) {
    if (!thief.live || thief.credit == 0 || thief.steal_pending || now < thief.next_steal) continue;
    // A node with every slot busy gains nothing from holding more.
    const auto idle = idle_slots(thief.tasks.size(), thief.slots);
    if (idle == 0) continue;
    std::vector<NodeView> victims;
    std::vector<std::uint32_t> worth;
    for (const auto& v : live) {
      if (v.id == id) continue;
      const auto& vw = core.workers.at(v.id);
      if (vw.tasks.size() <= vw.slots) continue;  // nothing queued there
      if (const auto pays = tasks_that_pay(held_for_steal(vw, thief), vw.slots, core.options.steal_costs); pays > 0) {
        victims.push_back(v);
        worth.push_back(pays);
      }
    }
    const auto pick = choose_victim(thief.view, victims, core.options.steal_seed + core.steal_count, worth);
    if (!pick) continue;
    auto& victim = core.workers.at(victims[*pick].id);
    const std::uint32_t want = tasks_to_ask(worth[*pick], idle, thief.credit);
    ++core.steal_count;
    ++core.st.steal_requests;
    thief.steal_pending = true;
    thief.steal_sent = now;
    victim.thieves.push_back(id);
    core.log(LogLevel::debug, "steal: " + thief.label() + " has " + std::to_string(idle) + " idle slot(s); " +
                                  victim.label() + " holds " + std::to_string(victim.tasks.size()) + " task(s) on " +
                                  std::to_string(victim.slots) + " slot(s), " + std::to_string(worth[*pick]) +
                                  " worth moving; asking for " + std::to_string(want));
    t.out.emplace_back(victim.routing, wire::StealRequest{want, id});
  }
}

}  // namespace flowd::net::node

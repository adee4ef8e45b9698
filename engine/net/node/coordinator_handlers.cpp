// One function per task-channel message a worker sends: hello
// (registration), request_work, task_done, task_failed, steal_reply and bye.
// Called by the socket thread under Core::m; what they decide to send or call
// goes into the Turn.
#include <algorithm>
#include <optional>

#include "net/cluster/item_bind.hpp"
#include "net/node/coordinator_state.hpp"
#include "net/security/policy.hpp"

namespace flowd::net::node {

namespace {

// Credit a worker may accumulate: a bound on what a confused peer can make
// us send it.
constexpr std::uint64_t max_credit = 1u << 20;
// After an empty steal reply, the thief waits this long before asking again,
// so an idle node does not spin on busy victims.
constexpr auto steal_backoff = std::chrono::milliseconds(100);

// A task's inputs as its outputs' lineage keeps them: the items, for a
// re-run, without their source credits. An output held without credits (by a
// scan or a consecutive-pairs stage until its series is complete) must not
// hold the source window through its lineage: that stalled every cluster run
// of a scan over more items than the window (2026-11-27).
std::vector<runtime::CarriedPtr> without_credits(const std::vector<runtime::CarriedPtr>& inputs) {
  std::vector<runtime::CarriedPtr> out;
  out.reserve(inputs.size());
  for (const auto& c : inputs)
    out.push_back(!c || c->credits.empty()
                      ? c
                      : std::make_shared<const runtime::Carried>(runtime::Carried{c->item, {}, c->where, c->remote}));
  return out;
}

}  // namespace

void Coordinator::Loop::on_message(std::vector<zmq::message_t>& frames, Turn& t) {
  if (frames.empty()) return;
  const std::string peer = frames[0].to_string();
  const bool curve = core.options.curve.has_value();
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
  const auto r = core.by_routing.find(peer);
  if (r == core.by_routing.end()) {
    reject_locked("rejected " + std::string(wire::to_string(m->header.type)) + " from " +
                  zio::peer_name(frames, curve) + ", which has not registered");
    return;
  }
  auto& w = core.workers.at(r->second);
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
          core.worker_gone(w.view.id,
                           {"left (bye on the task channel" + (b.reason.empty() ? "" : ": " + b.reason) + ")"}, t);
        } else {
          reject_locked("rejected " + std::string(wire::to_string(m->header.type)) + " from " + w.label() +
                        ": the task channel takes hello, request_work, task_done, task_failed, steal_reply and bye");
        }
      },
      m->body);
}

namespace {

// Why peers could not pull from a worker that joined from `peer_address`
// and serves its items at `data_endpoint`: a loopback endpoint of a worker
// on another host (a worker started with --bind tcp://127.0.0.1:*).
std::optional<std::string> unreachable_from_elsewhere(const std::string& data_endpoint,
                                                      const std::string& peer_address) {
  bool local_endpoint = false;
  try {
    local_endpoint = security::is_local_endpoint(data_endpoint);
  } catch (const std::exception& e) {
    return "its item endpoint '" + data_endpoint + "' does not parse: " + e.what();
  }
  if (!local_endpoint || peer_address.empty()) return std::nullopt;
  std::vector<cluster::Interface> own;
  try {
    own = cluster::ipv4_interfaces();
  } catch (const std::exception&) {
    return std::nullopt;  // cannot tell: let it join, as before
  }
  if (cluster::on_this_machine(peer_address, own)) return std::nullopt;
  return "it joined from " + peer_address + ", another host, but serves its items at " + data_endpoint +
         ", which only its own host can reach; start it without --bind (it then binds the address it reaches "
         "the coordinator from) or with --bind tcp://ADDRESS:* on an address the other nodes reach";
}

}  // namespace

void Coordinator::Loop::on_hello(const std::string& peer, const wire::Hello& h, std::vector<zmq::message_t>& frames,
                                 Turn& t) {
  Registration r;
  try {
    r = Registration::from_json(h.info);
  } catch (const std::exception& e) {
    reject_locked("rejected hello from " + zio::peer_name(frames, core.options.curve.has_value()) + ": " + e.what());
    t.out.emplace_back(peer, wire::Bye{std::string("bad registration: ") + e.what()});
    return;
  }
  if (core.gone.contains(r.worker_id)) {
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
                  zio::peer_name(frames, core.options.curve.has_value()) + ": not a member (no welcome with that id)");
    t.out.emplace_back(peer, wire::Bye{"not a member: say hello to membership first"});
    return;
  }
  if (core.options.curve && frames.size() > 1) {
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
  const std::string data_endpoint = h.data_endpoint.empty() ? member->data_endpoint : h.data_endpoint;
  if (const auto why = unreachable_from_elsewhere(data_endpoint, member->peer_address)) {
    reject_locked("rejected registration of worker " + std::to_string(r.worker_id) + " (" + member->name + "): " + *why);
    t.out.emplace_back(peer, wire::Bye{*why});
    return;
  }
  auto [it, fresh] = core.workers.try_emplace(r.worker_id);
  auto& w = it->second;
  if (!fresh) core.by_routing.erase(w.routing);  // reconnected: new routing id
  w.view.id = r.worker_id;
  w.view.name = member->name;
  w.routing = peer;
  // A worker binds its item server after the welcome (under CURVE it needs
  // the peer keys the welcome brings), so the task-channel hello carries
  // the address.
  w.data_endpoint = data_endpoint;
  w.public_key = r.server_public_key;
  w.slots = h.cpu_slots + h.gpu_slots;
  w.live = true;
  const auto labels = workflow::parse_node_labels(r.labels, "/labels");
  if (labels.ok())
    w.view.labels = labels.value;
  else
    core.log(LogLevel::warning, w.label() + " sent labels that do not parse (" + labels.errors.front().pointer + ": " +
                                    labels.errors.front().message + "); it is treated as unlabelled");
  if (fresh) {
    for (const auto& [stage, reason] : r.unavailable) {
      w.view.unavailable.insert(stage);
      w.unavailable[stage] = reason;
      core.log(LogLevel::warning,
               w.label() + " cannot run stage '" + stage + "': " + reason + "; it gets no such tasks");
    }
    ++core.ever_registered;
    core.log(LogLevel::info, w.label() + " registered on the task channel");
  }
  core.by_routing[peer] = r.worker_id;
  core.cv.notify_all();
}

void Coordinator::Loop::reject_locked(const std::string& line) {
  ++core.st.rejected;
  core.reject_log(core.options.log, "coordinator task channel: " + line);
}

void Coordinator::Loop::release_outputs(std::uint32_t holder, const std::vector<wire::TaskOutput>& outputs, Turn& t) {
  wire::ReleaseItems rel;
  for (const auto& o : outputs)
    rel.ids.push_back(o.ref.id);
  if (!rel.ids.empty())
    if (const auto w = core.workers.find(holder); w != core.workers.end() && w->second.live)
      t.out.emplace_back(w->second.routing, std::move(rel));
}

void Coordinator::Loop::on_done(WorkerState& w, const wire::TaskDone& d, Turn& t) {
  const auto it = core.assigned.find(d.task_id);
  if (it == core.assigned.end() || it->second->worker != w.view.id) {
    // Reassigned after a loss, stolen, or the run was drained: the
    // outputs are nobody's.
    core.log(LogLevel::debug, "coordinator: task_done for task " + std::to_string(d.task_id) + " from " + w.label() +
                                  ", which no longer runs it; releasing its outputs");
    release_outputs(w.view.id, d.outputs, t);
    return;
  }
  const JobPtr job = it->second;
  const auto& stage = core.stages[job->stage];
  for (const auto& o : d.outputs)
    if (o.port >= core.output_count[job->stage]) {
      release_outputs(w.view.id, d.outputs, t);
      core.fail_job(job,
                    "on " + w.label() + ": task '" + job->key + "' emitted on output port " + std::to_string(o.port) +
                        ", but stage '" + stage.name + "' has " + std::to_string(core.output_count[job->stage]),
                    w.label(), t);
      return;
    }
  // Its inputs were pulled: their holders serve.
  for (const auto& in : job->inputs)
    if (in && in->remote)
      if (const auto ci = std::dynamic_pointer_cast<const ClusterItem>(in->remote))
        if (const auto h = ci->location().holder; h != w.view.id) core.pulled_from(h);
  ++w.tasks_run;
  w.busy_seconds += std::max(0.0, d.seconds);
  core.stage_seconds[job->stage].add(std::max(0.0, d.seconds));
  if (job->internal()) {
    const auto& target = job->target;
    if (job->emission < d.outputs.size()) {
      const auto& o = d.outputs[job->emission];
      target->relocate(ItemLocation{w.view.id, w.label(), o.ref.id, o.ref.bytes, {}});
      std::vector<wire::TaskOutput> others;
      for (std::size_t i = 0; i < d.outputs.size(); ++i)
        if (i != job->emission) others.push_back(d.outputs[i]);
      release_outputs(w.view.id, others, t);
      core.forget(job, t);
      core.log(LogLevel::info, "recomputed item '" + job->key + "' on " + w.label());
      core.cv.notify_all();
    } else {
      release_outputs(w.view.id, d.outputs, t);
      core.fail_job(job,
                    "its re-run on " + w.label() + " emitted " + std::to_string(d.outputs.size()) + " items, not the " +
                        std::to_string(job->emission + 1) + " of the first run",
                    w.label(), t);
    }
    return;
  }
  ++core.st.done;
  runtime::RemoteResult r;
  r.ok = true;
  r.node = w.view.name;
  r.seconds = d.seconds;
  // The items keep the core alive as their host, past the Coordinator.
  const auto host = std::static_pointer_cast<ItemHost>(core.shared_from_this());
  const auto lineage_inputs = without_credits(job->inputs);
  for (std::uint32_t i = 0; i < d.outputs.size(); ++i) {
    const auto& o = d.outputs[i];
    auto item = std::make_shared<const ClusterItem>(host, ItemLocation{w.view.id, w.label(), o.ref.id, o.ref.bytes, {}},
                                                    Lineage{job->stage, job->key, lineage_inputs, i, job->scan.is_null()});
    r.outputs.push_back(runtime::RemoteOutput{o.port, o.meta, std::move(item)});
  }
  core.forget(job, t);
  t.calls.push_back([done = std::move(job->done), r = std::move(r)]() mutable {
    if (done) done(std::move(r));
  });
}

void Coordinator::Loop::on_failed(WorkerState& w, const wire::TaskFailed& f, Turn& t) {
  const auto it = core.assigned.find(f.task_id);
  if (it == core.assigned.end() || it->second->worker != w.view.id) {
    core.log(LogLevel::debug, "coordinator: task_failed for task " + std::to_string(f.task_id) + " from " + w.label() +
                                  ", which no longer runs it");
    return;
  }
  const JobPtr job = it->second;
  // A holder that did not answer: not the task's fault. It is run again; by
  // then the holder answers, or it is gone and the inputs it held are made
  // again elsewhere (Core::pull_failed bounds the wait). Anything else (the
  // coordinator's own item server, say) counts as a failed attempt.
  bool holder_to_blame = false;
  if (f.retryable)
    for (const auto h : f.unreachable)
      if (core.pull_failed(h) || core.gone.contains(h)) holder_to_blame = true;  // every holder noted
  if (holder_to_blame) {
    core.cut_off_unreachable(t);
    core.log(LogLevel::info, "task '" + job->key + "' of stage '" + core.stages[job->stage].name + "' on " + w.label() +
                                 " could not pull an input and is run again: " + f.message);
    core.requeue(job, f.message, t, false);
    return;
  }
  if (f.retryable) {
    core.log(LogLevel::info, "task '" + job->key + "' of stage '" + core.stages[job->stage].name + "' on " + w.label() +
                                 " failed and is run again: " + f.message);
    core.requeue(job, f.message, t);
    return;
  }
  core.fail_job(job, "on " + w.label() + ": " + f.message, w.view.name, t);
}

void Coordinator::Loop::on_steal_reply(WorkerState& victim, const wire::StealReply& s, Turn& t) {
  if (victim.thieves.empty()) {
    reject_locked("steal_reply from " + victim.label() + ", which was asked for none");
    return;
  }
  const std::uint32_t thief_id = victim.thieves.front();
  victim.thieves.pop_front();
  const auto th = core.workers.find(thief_id);
  WorkerState* thief = th != core.workers.end() && th->second.live ? &th->second : nullptr;
  if (thief) {
    thief->steal_pending = false;
    if (s.task_ids.empty()) thief->next_steal = Clock::now() + steal_backoff;
  }
  if (s.task_ids.empty()) ++core.st.steal_replies_empty;
  std::uint64_t moved = 0;
  for (const auto wid : s.task_ids) {
    const auto it = core.assigned.find(wid);
    // Done meanwhile, or never this victim's: nothing to move.
    if (it == core.assigned.end() || it->second->worker != victim.view.id) continue;
    const JobPtr job = it->second;
    core.assigned.erase(it);
    victim.tasks.erase(wid);
    core.unpublish(*job, t.calls);
    job->worker = 0;
    job->wire_id = 0;
    job->moved = true;
    core.ready[job->order] = job;
    ++core.st.stolen;
    ++moved;
    if (thief && thief->credit > 0 && placement_preference(core.stages[job->stage], thief->view))
      assign(job, *thief, t);
  }
  if (thief) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - thief->steal_sent).count();
    core.log(LogLevel::debug, "steal: " + victim.label() + " gave up " + std::to_string(moved) + " task(s) for " +
                                  thief->label() + " (" + std::to_string(us) + " us after the request)");
  }
  if (core.options.recorder && core.options.recorder->enabled())
    core.options.recorder->counter("tasks stolen", static_cast<double>(core.st.stolen));
}

}  // namespace flowd::net::node

// An assigned task's life on the node: checked against the graph when it
// arrives, queued until a slot is free, handed to a fetcher, and, once the
// TaskHost ran it, its outputs stored and its end reported to the
// coordinator by the socket thread.
#include <algorithm>

#include "net/node/worker_node_impl.hpp"

namespace flowd::net::node {

std::uint64_t payload_bytes(const Item& item) {
  switch (kind_of(item.value)) {
    case ValueKind::none: return 0;
    case ValueKind::array: return item.array().nbytes();
    case ValueKind::json: return item.json().dump().size();
    case ValueKind::table: {
      auto out = wire::OutgoingItem::make(item, 0);
      return out ? out->payload_bytes() : 0;
    }
  }
  return 0;
}

void WorkerNode::Impl::on_assign(const wire::AssignTask& a) {
  if (stopping) return;
  if (queue->holds(a.task_id)) {
    reject("ignored a second assign_task for task " + std::to_string(a.task_id) + ", which this node holds");
    return;
  }
  const std::string what = "task " + std::to_string(a.task_id) + " of stage '" + a.stage + "'";
  TaskSpec spec;
  try {
    spec = TaskSpec::from_json(a.spec);
  } catch (const std::exception& e) {
    queue->note_assignment();
    fail(a.task_id, false, what + ": malformed assignment: " + e.what());
    return;
  }
  bool retryable = false;
  if (const auto why = check(a, spec, retryable); !why.empty()) {
    queue->note_assignment();
    fail(a.task_id, retryable, what + (retryable ? ": " : ": malformed assignment: ") + why);
    return;
  }
  queue->add(QueuedTask{a.task_id, a.stage, a.inputs, std::move(spec)});
}

std::string WorkerNode::Impl::check(const wire::AssignTask& a, const TaskSpec& spec, bool& retryable) const {
  retryable = false;
  const auto* stage = graph.find(a.stage);
  if (!stage) {
    if (const auto it = unavailable.find(a.stage); it != unavailable.end()) {
      retryable = true;  // another node may be able to
      return "this node cannot run stage '" + a.stage + "': " + it->second;
    }
    return "stage '" + a.stage + "' is not a map stage of the run";
  }
  if (spec.ports.size() != a.inputs.size())
    return "the spec names " + std::to_string(spec.ports.size()) + " port(s) for " + std::to_string(a.inputs.size()) +
           " input(s)";
  const std::size_t ports = stage->spec().inputs.size();
  std::vector<bool> seen(ports, false);
  for (std::size_t i = 0; i < a.inputs.size(); ++i) {
    const auto p = spec.ports[i];
    if (p >= ports)
      return "input " + std::to_string(i) + " goes to port " + std::to_string(p) + ", but stage '" + a.stage +
             "' has " + std::to_string(ports) + " input port(s)";
    if (seen[p] && spec.scan.is_null()) return "two inputs go to port " + std::to_string(p);
    seen[p] = true;
    const auto holder = a.inputs[i].holder;
    if (holder != worker_id && !spec.peers.contains(holder))
      return "no address for holder " + std::to_string(holder) + " of input " + wire::describe(a.inputs[i].id);
  }
  return {};
}

void WorkerNode::Impl::start_tasks() {
  while (auto t = queue->start_next())
    pool->push(std::move(*t));
}

void WorkerNode::Impl::drain_completions() {
  std::vector<Completion> batch;
  {
    std::lock_guard lock(done_m);
    batch.swap(done);
  }
  for (auto& c : batch)
    report(std::move(c));
}

void WorkerNode::Impl::report(Completion c) {
  if (!queue->finish(c.task_id)) return;  // reported already (shutting down)
  if (!c.ok) {
    fail(c.task_id, c.retryable, c.message, std::move(c.unreachable));
    return;
  }
  wire::TaskDone d{c.task_id, c.seconds, c.outputs};
  if (auto msg = wire::encode(++seq, d, limits)) {
    outbox.push_back(std::move(*msg));
    ++tasks_run;
  } else {
    // E.g. attrs beyond the wire's limits: the outputs cannot be
    // described, so they are useless here.
    for (const auto& o : c.outputs)
      store->erase(o.ref.id);
    fail(c.task_id, false,
         "task " + std::to_string(c.task_id) + ": its outputs cannot be sent: " + msg.error().describe());
  }
}

void WorkerNode::Impl::complete(Completion c) {
  {
    std::lock_guard lock(done_m);
    done.push_back(std::move(c));
  }
  wake.signal();
}

void WorkerNode::Impl::hosted(std::uint64_t task_id, const std::string& key, const std::string& stage,
                              runtime::HostedResult r) {
  Completion c;
  c.task_id = task_id;
  c.seconds = r.seconds;
  if (!r.ok) {
    c.message = "stage '" + stage + "' failed on item '" + (r.key.empty() ? key : r.key) + "': " + r.error;
    complete(std::move(c));
    return;
  }
  try {
    for (std::size_t i = 0; i < r.outputs.size(); ++i) {
      auto& [port, item] = r.outputs[i];
      wire::TaskOutput o;
      o.ref.id = output_id(key, task_id, static_cast<std::uint32_t>(i));
      o.ref.holder = worker_id;
      o.ref.bytes = payload_bytes(item);
      o.port = static_cast<std::uint32_t>(port);
      o.meta = item.meta;
      store->put(o.ref.id, std::make_shared<const Item>(std::move(item)));
      c.outputs.push_back(std::move(o));
    }
    c.ok = true;
  } catch (const std::exception& e) {
    for (const auto& o : c.outputs)
      store->erase(o.ref.id);
    c.outputs.clear();
    c.message = "stage '" + stage + "' on item '" + key + "': cannot keep its outputs: " + e.what();
  }
  complete(std::move(c));
}

}  // namespace flowd::net::node

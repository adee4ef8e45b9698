#include "runtime/sub_graph.hpp"

#include "runtime/task_runner.hpp"
#include "workflow/validate.hpp"

namespace flowd::runtime::detail {

namespace {

std::string port_names(const std::vector<PortSpec>& ports) {
  std::string s;
  for (const auto& p : ports) s += (s.empty() ? "" : ", ") + p.name;
  return s.empty() ? "none" : s;
}

}  // namespace

SubOp& SubOps::get(const workflow::StageNode& parent, std::string_view op, const Json& params) {
  const auto handle = parent.uses.find(op);
  if (handle == parent.uses.end())
    throw Error("operator '" + parent.spec().name + "' may not run '" + std::string(op) +
                "' as a sub-task: it is not in its spec's uses");
  const std::string key = std::string(op) + "\n" + params.dump();
  std::lock_guard lk(m_);
  auto& slot = ops_[key];
  if (!slot) {
    workflow::Diagnostics d;
    Params p = workflow::resolve_params(handle->second.spec(), params, "/params", d);
    if (!d.empty()) throw workflow::ValidationError("sub-task " + std::string(op), d.items());
    auto sub = std::make_unique<SubOp>(SubOp{
        workflow::StageNode{parent.name + "/" + std::string(op), parent.index, handle->second, {}, std::move(p), nullptr, {}, {}, {}},
        nullptr});
    sub->node.op = sub->node.handle.create(sub->node.params);
    sub->node.inputs.resize(sub->node.spec().inputs.size());
    sub->node.consumers.resize(sub->node.spec().outputs.size());
    if (const auto g = sub->node.handle.factory().gpu_variant) sub->gpu = g(*sub->node.op);
    slot = std::move(sub);
  }
  return *slot;
}

// One call, as a task through the queue.
class SubGraph::CallTask final : public sched::Task {
public:
  CallTask(SubGraph& g, std::size_t index, Tuple inputs) : g_(g), index_(index), inputs_(std::move(inputs)) {}
  void run(sched::TaskEnv& env) override { g_.run(index_, inputs_, env); }
  void prefetch(const sched::WorkerInfo& w) override {
    if (sched::is_gpu_like(w.kind)) g_.runner_.prefetch(inputs_, w);
  }
  bool wants_prefetch(const sched::WorkerInfo& w) const override {
    return sched::is_gpu_like(w.kind) && needs_copy(inputs_, w.id);
  }
  const Tuple& inputs() const noexcept { return inputs_; }

private:
  SubGraph& g_;
  std::size_t index_;
  Tuple inputs_;
};

SubGraph::SubGraph(TaskRunner& runner, Stage& parent, const Tuple& task, const sched::WorkerInfo& worker,
                   std::int64_t parent_span)
    : runner_(runner), parent_(parent), task_(task), worker_(worker), parent_span_(parent_span) {}

SubGraph::~SubGraph() {
  // Even when the operator forgot to wait or threw.
  help_until_done();
}

sched::TaskPtr SubGraph::task_for_locked(std::size_t i) {
  Call& c = calls_[i];
  Tuple t{task_.key, {}};
  for (const auto& in : c.inputs) {
    if (const auto* item = std::get_if<Item>(&in)) {
      t.ports.push_back(runner_.carry(*item, {}, nullptr));
    } else {
      const auto& w = std::get<Wire>(in);
      const auto& outs = calls_[w.call].out;
      t.ports.push_back(w.port < outs.size() && !outs[w.port].empty() ? outs[w.port].front() : nullptr);
    }
  }
  auto task = std::make_unique<CallTask>(*this, i, std::move(t));
  runner_.estimate(c.op->node.spec().name, c.op->gpu, task->inputs(), *task);
  return task;
}

SubGraph::Wire SubGraph::wire_locked(std::string_view op, const SubRef& ref) const {
  if (ref.call >= calls_.size())
    throw Error("sub-task " + std::string(op) + ": input refers to call " + std::to_string(ref.call) +
                ", which does not exist yet");
  const OperatorSpec& from = calls_[ref.call].op->node.spec();
  const auto port = from.output_index(ref.port);
  if (!port)
    throw Error("sub-task " + std::string(op) + ": call " + std::to_string(ref.call) + " (" + from.name +
                ") has no output port '" + ref.port + "'; its output ports: " + port_names(from.outputs));
  return {ref.call, *port};
}

std::size_t SubGraph::call(std::string_view op, const Json& params, std::vector<SubInput> inputs) {
  SubOp& sub = runner_.sub_op(*parent_.node, op, params);
  if (inputs.size() != sub.node.spec().inputs.size())
    throw Error("sub-task " + std::string(op) + ": " + std::to_string(inputs.size()) + " inputs for " +
                std::to_string(sub.node.spec().inputs.size()) + " input ports");
  sched::TaskPtr ready;
  std::size_t index;
  {
    std::lock_guard lk(m_);
    // Wired before the call is recorded, so a refused call leaves no trace.
    std::vector<Input> wired;
    wired.reserve(inputs.size());
    for (auto& in : inputs) {
      if (auto* item = std::get_if<Item>(&in)) wired.emplace_back(std::move(*item));
      else wired.emplace_back(wire_locked(op, std::get<SubRef>(in)));
    }
    index = calls_.size();
    Call& c = calls_.emplace_back();
    c.op = &sub;
    c.inputs = std::move(wired);
    for (const auto& in : c.inputs)
      if (const auto* w = std::get_if<Wire>(&in)) {
        Call& from = calls_[w->call];
        if (!from.error.empty()) c.error = from.error;
        else if (!from.done) {
          ++c.unresolved;
          from.dependents.push_back(index);
        }
      }
    ++pending_;
    if (!c.error.empty()) {
      c.done = true;
      --pending_;
    } else if (c.unresolved == 0) {
      ready = task_for_locked(index);
    }
  }
  if (ready) runner_.submit(std::move(ready), nullptr);
  return index;
}

// With m_ held: call i is done (or failed); its dependents may be ready.
void SubGraph::finish_locked(std::size_t i, std::vector<sched::TaskPtr>& ready) {
  Call& c = calls_[i];
  c.done = true;
  --pending_;
  for (std::size_t d : c.dependents) {
    Call& dep = calls_[d];
    if (!c.error.empty() && dep.error.empty()) {
      dep.error = c.error;
      finish_locked(d, ready);  // it will never run: cascade
    } else if (--dep.unresolved == 0 && dep.error.empty()) {
      ready.push_back(task_for_locked(d));
    }
  }
}

void SubGraph::run(std::size_t i, const Tuple& inputs, sched::TaskEnv& env) {
  SubOp* sub = nullptr;
  {
    std::lock_guard lk(m_);  // the parent may be adding calls
    sub = calls_[i].op;
  }
  Execution ex;
  if (runner_.stopping()) ex.outcome = {false, "the run is stopping", task_.key};
  else ex = runner_.execute({.stage = parent_, .node = sub->node, .gpu = sub->gpu, .inputs = inputs,
                             .parent = parent_span_}, env);
  work_ns_.fetch_add(ex.outcome.end_ns - ex.outcome.start_ns);
  std::vector<sched::TaskPtr> ready;
  {
    std::lock_guard lk(m_);
    Call& c = calls_[i];
    if (ex.outcome.ok) {
      c.out.resize(sub->node.spec().outputs.size());
      for (auto& [port, item] : ex.out.items()) c.out[port].push_back(runner_.carry(std::move(item), {}, &env.worker()));
    } else {
      c.error = "sub-task " + std::to_string(i) + " (" + sub->node.spec().name + ") on '" + ex.outcome.key +
                "': " + ex.outcome.error;
    }
    finish_locked(i, ready);
    // Under the lock: once it is released the parent may see nothing pending
    // and destroy this graph, so nothing of it is touched afterwards.
    cv_.notify_all();
  }
  for (auto& t : ready) env.spawn(std::move(t));
}

void SubGraph::help_until_done() {
  const auto entered = Clock::now();
  std::unique_lock lk(m_);
  while (pending_ > 0) {
    lk.unlock();
    const auto t0 = Clock::now();
    const bool ran = runner_.run_one(worker_);
    if (ran) helped_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    lk.lock();
    if (!ran) cv_.wait_for(lk, std::chrono::milliseconds(1), [&] { return pending_ == 0; });
  }
  waited_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - entered).count();
}

void SubGraph::wait() {
  help_until_done();
  std::lock_guard lk(m_);
  for (const auto& c : calls_)
    if (!c.error.empty()) throw Error(c.error);
}

const Item& SubGraph::result(std::size_t call, std::string_view port) {
  std::lock_guard lk(m_);
  if (call >= calls_.size()) throw Error("sub-task result: no call " + std::to_string(call));
  Call& c = calls_[call];
  const OperatorSpec& spec = c.op->node.spec();
  const auto p = spec.output_index(port);
  if (!p)
    throw Error("sub-task result: call " + std::to_string(call) + " (" + spec.name + ") has no output port '" +
                std::string(port) + "'; its output ports: " + port_names(spec.outputs));
  if (!c.done) throw Error("sub-task result: call " + std::to_string(call) + " has not run yet (call wait() first)");
  if (!c.error.empty()) throw Error(c.error);
  if (*p >= c.out.size() || c.out[*p].empty())
    throw Error("sub-task " + spec.name + " produced nothing on output '" + std::string(port) + "'");
  auto it = c.host.find(*p);
  if (it == c.host.end()) {
    Item scratch;
    const Item& on_host = runner_.on_host(*c.out[*p].front(), scratch);
    it = c.host.emplace(*p, on_host).first;
  }
  return it->second;
}

}  // namespace flowd::runtime::detail

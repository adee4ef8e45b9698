// Running tasks: inputs placed where the worker's variant needs them, the
// variant called, what it did recorded; and the sub-tasks of map tasks.
#include <algorithm>

#include "runtime/run_state.hpp"
#include "workflow/validate.hpp"

namespace flowd::runtime::detail {

std::string failed_key(const std::exception& e, const std::string& task_key) {
  if (const auto* ie = dynamic_cast<const ItemError*>(&e)) return ie->key();
  return task_key;
}

std::uint64_t array_bytes(const Tuple& t) {
  std::uint64_t n = 0;
  for (const auto& p : t.ports)
    if (p)
      if (const auto* a = std::get_if<Array>(&p->item.value)) n += a->nbytes();
  return n;
}

// ---------------------------------------------------------------------------
// Estimates

void RunState::estimate(const std::string& op, const GpuVariant* gpu, const Tuple& t, sched::Task& task) const {
  const std::uint64_t bytes = array_bytes(t);
  const int sc = sched::PerfModel::size_class(bytes);
  if (gpu) task.runs_on |= sched::bit(sched::WorkerKind::gpu);
  if (gpu || model.has_gpu_estimate(op)) task.runs_on |= sched::bit(sched::WorkerKind::sim_gpu);
  // Calibration and GPU-only experiments: what a GPU-like worker can run runs there only.
  if (opts.prefer_gpu && (task.runs_on & sched::gpu_like)) task.runs_on &= sched::gpu_like;
  auto& e = task.est;
  const auto factor = speedup_factor.find(op);
  e.speedup = static_cast<float>(model.speedup(op, sc) * (factor == speedup_factor.end() ? 1.0 : factor->second));
  const auto cpu = model.seconds(op, sched::Variant::cpu, sc);
  const auto on_gpu = model.seconds(op, sched::Variant::gpu, sc);
  e.cpu_seconds = cpu ? static_cast<float>(*cpu) : 0.0f;
  e.gpu_seconds = on_gpu ? static_cast<float>(*on_gpu)
                         : (cpu ? static_cast<float>(*cpu / std::max(1e-9, static_cast<double>(e.speedup))) : 0.0f);
  double bw = opts.sim_bandwidth;
  for (const auto& d : workers.devices)
    if (d && !d->simulated())
      if (auto b = model.bandwidth(d->ordinal(), sched::Direction::to_device)) bw = *b;
  e.transfer_seconds = static_cast<float>(static_cast<double>(bytes) / bw);
  for (const auto& p : t.ports)
    if (p && std::holds_alternative<Array>(p->item.value)) {
      std::lock_guard lk(p->where.mutex());
      if (!p->where.valid(memory::host)) {
        task.data_worker = p->where.device_holder();
        break;
      }
    }
}

// ---------------------------------------------------------------------------
// Running variants

void RunState::trace_task(const std::string& op, const std::string& stage, const sched::WorkerInfo& w,
                          const std::string& key, const char* variant, const Outcome& o, std::int64_t id,
                          std::int64_t parent) {
  if (!trace.enabled()) return;
  trace::Span span{w.id, op, stage, key, variant, o.start_ns, o.end_ns};
  span.failed = !o.ok;
  span.id = id >= 0 ? id : trace.next_id();
  span.parent = parent;
  trace.span(std::move(span));
}

Inputs RunState::place(const Tuple& t, int w, std::vector<Item>& scratch, double& moved,
                       const workflow::StageNode* consumer) {
  Inputs in{t.key, std::vector<const Item*>(t.ports.size(), nullptr)};
  scratch.resize(t.ports.size());
  for (std::size_t p = 0; p < t.ports.size(); ++p) {
    if (!t.ports[p]) continue;
    const Carried& c = *t.ports[p];
    if (!c.remote) {
      in.items[p] = &transfers->to(c, w, scratch[p], &moved);
      continue;
    }
    // Held by another node of a cluster run: pulled here, and checked as
    // deliver_locked() checks local items.
    if (w != memory::host)
      throw Error("item '" + c.item.meta.key + "' is held by " + c.remote->holder() +
                  " and cannot be placed on a GPU of the coordinator");
    scratch[p] = c.remote->fetch();
    if (consumer) {
      const PortSpec& in_spec = consumer->spec().inputs[p];
      if (!in_spec.type.accepts(scratch[p].value))
        throw ItemError(c.item.meta.key, "received " + describe(scratch[p].value) + " from " + c.remote->holder() +
                                             " on input '" + in_spec.name + "', which expects " + in_spec.type.str());
    }
    in.items[p] = &scratch[p];
  }
  return in;
}

bool needs_copy(const Tuple& t, int worker) {
  for (const auto& p : t.ports)
    if (p && std::holds_alternative<Array>(p->item.value)) {
      std::lock_guard lk(p->where.mutex());
      if (!p->where.valid(worker)) return true;
    }
  return false;
}

void RunState::prefetch_map(const Tuple& t, const sched::WorkerInfo& w) {
  try {
    std::vector<Item> scratch;
    double moved = 0;
    place(t, w.id, scratch, moved);
  } catch (const std::exception&) {
    // run_map() places the inputs again and reports the failure.
  }
}

namespace {
// Nanoseconds a map task's worker spent running other tasks while it waited
// for its sub-tasks (defined with SubGraph below).
std::int64_t helping_ns(const SubTasks* sub) noexcept;
}  // namespace

Execution RunState::execute(StageState& stats, const workflow::StageNode& node, const GpuVariant* gpu, const Tuple& t,
                            sched::TaskEnv& env, std::int64_t id, std::int64_t parent, SubTasks* sub) {
  const sched::WorkerInfo& w = env.worker();
  const bool gpu_like = sched::is_gpu_like(w.kind);
  const char* variant = w.kind == sched::WorkerKind::gpu ? "gpu" : gpu_like ? "sim" : "cpu";
  Execution ex;
  std::vector<Item> scratch;
  double moved = 0;
  Inputs inputs;
  // Inputs first, then the operator: transfer time is not the operator's.
  Outcome placed = stats.call(trace, t.key, [&] { inputs = place(t, gpu_like ? w.id : memory::host, scratch, moved, &node); });
  if (!placed.ok) {
    ex.outcome = placed;
    return ex;
  }
  if (w.kind == sched::WorkerKind::gpu) {
    memory::Device& dev = *workers.devices[static_cast<std::size_t>(w.id)];
    GpuContextImpl ctx(node, &inputs, log, stopping, dev);
    ex.outcome = stats.call(trace, t.key, [&] {
      gpu->gpu(ctx);
      dev.synchronize();
      ctx.out.check_required(node);
    });
    ex.out = std::move(ctx.out);
  } else {
    MapContextImpl ctx(node, &inputs, log, stopping, sub);
    const int sc = sched::PerfModel::size_class(array_bytes(t));
    if (w.kind == sched::WorkerKind::sim_gpu)
      ctx.set_time_scale(1.0 / std::max(1e-6, model.speedup(node.spec().name, sc) * sim_scale));
    ex.outcome = stats.call(trace, t.key, [&] {
      static_cast<const Map&>(*node.op).cpu(ctx);
      ctx.out.check_required(node);
    });
    ex.out = std::move(ctx.out);
  }
  trace_task(node.spec().name, stats.name(), w, t.key, variant, ex.outcome, id, parent);
  if (ex.outcome.ok) {
    const int sc = sched::PerfModel::size_class(array_bytes(t));
    // Tasks the worker ran for others while waiting for sub-tasks are not
    // this operator's time.
    const double seconds = static_cast<double>(ex.outcome.end_ns - ex.outcome.start_ns - helping_ns(sub)) * 1e-9;
    model.record(node.spec().name,
                 w.kind == sched::WorkerKind::gpu ? sched::Variant::gpu : gpu_like ? sched::Variant::sim : sched::Variant::cpu,
                 sc, seconds);
    if (gpu_like) {
      model.record_gpu_task(moved, seconds);
      stats.on_gpu.fetch_add(1);
    }
  }
  return ex;
}

// ---------------------------------------------------------------------------
// Sub-tasks

namespace {

class SubGraph;

// One call of a SubGraph, as a task through the queue.
class SubTask final : public sched::Task {
public:
  SubTask(SubGraph& g, std::size_t index, Tuple inputs) : g_(g), index_(index), inputs_(std::move(inputs)) {}
  void run(sched::TaskEnv& env) override;
  void prefetch(const sched::WorkerInfo& w) override;
  bool wants_prefetch(const sched::WorkerInfo& w) const override {
    return sched::is_gpu_like(w.kind) && needs_copy(inputs_, w.id);
  }
  const Tuple& inputs() const noexcept { return inputs_; }

private:
  SubGraph& g_;
  std::size_t index_;
  Tuple inputs_;
};

// The sub-tasks of one map task: a small dataflow of operator calls whose
// inputs are items or earlier calls' outputs.
class SubGraph final : public SubTasks {
public:
  SubGraph(RunState& st, StageState& parent, const Tuple& task, const sched::WorkerInfo& worker, std::int64_t parent_id)
      : st_(st), parent_(parent), task_(task), worker_(worker), parent_id_(parent_id) {}
  ~SubGraph() override;

  std::size_t call(std::string_view op, const Json& params, std::vector<SubInput> inputs) override;
  void wait() override;
  const Item& result(std::size_t call, std::size_t port) override;

  void run(std::size_t i, const Tuple& inputs, sched::TaskEnv& env);
  void prefetch(const Tuple& inputs, const sched::WorkerInfo& w) { st_.prefetch_map(inputs, w); }

private:
  struct Call {
    SubOp* op = nullptr;
    std::vector<SubInput> inputs;
    std::size_t unresolved = 0;               // inputs that are outputs of calls not done yet
    std::vector<std::size_t> dependents;      // calls taking this one's outputs
    std::vector<std::vector<CarriedPtr>> out; // per output port
    std::map<std::size_t, Item> host;         // results in host memory, by port
    bool done = false;
    std::string error;                        // why it (or an input of it) failed
  };
  sched::TaskPtr task_for_locked(std::size_t i);
  void finish_locked(std::size_t i, std::vector<sched::TaskPtr>& ready);
  void help_until_done();

  RunState& st_;
  StageState& parent_;
  const Tuple& task_;
  const sched::WorkerInfo& worker_;
  std::int64_t parent_id_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Call> calls_;  // deque: references stay valid as calls are added
  std::size_t pending_ = 0;
  std::int64_t helped_ns_ = 0;  // running other tasks while waiting (the parent's thread only)

  friend std::int64_t helping_ns(const SubTasks* sub) noexcept;
};

SubGraph::~SubGraph() {
  // Calls still queued refer to this graph: see them through even when the
  // operator forgot to wait or threw.
  help_until_done();
}

sched::TaskPtr SubGraph::task_for_locked(std::size_t i) {
  Call& c = calls_[i];
  Tuple t{task_.key, {}};
  for (const auto& in : c.inputs) {
    if (const auto* item = std::get_if<Item>(&in)) {
      t.ports.push_back(st_.carry(*item, {}, nullptr));
    } else {
      const auto& ref = std::get<SubRef>(in);
      const auto& outs = calls_[ref.call].out;
      t.ports.push_back(ref.port < outs.size() && !outs[ref.port].empty() ? outs[ref.port].front() : nullptr);
    }
  }
  auto task = std::make_unique<SubTask>(*this, i, std::move(t));
  st_.estimate(c.op->node.spec().name, c.op->gpu, task->inputs(), *task);
  return task;
}

std::size_t SubGraph::call(std::string_view op, const Json& params, std::vector<SubInput> inputs) {
  SubOp& sub = st_.sub_op(parent_, op, params);
  if (inputs.size() != sub.node.spec().inputs.size())
    throw Error("sub-task " + std::string(op) + ": " + std::to_string(inputs.size()) + " inputs for " +
                std::to_string(sub.node.spec().inputs.size()) + " input ports");
  sched::TaskPtr ready;
  std::size_t index;
  {
    std::lock_guard lk(m_);
    index = calls_.size();
    // Checked before the call is recorded, so a refused call leaves no trace.
    for (const auto& in : inputs)
      if (const auto* ref = std::get_if<SubRef>(&in)) {
        if (ref->call >= index)
          throw Error("sub-task " + std::string(op) + ": input refers to call " + std::to_string(ref->call) +
                      ", which does not exist yet");
        if (ref->port >= calls_[ref->call].op->node.spec().outputs.size())
          throw Error("sub-task " + std::string(op) + ": call " + std::to_string(ref->call) + " (" +
                      calls_[ref->call].op->node.spec().name + ") has no output " + std::to_string(ref->port));
      }
    Call& c = calls_.emplace_back();
    c.op = &sub;
    c.inputs = std::move(inputs);
    for (const auto& in : c.inputs)
      if (const auto* ref = std::get_if<SubRef>(&in)) {
        Call& from = calls_[ref->call];
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
  if (ready) st_.pool->submit(std::move(ready));
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
  if (st_.stopping.load()) ex.outcome = {false, "the run is stopping", task_.key};
  else ex = st_.execute(parent_, sub->node, sub->gpu, inputs, env, -1, parent_id_, nullptr);
  std::vector<sched::TaskPtr> ready;
  {
    std::lock_guard lk(m_);
    Call& c = calls_[i];
    if (ex.outcome.ok) {
      c.out.resize(sub->node.spec().outputs.size());
      for (auto& [port, item] : ex.out.items()) c.out[port].push_back(st_.carry(std::move(item), {}, &env.worker()));
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
  std::unique_lock lk(m_);
  while (pending_ > 0) {
    lk.unlock();
    const auto t0 = Clock::now();
    const bool ran = st_.pool->run_one(worker_);
    if (ran) helped_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    lk.lock();
    if (!ran) cv_.wait_for(lk, std::chrono::milliseconds(1), [&] { return pending_ == 0; });
  }
}

void SubGraph::wait() {
  help_until_done();
  std::lock_guard lk(m_);
  for (const auto& c : calls_)
    if (!c.error.empty()) throw Error(c.error);
}

const Item& SubGraph::result(std::size_t call, std::size_t port) {
  std::lock_guard lk(m_);
  if (call >= calls_.size()) throw Error("sub-task result: no call " + std::to_string(call));
  Call& c = calls_[call];
  if (!c.done) throw Error("sub-task result: call " + std::to_string(call) + " has not run yet (call wait() first)");
  if (!c.error.empty()) throw Error(c.error);
  if (port >= c.out.size() || c.out[port].empty())
    throw Error("sub-task " + c.op->node.spec().name + " produced nothing on output " + std::to_string(port));
  auto it = c.host.find(port);
  if (it == c.host.end()) {
    Item scratch;
    const Item& on_host = st_.transfers->to(*c.out[port].front(), memory::host, scratch);
    it = c.host.emplace(port, on_host).first;
  }
  return it->second;
}

std::int64_t helping_ns(const SubTasks* sub) noexcept {
  const auto* g = dynamic_cast<const SubGraph*>(sub);
  return g ? g->helped_ns_ : 0;
}

void SubTask::run(sched::TaskEnv& env) { g_.run(index_, inputs_, env); }
void SubTask::prefetch(const sched::WorkerInfo& w) {
  if (sched::is_gpu_like(w.kind)) g_.prefetch(inputs_, w);
}

}  // namespace

SubOp& RunState::sub_op(const StageState& s, std::string_view op, const Json& params) {
  const auto handle = s.node->uses.find(op);
  if (handle == s.node->uses.end())
    throw Error("operator '" + s.op() + "' may not run '" + std::string(op) + "' as a sub-task: it is not in its spec's uses");
  const std::string key = std::string(op) + "\n" + params.dump();
  std::lock_guard lk(sub_ops_m);
  auto& slot = sub_ops[key];
  if (!slot) {
    workflow::Diagnostics d;
    Params p = workflow::resolve_params(handle->second.spec(), params, "/params", d);
    if (!d.empty()) throw workflow::ValidationError("sub-task " + std::string(op), d.items());
    auto sub = std::make_unique<SubOp>(SubOp{
        workflow::StageNode{s.name() + "/" + std::string(op), s.node->index, handle->second, {}, std::move(p), nullptr, {}, {}, {}},
        nullptr});
    sub->node.op = sub->node.handle.create(sub->node.params);
    sub->node.inputs.resize(sub->node.spec().inputs.size());
    sub->node.consumers.resize(sub->node.spec().outputs.size());
    if (const auto g = sub->node.handle.factory().gpu_variant) sub->gpu = g(*sub->node.op);
    slot = std::move(sub);
  }
  return *slot;
}

// ---------------------------------------------------------------------------
// Stage tasks

Execution RunState::run_map_task(StageState& s, const Tuple& t, sched::TaskEnv& env) {
  const std::int64_t id = trace.enabled() ? trace.next_id() : -1;
  SubGraph sub(*this, s, t, env.worker(), id);
  return execute(s, *s.node, s.gpu, t, env, id, -1, &sub);
}

void RunState::run_map(StageState& s, Tuple& t, sched::TaskEnv& env) {
  Execution ex;
  if (!stopping.load()) ex = run_map_task(s, t, env);
  std::lock_guard lk(m);
  if (ex.outcome.ok) route_locked(s, ex.out, t.credits(), &env);
  else if (!ex.outcome.error.empty()) {
    t.mark_failed();
    fail_locked(s, ex.outcome.key, ex.outcome.error);
  }
  s.tasks_done.fetch_add(1);
  task_done_locked(s, &env);
}

void RunState::run_sink(StageState& s, sched::TaskEnv& env) {
  Tuple t;
  {
    std::lock_guard lk(m);
    t = std::move(s.backlog.front());
    s.backlog.pop_front();
  }
  Outcome o{true, {}, {}};
  if (!stopping.load()) {
    std::vector<Item> scratch;
    double moved = 0;
    Inputs inputs;
    o = s.call(trace, t.key, [&] {
      inputs = place(t, memory::host, scratch, moved, s.node);
      // Kept before consumed: once its source item counts as finished, a
      // resumed run replays it instead of computing it again.
      if (opts.checkpoint && !t.replayed) {
        std::vector<SourceRef> sources;
        for (const auto& c : t.credits()) sources.push_back({c->source_stage(), c->key()});
        opts.checkpoint->keep_sink_input(s.name(), inputs.items, sources);
      }
      SinkContextImpl ctx(*s.node, &inputs, log, stopping, opts.provenance);
      static_cast<Sink&>(*s.node->op).consume(ctx);
    });
    trace_task(s.op(), s.name(), env.worker(), t.key, "cpu", o);
  }
  std::lock_guard lk(m);
  if (!o.ok) {
    t.mark_failed();
    fail_locked(s, o.key, o.error);
  }
  s.tasks_done.fetch_add(1);
  if (stopping.load()) s.backlog.clear();
  if (!s.backlog.empty()) {
    submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::sink), &env);  // stays active and busy
    return;
  }
  s.sink_busy = false;
  task_done_locked(s, &env);
}

void RunState::run_reduce(StageState& s, Tuple& t, sched::TaskEnv& env) {
  Outcome o{true, {}, {}};
  if (!stopping.load()) {
    const auto& op = static_cast<const Reduce&>(*s.node->op);
    std::vector<Item> scratch;
    double moved = 0;
    Inputs inputs;
    o = s.call(trace, t.key, [&] {
      inputs = place(t, memory::host, scratch, moved, s.node);
      ReduceContextImpl ctx(*s.node, &inputs, log, stopping);
      Item acc = op.lift(ctx, *inputs.items[0]);
      // Merge with whatever partials are free until none is left, then park
      // ours: partials stay as few as the reducers running at once.
      while (true) {
        Item other;
        {
          std::lock_guard lk(m);
          if (s.partials.empty()) {
            s.partials.push_back(std::move(acc));
            return;
          }
          other = std::move(s.partials.back());
          s.partials.pop_back();
        }
        acc = op.merge(ctx, std::move(acc), other);
      }
    });
    trace_task(s.op(), s.name(), env.worker(), t.key, "cpu", o);
  }
  std::lock_guard lk(m);
  if (!o.ok) {
    t.mark_failed();
    fail_locked(s, o.key, o.error);
  }
  s.tasks_done.fetch_add(1);
  task_done_locked(s, &env);
}

void RunState::run_finalize(StageState& s, sched::TaskEnv& env) {
  std::vector<Item> parts;
  {
    std::lock_guard lk(m);
    parts = std::move(s.partials);
    s.partials.clear();
  }
  const Inputs none{s.name(), {}};
  ReduceContextImpl ctx(*s.node, &none, log, stopping);
  Emitted out;
  Outcome o{true, {}, {}};
  if (parts.empty()) {
    log.warn("[" + s.name() + "] received no items, so it produces nothing");
  } else if (!stopping.load()) {
    const auto& op = static_cast<const Reduce&>(*s.node->op);
    o = s.call(trace, s.name(), [&] {
      Item acc = std::move(parts.front());
      for (std::size_t i = 1; i < parts.size(); ++i) acc = op.merge(ctx, std::move(acc), parts[i]);
      Item result = op.finish(ctx, std::move(acc));
      if (result.meta.key.empty()) result.meta.key = s.name();
      out.add(*s.node, 0, std::move(result));
    });
    trace_task(s.op(), s.name(), env.worker(), s.name(), "cpu", o);
  }
  std::lock_guard lk(m);
  if (!o.ok) fail_locked(s, o.key, o.error);
  route_locked(s, out, {}, &env);
  s.finalized = true;
  s.tasks_done.fetch_add(1);
  task_done_locked(s, &env);
}

// ---------------------------------------------------------------------------
// Map tasks run by a cluster (runtime/remote.hpp)

namespace {

// A cluster's answer, routed on a pool thread: the executor may answer from
// any thread, even inside submit() while the run lock is held.
class RemoteDoneTask final : public sched::Task {
public:
  RemoteDoneTask(RunState& st, StageState& s, Tuple t, RemoteResult r)
      : st_(st), s_(s), tuple_(std::move(t)), result_(std::move(r)) {}
  void run(sched::TaskEnv&) override { st_.remote_done(s_, tuple_, std::move(result_)); }

private:
  RunState& st_;
  StageState& s_;
  Tuple tuple_;
  RemoteResult result_;
};

}  // namespace

void RunState::submit_remote_locked(StageState& s, Tuple t) {
  RemoteTask task{s.node->index, t.key, t.ports, {}};
  task.done = [this, &s, t = std::move(t)](RemoteResult r) mutable {
    pool->submit(std::make_unique<RemoteDoneTask>(*this, s, std::move(t), std::move(r)));
  };
  opts.remote->submit(std::move(task));
}

void RunState::remote_done(StageState& s, const Tuple& t, RemoteResult r) {
  s.busy_ns.fetch_add(static_cast<std::int64_t>(r.seconds * 1e9));
  std::lock_guard lk(m);
  if (r.ok) {
    const auto credits = t.credits();
    for (auto& o : r.outputs) {
      auto c = std::make_shared<Carried>(Carried{Item{std::move(o.meta), {}}, credits});
      c->remote = std::move(o.item);
      route_one_locked(s, o.port, c, nullptr);
    }
  } else {
    t.mark_failed();
    fail_locked(s, r.key.empty() ? t.key : r.key, r.error);
  }
  s.tasks_done.fetch_add(1);
  task_done_locked(s, nullptr);
}

void StageTask::run(sched::TaskEnv& env) {
  switch (kind_) {
    case Kind::source: st_.run_source(s_, env); break;
    case Kind::map: st_.run_map(s_, tuple_, env); break;
    case Kind::sink: st_.run_sink(s_, env); break;
    case Kind::reduce: st_.run_reduce(s_, tuple_, env); break;
    case Kind::finalize: st_.run_finalize(s_, env); break;
  }
}

}  // namespace flowd::runtime::detail

#include "runtime/task_runner.hpp"

#include <algorithm>

#include "exec/worker_pool.hpp"
#include "memory/cuda_devices.hpp"
#include "runtime/schedulers.hpp"

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

bool needs_copy(const Tuple& t, int worker) {
  for (const auto& p : t.ports)
    if (p && std::holds_alternative<Array>(p->item.value)) {
      std::lock_guard lk(p->where.mutex());
      if (!p->where.valid(worker)) return true;
    }
  return false;
}

namespace {

// --speedup-error: speedups below the median are raised and those above
// lowered by the error, so the queue's order is confounded (at 100 % the
// highest estimates reach zero).
std::map<std::string, double> confound(const workflow::Graph& g, const sched::PerfModel& m, double error) {
  std::map<std::string, double> factor;
  if (error <= 0) return factor;
  std::vector<std::pair<double, std::string>> s;
  for (const auto& st : g.stages)
    if (st.spec().pattern == Pattern::map && m.has_gpu_estimate(st.spec().name))
      s.emplace_back(m.speedup(st.spec().name, 0), st.spec().name);
  std::sort(s.begin(), s.end());
  if (s.empty()) return factor;
  const double median = s[s.size() / 2].first;
  for (const auto& [speedup, op] : s)
    factor[op] = speedup < median ? 1.0 + error : speedup > median ? std::max(0.01, 1.0 - error) : 1.0;
  return factor;
}

}  // namespace

TaskRunner::TaskRunner(workflow::Graph& graph, RunOptions options, Logger& log)
    : graph_(graph), opts_(std::move(options)), log_(log), model_(opts_.model ? *opts_.model : own_model_),
      trace_(opts_.recorder ? *opts_.recorder : own_trace_) {}

TaskRunner::~TaskRunner() { stop_workers(); }

void TaskRunner::prepare() {
  workers_ = make_workers(opts_.cpu_workers, opts_.gpus, opts_.sim_bandwidth);
  sim_scale_ = opts_.gpus.mode == GpuSpec::Mode::sim ? opts_.gpus.scale : 1.0;
  auto seed = [&](const OperatorSpec& spec) {
    if (spec.speedup_hint && !model_.has_gpu_estimate(spec.name)) model_.hint(spec.name, *spec.speedup_hint);
  };
  for (const auto& node : graph_.stages) {
    seed(node.spec());
    for (const auto& [name, sub] : node.uses) seed(sub.spec());
  }
  // After seeding: hints count as GPU estimates.
  speedup_factor_ = confound(graph_, model_, opts_.speedup_error);
  transfers_ = std::make_unique<Transfers>(workers_.devices, trace_, model_);
  for (const auto& w : workers_.workers) {
    const bool sim = w.kind == sched::WorkerKind::sim_gpu;
    const char* kind = w.kind == sched::WorkerKind::cpu ? "cpu" : sim ? "sim_gpu" : "gpu";
    trace_.track({w.id, w.name, kind, sim});
    if (sched::is_gpu_like(w.kind)) trace_.track({copy_track(w.id), w.name + " copy", "copy", sim});
  }
}

void TaskRunner::start() {
  exec::PoolOptions pool_opts;
  pool_opts.continuation = opts_.locality;
  pool_opts.prefetch = opts_.prefetch;
  auto pin = workers_.pin;
  pool_opts.on_thread_start = [pin](const sched::WorkerInfo& w) {
    memory::pin_current_thread(pin[static_cast<std::size_t>(w.id)]);
  };
  // A task that throws past its own handling never reported its end, so the
  // run could wait for it forever: stop instead.
  pool_opts.on_task_error = [this] {
    log_.error("internal error, stopping the run: " + current_exception_message("a task"));
    set_stopping();
  };
  pool_ = std::make_unique<exec::WorkerPool>(
      make_queue(opts_.scheduler, opts_.locality, opts_.transfer_impact.value_or(model_.transfer_impact())),
      workers_.workers, pool_opts);
}

void TaskRunner::wait_idle() { pool_->wait_idle(); }

void TaskRunner::stop_workers() {
  if (pool_) pool_->stop();
}

void TaskRunner::queue(sched::TaskPtr t) { pool_->submit(std::move(t)); }

bool TaskRunner::run_one(const sched::WorkerInfo& w) { return pool_->run_one(w); }

std::size_t TaskRunner::queued() const { return pool_->queued(); }

// ---------------------------------------------------------------------------
// Estimates and inputs

void TaskRunner::estimate(const std::string& op, const GpuVariant* gpu, const Tuple& t, sched::Task& task) const {
  const std::uint64_t bytes = array_bytes(t);
  const int sc = sched::PerfModel::size_class(bytes);
  if (gpu) task.runs_on |= sched::bit(sched::WorkerKind::gpu);
  if (gpu || model_.has_gpu_estimate(op)) task.runs_on |= sched::bit(sched::WorkerKind::sim_gpu);
  // Calibration and GPU-only experiments: what a GPU-like worker can run runs there only.
  if (opts_.prefer_gpu && (task.runs_on & sched::gpu_like)) task.runs_on &= sched::gpu_like;
  auto& e = task.est;
  const auto factor = speedup_factor_.find(op);
  e.speedup = static_cast<float>(model_.speedup(op, sc) * (factor == speedup_factor_.end() ? 1.0 : factor->second));
  const auto cpu = model_.seconds(op, sched::Variant::cpu, sc);
  const auto on_gpu = model_.seconds(op, sched::Variant::gpu, sc);
  e.cpu_seconds = cpu ? static_cast<float>(*cpu) : 0.0f;
  e.gpu_seconds = on_gpu ? static_cast<float>(*on_gpu)
                         : (cpu ? static_cast<float>(*cpu / std::max(1e-9, static_cast<double>(e.speedup))) : 0.0f);
  double bw = opts_.sim_bandwidth;
  for (const auto& d : workers_.devices)
    if (d && !d->simulated())
      if (auto b = model_.bandwidth(d->ordinal(), sched::Direction::to_device)) bw = *b;
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

Inputs TaskRunner::place(const Tuple& t, int w, std::vector<Item>& scratch, double& moved,
                         const workflow::StageNode* consumer) {
  Inputs in{t.key, std::vector<const Item*>(t.ports.size(), nullptr)};
  scratch.resize(t.ports.size());
  for (std::size_t p = 0; p < t.ports.size(); ++p) {
    if (!t.ports[p]) continue;
    const Carried& c = *t.ports[p];
    if (!c.remote) {
      in.items[p] = &transfers_->to(c, w, scratch[p], &moved);
      continue;
    }
    // Held by another node of a cluster run: pulled here, and checked as
    // items made here are checked when they are routed; then moved to the
    // worker's GPU like an item of this process (a scan's combine on a GPU
    // lane reads operands other nodes made).
    Carried fetched{c.remote->fetch(), {}};
    if (consumer)
      if (auto why = input_mismatch(consumer->spec().inputs[p], fetched.item.value, c.remote->holder()))
        throw ItemError(c.item.meta.key, *why);
    const Item& placed = transfers_->to(fetched, w, scratch[p], &moved);
    if (&placed != &scratch[p]) scratch[p] = placed;  // `fetched` ends here; its arrays are shared
    in.items[p] = &scratch[p];
  }
  return in;
}

void TaskRunner::prefetch(const Tuple& t, const sched::WorkerInfo& w) {
  try {
    std::vector<Item> scratch;
    double moved = 0;
    place(t, w.id, scratch, moved);
  } catch (...) {
    // The task places its inputs again and reports the failure as its own.
  }
}

CarriedPtr TaskRunner::carry(Item item, std::vector<CreditPtr> credits, const sched::WorkerInfo* made_on) const {
  auto c = std::make_shared<Carried>(Carried{std::move(item), std::move(credits)});
  // Items a GPU-like worker made are valid in its memory only, until someone
  // needs them elsewhere.
  if (made_on && sched::is_gpu_like(made_on->kind))
    if (const auto* a = std::get_if<Array>(&c->item.value)) {
      const int w = made_on->id;
      if (a->placement().residency == Residency::device) {
        c->where.reset(w);
        c->where.set(w, *a);
      } else if (workers_.devices[static_cast<std::size_t>(w)]->simulated()) {
        c->where.reset(w);  // logically in the simulated GPU's memory only
      }  // a host array from a real GPU variant (e.g. a small result) stays valid on the host
    }
  return c;
}

const Item& TaskRunner::on_host(const Carried& c, Item& scratch) { return transfers_->to(c, memory::host, scratch); }

Item TaskRunner::host_copy(const Carried& c) {
  if (c.remote) return c.remote->fetch();
  Item scratch;
  const Item& placed = on_host(c, scratch);
  return &placed == &scratch ? std::move(scratch) : placed;
}

// ---------------------------------------------------------------------------
// Running variants

void TaskRunner::trace_task(const std::string& op, const std::string& stage, const sched::WorkerInfo& w,
                            const std::string& key, const char* variant, const Outcome& o, std::int64_t id,
                            std::int64_t parent) {
  if (!trace_.enabled()) return;
  trace::Span span{w.id, op, stage, key, variant, o.start_ns, o.end_ns};
  span.failed = !o.ok;
  span.id = id >= 0 ? id : trace_.next_id();
  span.parent = parent;
  trace_.span(std::move(span));
}

void TaskRunner::trace_node_task(const std::string& op, const std::string& stage, const std::string& key,
                                 const RemoteResult& r) {
  if (!trace_.enabled() || r.node.empty()) return;
  const std::int64_t end = trace_.now();
  const auto took = static_cast<std::int64_t>(std::max(0.0, r.seconds) * 1e9);
  trace::Span span{0, op, stage, key, "node", std::max<std::int64_t>(0, end - took), end};
  span.failed = !r.ok;
  span.id = trace_.next_id();
  trace_.node_span(r.node, std::move(span));
}

Execution TaskRunner::execute(const TaskCall& call, sched::TaskEnv& env) {
  const sched::WorkerInfo& w = env.worker();
  const bool gpu_like = sched::is_gpu_like(w.kind);
  std::vector<Item> scratch;
  double moved = 0;
  Inputs inputs;
  // Inputs first, then the operator: transfer time is not the operator's.
  const Outcome placed = call.stage.call(trace_, call.inputs.key, [&] {
    inputs = place(call.inputs, gpu_like ? w.id : memory::host, scratch, moved, &call.node);
  });
  if (!placed.ok) return {placed, {}};
  Execution ex = w.kind == sched::WorkerKind::gpu ? run_gpu_variant(call, inputs, w) : run_cpu_variant(call, inputs, w);
  const char* variant = w.kind == sched::WorkerKind::gpu ? "gpu" : gpu_like ? "sim" : "cpu";
  trace_task(call.node.spec().name, call.stage.name(), w, call.inputs.key, variant, ex.outcome, call.span, call.parent);
  ex.work_ns = ex.outcome.end_ns - ex.outcome.start_ns;
  if (call.sub) {
    // The wait for sub-tasks is their time, which they added to the stage's
    // busy time as they ran: counted once, not again as the parent's (with
    // one worker a parent helping run its own sub-tasks doubled it).
    const std::int64_t waited = call.sub->waited_ns();
    call.stage.busy_ns.fetch_sub(waited);
    ex.work_ns += call.sub->work_ns() - waited;
  }
  if (ex.outcome.ok) record(call, w, moved, ex.outcome);
  return ex;
}

Execution TaskRunner::run_gpu_variant(const TaskCall& call, const Inputs& inputs, const sched::WorkerInfo& w) {
  memory::Device& dev = *workers_.devices[static_cast<std::size_t>(w.id)];
  GpuContextImpl ctx(call.node, &inputs, log_, stopping_, dev);
  Execution ex;
  ex.outcome = call.stage.call(trace_, call.inputs.key, &call.node, [&] {
    call.gpu->gpu(ctx);
    dev.synchronize();
    ctx.out.check_required(call.node);
  });
  ex.out = std::move(ctx.out);
  return ex;
}

Execution TaskRunner::run_cpu_variant(const TaskCall& call, const Inputs& inputs, const sched::WorkerInfo& w) {
  MapContextImpl ctx(call.node, &inputs, log_, stopping_, call.sub);
  if (w.kind == sched::WorkerKind::sim_gpu) {
    const int sc = sched::PerfModel::size_class(array_bytes(call.inputs));
    ctx.set_time_scale(1.0 / std::max(1e-6, model_.speedup(call.node.spec().name, sc) * sim_scale_));
  }
  Execution ex;
  ex.outcome = call.stage.call(trace_, call.inputs.key, &call.node, [&] {
    static_cast<const Map&>(*call.node.op).cpu(ctx);
    ctx.out.check_required(call.node);
  });
  ex.out = std::move(ctx.out);
  return ex;
}

void TaskRunner::record(const TaskCall& call, const sched::WorkerInfo& w, double moved, const Outcome& o) {
  const bool gpu_like = sched::is_gpu_like(w.kind);
  const int sc = sched::PerfModel::size_class(array_bytes(call.inputs));
  // Tasks the worker ran for others while waiting for sub-tasks are not this
  // operator's time.
  const std::int64_t helped = call.sub ? call.sub->helped_ns() : 0;
  const double seconds = static_cast<double>(o.end_ns - o.start_ns - helped) * 1e-9;
  model_.record(call.node.spec().name,
                w.kind == sched::WorkerKind::gpu ? sched::Variant::gpu : gpu_like ? sched::Variant::sim : sched::Variant::cpu,
                sc, seconds);
  if (gpu_like) {
    model_.record_gpu_task(moved, seconds);
    call.stage.on_gpu.fetch_add(1);
  }
}

Execution TaskRunner::run_map_task(Stage& s, const Tuple& t, sched::TaskEnv& env) {
  const std::int64_t id = trace_.enabled() ? trace_.next_id() : -1;
  SubGraph sub(*this, s, t, env.worker(), id);
  return execute({.stage = s, .node = *s.node, .gpu = s.gpu, .inputs = t, .span = id, .sub = &sub}, env);
}

}  // namespace flowd::runtime::detail

// The tasks of a run's stages: a map task (here, or on a cluster's worker
// node), a sink consuming one tuple at a time, a reduce merging partial
// results and its final step. Sources are in routing.cpp with their windows.
#include "runtime/checkpoint.hpp"
#include "runtime/remote.hpp"
#include "runtime/run_state.hpp"

namespace flowd::runtime::detail {

void RunState::StageTask::run(sched::TaskEnv& env) {
  switch (kind_) {
    case Kind::source: st_.run_source(s_, env); break;
    case Kind::map: st_.run_map(s_, tuple_, env); break;
    case Kind::sink: st_.run_sink(s_, env); break;
    case Kind::reduce: st_.run_reduce(s_, tuple_, env); break;
    case Kind::finalize: st_.run_finalize(s_, env); break;
    case Kind::scan: st_.run_scan(s_, env); break;
    case Kind::allpairs: st_.run_allpairs(s_, env); break;
  }
}

void RunState::StageTask::prefetch(const sched::WorkerInfo& w) {
  if (kind_ == Kind::map && sched::is_gpu_like(w.kind)) st_.runner_.prefetch(tuple_, w);
}

void RunState::end_task_locked(StageState& s, const Tuple* t, const Outcome& o, sched::TaskEnv* env) {
  if (!o.ok) {
    if (t) t->mark_failed();
    fail_locked(s, o.key, o.error);
  }
  s.tasks_done.fetch_add(1);
  if (s.pattern() == Pattern::sink) {
    // One sink task at a time: the next tuple waiting keeps the stage busy.
    if (runner_.stopping()) s.backlog.clear();
    if (!s.backlog.empty()) {
      runner_.submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::sink), env);
      return;
    }
    s.sink_busy = false;
  }
  --s.active;
  maybe_close_locked(s, env);
}

void RunState::run_map(StageState& s, Tuple& t, sched::TaskEnv& env) {
  Execution ex;
  if (!runner_.stopping()) ex = runner_.run_map_task(s, t, env);
  std::lock_guard lk(m_);
  if (ex.outcome.ok) route_locked(s, ex.out, t.credits(), &env);
  end_task_locked(s, &t, ex.outcome, &env);
}

void RunState::run_sink(StageState& s, sched::TaskEnv& env) {
  Tuple t;
  {
    std::lock_guard lk(m_);
    t = std::move(s.backlog.front());
    s.backlog.pop_front();
    fetch_ahead_locked(s);
  }
  if (s.sink_node && !runner_.stopping()) {
    run_sink_on_node(s, std::move(t));  // its answer ends the task (remote_sink.cpp)
    return;
  }
  Outcome o{true, {}, {}};
  if (!runner_.stopping()) {
    std::vector<Item> scratch;
    double moved = 0;
    Inputs inputs;
    o = s.call(runner_.trace(), t.key, [&] {
      inputs = runner_.place(t, memory::host, scratch, moved, s.node);
      // Kept before consumed: once its source item counts as finished, a
      // resumed run replays it instead of computing it again.
      if (checkpoint() && !t.replayed) {
        std::vector<SourceRef> sources;
        for (const auto& c : t.credits()) sources.push_back({c->source_stage(), c->key()});
        checkpoint()->keep_sink_input(s.name(), inputs.items, sources);
      }
      SinkContextImpl ctx(*s.node, &inputs, log(), runner_.stop_flag(), opts().provenance, outputs_);
      static_cast<Sink&>(*s.node->op).consume(ctx);
    });
    runner_.trace_task(s.op(), s.name(), env.worker(), t.key, "cpu", o);
  }
  std::lock_guard lk(m_);
  end_task_locked(s, &t, o, &env);
}

void RunState::run_reduce(StageState& s, Tuple& t, sched::TaskEnv& env) {
  Outcome o{true, {}, {}};
  if (!runner_.stopping()) {
    const auto& op = static_cast<const Reduce&>(*s.node->op);
    std::vector<Item> scratch;
    double moved = 0;
    Inputs inputs;
    o = s.call(runner_.trace(), t.key, [&] {
      inputs = runner_.place(t, memory::host, scratch, moved, s.node);
      ReduceContextImpl ctx(*s.node, &inputs, log(), runner_.stop_flag());
      Item acc = op.lift(ctx, *inputs.items[0]);
      // Merge with whatever partials are free until none is left, then park
      // ours: partials stay as few as the reducers running at once.
      while (true) {
        Item other;
        {
          std::lock_guard lk(m_);
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
    runner_.trace_task(s.op(), s.name(), env.worker(), t.key, "cpu", o);
  }
  std::lock_guard lk(m_);
  end_task_locked(s, &t, o, &env);
}

void RunState::run_finalize(StageState& s, sched::TaskEnv& env) {
  std::vector<Item> parts;
  {
    std::lock_guard lk(m_);
    parts = std::move(s.partials);
    s.partials.clear();
  }
  const Inputs none{s.name(), {}};
  ReduceContextImpl ctx(*s.node, &none, log(), runner_.stop_flag());
  Emitted out;
  Outcome o{true, {}, {}};
  if (parts.empty()) {
    log().warn("[" + s.name() + "] received no items, so it produces nothing");
  } else if (!runner_.stopping()) {
    const auto& op = static_cast<const Reduce&>(*s.node->op);
    o = s.call(runner_.trace(), s.name(), [&] {
      Item acc = std::move(parts.front());
      for (std::size_t i = 1; i < parts.size(); ++i) acc = op.merge(ctx, std::move(acc), parts[i]);
      Item result = op.finish(ctx, std::move(acc));
      if (result.meta.key.empty()) result.meta.key = s.name();
      out.add(*s.node, 0, std::move(result));
    });
    runner_.trace_task(s.op(), s.name(), env.worker(), s.name(), "cpu", o);
  }
  std::lock_guard lk(m_);
  route_locked(s, out, {}, &env);
  s.finalized = true;
  end_task_locked(s, nullptr, o, &env);
}

// ---------------------------------------------------------------------------
// Map tasks run by a cluster (runtime/remote.hpp)

void RunState::submit_remote_locked(StageState& s, Tuple t) {
  RemoteTask task;
  task.stage = s.node->index;
  task.key = t.key;
  task.inputs = t.ports;
  task.done = [this, &s, t = std::move(t)](RemoteResult r) mutable {
    runner_.submit(std::make_unique<RemoteAnswer>(*this, s, std::move(t), std::move(r), &RunState::remote_done),
                   nullptr);
  };
  opts().remote->submit(std::move(task));
}

void RunState::count_node_task(StageState& s, const std::string& key, const RemoteResult& r) {
  const auto ns = static_cast<std::int64_t>(r.seconds * 1e9);
  s.busy_ns.fetch_add(ns);
  s.note_call(ns);
  runner_.trace_node_task(s.op(), s.name(), key, r);
}

void RunState::remote_done(StageState& s, const Tuple& t, RemoteResult r) {
  count_node_task(s, r.key.empty() ? t.key : r.key, r);
  std::lock_guard lk(m_);
  if (r.ok) {
    const auto credits = t.credits();
    for (auto& o : r.outputs) {
      route_one_locked(s, o.port, carried_from(o, credits), nullptr);
    }
  }
  end_task_locked(s, &t, {r.ok, std::move(r.error), r.key.empty() ? t.key : std::move(r.key)}, nullptr);
}

}  // namespace flowd::runtime::detail

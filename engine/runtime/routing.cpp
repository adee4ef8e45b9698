// How items move through a run: sources emit them within their windows,
// routing hands them to the consuming stages (matching inputs by key), and
// stages close once nothing more can reach them.
#include <algorithm>

#include "runtime/checkpoint.hpp"
#include "runtime/remote.hpp"
#include "runtime/run_state.hpp"
#include "util/text.hpp"

namespace flowd::runtime::detail {

// ---------------------------------------------------------------------------
// Sources

void RunState::schedule_source(StageState& s) {
  SourceWindow& w = *s.window;
  if (runner_.stopping() || w.exhausted.load()) return;
  if (w.in_flight.load() >= window_) return;
  bool expected = false;
  if (!w.scheduled.compare_exchange_strong(expected, true)) return;
  runner_.submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::source), nullptr);
}

CreditPtr RunState::take_credit(StageState& s, const std::string& key, bool skipped) {
  s.window->in_flight.fetch_add(1);
  return std::make_shared<Credit>(s.name(), key, [this, &s, skipped](const Credit& c) {
    if (checkpoint() && !skipped && !c.failed() && !runner_.stopping()) {
      try {
        checkpoint()->finish({c.source_stage(), c.key()});
      } catch (const std::exception& e) {
        log().warn("[" + c.source_stage() + " " + c.key() + "] not recorded as finished: " + e.what());
      }
    }
    s.window->in_flight.fetch_sub(1);
    s.window->retired.fetch_add(1);
    schedule_source(s);
  });
}

void RunState::run_source(StageState& s, sched::TaskEnv& env) {
  if (opts().remote && opts().remote->takes_source(s.node->index)) {
    run_source_on_node(s);
    return;
  }
  SourceWindow& w = *s.window;
  SourceContextImpl ctx(*s.node, nullptr, log(), runner_.stop_flag());
  if (checkpoint())
    ctx.is_finished = [this, &s](std::string_view key) { return checkpoint()->finished(s.name(), key); };
  bool more = false;
  Outcome o{true, {}, {}};
  if (!runner_.stopping()) {
    auto& source = static_cast<Source&>(*s.node->op);
    o = s.call(runner_.trace(), s.name(), [&] {
      if (!w.opened) {
        w.opened = true;
        source.open(ctx);
      }
      more = source.next(ctx);
    });
    if (!o.ok) more = opts().keep_going;  // a source advances before it throws, so it may go on
    if (opts().item_limit && w.emitted.load() + ctx.out.items().size() + ctx.skipped.size() >= opts().item_limit)
      more = false;
    const std::string key = ctx.out.items().empty() ? s.name() : ctx.out.items().front().second.meta.key;
    runner_.trace_task(s.op(), s.name(), env.worker(), key, "cpu", o);
  }
  {
    std::lock_guard lk(m_);
    if (ctx.expected) w.expected = ctx.expected;
    if (!o.ok) fail_locked(s, o.key, o.error);
    // Items the source did not make, finished by an earlier run: emitted and
    // done at once, as a finished item it emits is below.
    for (const auto& key : ctx.skipped) {
      w.emitted.fetch_add(1);
      ++w.skipped;
      take_credit(s, key, true);
    }
    // Each emitted item takes its own credit.
    for (auto& [port, item] : ctx.out.items()) {
      w.emitted.fetch_add(1);
      if (checkpoint() && checkpoint()->finished(s.name(), item.meta.key)) {
        // Finished by an earlier run: its credit comes back at once.
        ++w.skipped;
        take_credit(s, item.meta.key, true);
        continue;
      }
      const std::string key = item.meta.key;
      Emitted one;
      one.items().emplace_back(port, std::move(item));
      route_locked(s, one, {take_credit(s, key)}, &env);
    }
    s.tasks_done.fetch_add(1);
    if (!more || runner_.stopping()) {
      w.exhausted = true;
      maybe_close_locked(s, &env);
    }
  }
  w.scheduled = false;
  if (more) schedule_source(s);
}

// ---------------------------------------------------------------------------
// Routing

namespace {

// What an item weighs on a link, for the stage profile (placement): an
// array's bytes, a JSON value's text, a table's cells at 8 bytes.
std::uint64_t approximate_bytes(const Item& item) {
  switch (kind_of(item.value)) {
    case ValueKind::none: return 0;
    case ValueKind::array: return item.array().nbytes();
    case ValueKind::json: return item.json().dump().size();
    case ValueKind::table: return 8 * item.table().rows() * item.table().num_columns();
  }
  return 0;
}

}  // namespace

void RunState::route_locked(StageState& from, Emitted& out, const std::vector<CreditPtr>& credits,
                            sched::TaskEnv* env) {
  for (auto& [port, item] : out.items())
    route_one_locked(from, port, runner_.carry(std::move(item), credits, env ? &env->worker() : nullptr), env);
  out.items().clear();
}

void RunState::route_one_locked(StageState& from, std::size_t port, const CarriedPtr& c, sched::TaskEnv* env) {
  from.items_out.fetch_add(1);
  if (!c->remote) from.bytes_out.fetch_add(approximate_bytes(c->item));
  const std::string origin = from.name() + "." + from.node->spec().outputs[port].name;
  for (const auto& ref : from.node->consumers[port]) deliver_locked(stages_[ref.stage], ref.port, c, origin, env);
}

void RunState::deliver_locked(StageState& to, std::size_t port, const CarriedPtr& c, const std::string& from,
                              sched::TaskEnv* env) {
  const PortSpec& in = to.node->spec().inputs[port];
  const std::string& key = c->item.meta.key;
  // An item held by another node is checked where its value is pulled.
  if (!c->remote)
    if (auto why = input_mismatch(in, c->item.value, from)) {
      fail_locked(to, key, *why);
      return;
    }
  if (to.holds_series()) {
    hold_locked(to, port, c);
    return;
  }
  const std::size_t nports = to.node->inputs.size();
  if (to.node->connected_inputs() == 1) {
    Tuple t{key, std::vector<CarriedPtr>(nports)};
    t.ports[port] = c;
    dispatch_locked(to, std::move(t), env);
    return;
  }
  Tuple& slot = to.joins[key];
  if (slot.ports.empty()) {
    slot.key = key;
    slot.ports.resize(nports);
  }
  if (slot.ports[port]) {
    fail_locked(to, key, "received two items with key '" + key + "' on input '" + in.name +
                             "'; inputs are matched by key, so keys must be unique");
    return;
  }
  slot.ports[port] = to.after_series ? std::make_shared<Carried>(Carried{c->item, {}, c->where, c->remote}) : c;
  for (std::size_t p = 0; p < nports; ++p)
    if (to.node->inputs[p] && !slot.ports[p]) return;
  Tuple ready = std::move(slot);
  to.joins.erase(key);
  dispatch_locked(to, std::move(ready), env);
}

void RunState::dispatch_locked(StageState& s, Tuple t, sched::TaskEnv* env) {
  if (runner_.stopping()) return;
  switch (s.pattern()) {
    case Pattern::map: {
      ++s.active;
      if (opts().remote && opts().remote->takes(s.node->index)) {
        submit_remote_locked(s, std::move(t));
        return;
      }
      auto task = std::make_unique<StageTask>(*this, s, StageTask::Kind::map, std::move(t));
      runner_.estimate(s.op(), s.gpu, task->tuple(), *task);
      runner_.submit(std::move(task), env);
      return;
    }
    case Pattern::reduce:
      ++s.active;
      runner_.submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::reduce, std::move(t)), env);
      return;
    case Pattern::sink:
      s.backlog.push_back(std::move(t));
      fetch_ahead_locked(s);
      if (!s.sink_busy) {
        s.sink_busy = true;
        ++s.active;
        runner_.submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::sink), env);
      }
      return;
    case Pattern::source:
    case Pattern::scan:
    case Pattern::allpairs: return;  // validation gives sources no inputs; these hold their items (hold_locked)
  }
}

void RunState::fetch_ahead_locked(const StageState& s) const {
  // Two: the one it takes next and the one after, so a pull is in flight
  // while it consumes; more would only hold more values in memory.
  constexpr std::size_t depth = 2;
  if (s.sink_node) return;  // a sink on a worker node pulls its own inputs there
  for (std::size_t i = 0; i < std::min(depth, s.backlog.size()); ++i)
    for (const auto& p : s.backlog[i].ports)
      if (p && p->remote) p->remote->fetch_ahead();
}

void RunState::maybe_close_locked(StageState& s, sched::TaskEnv* env) {
  if (s.closed) return;
  if (s.pattern() == Pattern::source) {
    if (!s.window->exhausted.load()) return;
  } else if (s.open_upstream > 0 || s.active > 0) {
    return;
  }
  if (s.holds_series() && !s.released && !runner_.stopping())
    if (release_locked(s, env)) return;
  if (s.pattern() == Pattern::reduce && !s.finalized) {
    if (!s.finalizing && !runner_.stopping()) {
      s.finalizing = true;
      ++s.active;
      runner_.submit(std::make_unique<StageTask>(*this, s, StageTask::Kind::finalize), env);
    }
    return;
  }
  // Tuples still missing a partner can never complete now: say so.
  for (auto& [key, t] : s.joins) {
    std::vector<std::string> have, missing;
    for (std::size_t p = 0; p < t.ports.size(); ++p) {
      if (!s.node->inputs[p]) continue;
      (t.ports[p] ? have : missing).push_back(s.node->spec().inputs[p].name);
    }
    if (failed_keys_.count(key)) {
      log().debug("[" + s.name() + " " + key + "] skipped: an upstream task for this key failed");
      continue;
    }
    fail_locked(s, key, "item arrived on input " + join(have, ", ") + " but never on " + join(missing, ", ") +
                            "; inputs are matched by key");
  }
  s.joins.clear();
  s.closed = true;
  ++closed_count_;
  for (const auto& port_consumers : s.node->consumers)
    for (const auto& ref : port_consumers) {
      StageState& c = stages_[ref.stage];
      --c.open_upstream;
      maybe_close_locked(c, env);
    }
  if (closed_count_ == stages_.size()) cv_.notify_all();
}

void RunState::fail_locked(StageState& s, const std::string& key, const std::string& message) {
  TaskFailure f{s.name(), key, message};
  s.failures.fetch_add(1);
  failed_keys_.insert(key);
  if (opts().keep_going) {
    log().error(f.describe() + " (continuing: keep-going)");
    failures_.push_back(std::move(f));
    return;
  }
  if (!runner_.stopping()) {
    log().error(f.describe());
    failures_.push_back(std::move(f));
    runner_.set_stopping();
    cv_.notify_all();
  }
}

}  // namespace flowd::runtime::detail

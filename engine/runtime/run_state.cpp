// The steps of a whole run, from preparing the workers to ending the sinks.
#include "runtime/run_state.hpp"

#include <algorithm>

#include "runtime/checkpoint.hpp"
#include "runtime/remote.hpp"
#include "util/exceptions.hpp"
#include "util/text.hpp"

namespace flowd::runtime::detail {

namespace {

OutputSet::Options output_options(const RunOptions& o) {
  OutputSet::Options out;
  out.overwrite = o.overwrite;
  out.provenance = o.provenance;
  out.not_outputs = o.not_outputs;
  return out;
}

}  // namespace

RunState::RunState(workflow::Graph& graph, RunOptions options, Logger& log)
    : runner_(graph, std::move(options), log), outputs_(output_options(runner_.options()), runner_.log()) {}

RunState::~RunState() { runner_.stop_workers(); }

RunReport RunState::prepare() {
  started_ = Clock::now();
  runner_.prepare();
  const WorkerSet& workers = runner_.workers();
  window_ = opts().max_in_flight > 0 ? opts().max_in_flight : 2 * static_cast<int>(workers.workers.size());
  for (auto& node : runner_.graph().stages) stages_.emplace_back(node);
  // Topological order: producers are marked before their consumers.
  for (auto& st : stages_)
    for (const auto& in : st.node->inputs)
      if (in && (stages_[in->stage].holds_series() || stages_[in->stage].after_series)) st.after_series = true;
  RunReport report;
  report.workers = workers.workers;
  report.gpu_note = workers.gpu_note;
  report.config = config();
  return report;
}

// What a crash report names while a sink opens, commits or aborts: the
// stage, with no item.
exec::CurrentTask RunState::current_task(const StageState& s) {
  return exec::CurrentTask(s.name(), s.op(), s.node->handle.plugin().path().native(), "");
}

bool RunState::open_sinks(RunReport& report) {
  // Before anything is created: a refused run leaves nothing behind.
  if (opts().checkpoint || opts().open_checkpoint)
    for (const auto& s : stages_)
      if (s.pattern() == Pattern::reduce || s.holds_series())
        throw Error("stage '" + s.name() + "' is a " +
                    (s.pattern() == Pattern::reduce
                         ? std::string("reduce: its partial results are")
                         : std::string(s.pattern() == Pattern::scan       ? "scan"
                                                       : s.pattern() == Pattern::allpairs ? "all-pairs stage"
                                                                                          : "map fed consecutive pairs") +
                               ": the series it collects is") +
                    " not kept, so this run cannot be journalled or resumed (--journal/--resume)");
  if (opts().checkpoint || opts().open_checkpoint)
    for (const auto& s : stages_)
      if (sink_on_node(s))
        throw Error("sink '" + s.name() +
                    "' is placed on a worker node: the inputs it consumes there are not kept in this "
                    "process's journal, so this run cannot be journalled or resumed (--journal/--resume); keep the "
                    "sink at the coordinator's site to resume");
  choose_sink_nodes();
  // The last sink of each node checks that node's files, once all declared them.
  std::map<std::uint32_t, const StageState*> last_on;
  for (const auto& s : stages_)
    if (s.sink_node) last_on[*s.sink_node] = &s;
  for (auto& s : stages_) {
    if (s.pattern() != Pattern::sink) continue;
    SinkContextImpl ctx(*s.node, nullptr, log(), runner_.stop_flag(), opts().provenance, outputs_);
    try {
      const auto note = current_task(s);
      if (sink_on_node(s))
        open_sink_on_node(s, s.sink_node && last_on[*s.sink_node] == &s);
      else
        static_cast<Sink&>(*s.node->op).open(ctx);
    } catch (...) {
      const std::string why = current_exception_message("operator '" + s.op() + "'");
      report.failures.push_back({s.name(), "", why});
      report.status = RunStatus::failed;
      report.error = "stage '" + s.name() + "' could not open its output: " + why;
      log().error(report.error);
      finish_sinks(report);  // status failed: every sink aborts, in reverse order
      report.final = progress_locked();
      return false;
    }
  }
  if (opts().commit) {
    try {
      outputs_.check_existing();
    } catch (...) {
      abort_sinks();
      discard_node_outputs();
      outputs_.abort();
      throw;
    }
  }
  return true;
}

void RunState::start() {
  checkpoint_ = opts().checkpoint;
  if (!checkpoint_ && opts().open_checkpoint) {
    try {
      checkpoint_ = opts().open_checkpoint();
    } catch (...) {
      abort_sinks();
      discard_node_outputs();
      outputs_.abort();
      throw;
    }
  }
  runner_.start();
}

void RunState::begin() {
  if (checkpoint()) replay_sink_inputs();
  {
    std::lock_guard lk(m_);
    for (auto& s : stages_)
      if (s.pattern() != Pattern::source && s.open_upstream == 0) maybe_close_locked(s, nullptr);
  }
  for (auto& s : stages_)
    if (s.window) schedule_source(s);
}

// What earlier runs gave the sinks for finished items, before any source runs.
void RunState::replay_sink_inputs() {
  std::uint64_t replayed = 0;
  std::lock_guard lk(m_);
  for (auto& s : stages_) {
    if (s.pattern() != Pattern::sink) continue;
    for (auto& items : checkpoint()->replay(s.name())) {
      Tuple t;
      t.replayed = true;
      t.ports.resize(s.node->inputs.size());
      for (std::size_t p = 0; p < items.size() && p < t.ports.size(); ++p)
        if (items[p]) {
          if (t.key.empty()) t.key = items[p]->meta.key;
          t.ports[p] = runner_.carry(std::move(*items[p]), {}, nullptr);
        }
      dispatch_locked(s, std::move(t), nullptr);
      ++replayed;
    }
  }
  if (replayed) log().info("resuming: " + std::to_string(replayed) + " sink inputs kept by earlier runs replayed");
}

void RunState::wait(RunReport& report, const Tick& tick, std::chrono::milliseconds interval) {
  // With a trace, the queue is sampled often enough to draw; an interrupt is
  // seen within 100 ms (a launcher's SIGKILL may follow its SIGTERM soon).
  auto poll = runner_.trace().enabled() ? std::min(interval, std::chrono::milliseconds(20)) : interval;
  if (opts().interrupt) poll = std::min(poll, std::chrono::milliseconds(100));
  auto next_tick = Clock::now();
  std::unique_lock lk(m_);
  // Stuck for two progress intervals in a row, however often it polls.
  std::optional<Clock::time_point> stuck_since;
  while (closed_count_ < stages_.size() && !runner_.stopping()) {
    cv_.wait_for(lk, poll);
    if (opts().interrupt && opts().interrupt->load()) {
      interrupted_ = true;
      runner_.set_stopping();
      if (opts().commit) outputs_.withdraw();
      log().warn("interrupted: stopping after the running tasks; no output will be written");
      break;
    }
    if (!stuck_locked()) {
      stuck_since.reset();
    } else if (!stuck_since) {
      stuck_since = Clock::now();
    } else if (Clock::now() - *stuck_since >= 2 * interval) {
      report.error = stuck_message_locked();
      log().error(report.error);
      runner_.set_stopping();
      break;
    }
    if (runner_.trace().enabled()) sample_trace(lk);
    if (tick && Clock::now() >= next_tick) {
      next_tick = Clock::now() + interval;
      Progress p = progress_locked();
      lk.unlock();
      tick(p);
      lk.lock();
    }
  }
}

void RunState::finish(RunReport& report) {
  // No answer from the cluster after this: what is still out is abandoned.
  if (opts().remote) opts().remote->drain();
  try {
    runner_.wait_idle();
  } catch (...) {
    // Logged when it escaped (TaskRunner::start); the sinks still abort below.
    if (report.error.empty()) report.error = "internal error: " + current_exception_message("a task");
  }
  runner_.stop_workers();
  {
    std::lock_guard lk(m_);
    for (auto& s : stages_) {
      s.joins.clear();
      s.backlog.clear();
      s.held.clear();
    }
    report.failures = failures_;
    if (auto scans = scans_json(); !scans.empty()) report.config["scans"] = std::move(scans);
    if (auto ap = allpairs_json(); !ap.empty()) report.config["allpairs"] = std::move(ap);
  }
  if (interrupted_) report.status = RunStatus::interrupted;
  else if (runner_.stopping()) report.status = RunStatus::failed;
  else if (!failures_.empty()) report.status = RunStatus::completed_with_failures;
  // Sinks on worker nodes commit or abort there: the cluster takes those
  // steps again.
  if (!sink_nodes().empty()) opts().remote->resume();
  finish_sinks(report);
  if (checkpoint()) {
    std::uint64_t skipped = 0;
    {
      std::lock_guard lk(m_);
      for (const auto& s : stages_)
        if (s.window) skipped += s.window->skipped;
    }
    if (skipped) log().info("resuming: " + std::to_string(skipped) + " source items finished by earlier runs were skipped");
  }
  report.bytes_to_devices = runner_.bytes_to_devices();
  report.bytes_to_host = runner_.bytes_to_host();
  std::lock_guard lk(m_);
  report.final = progress_locked();
}

// E.g. two sources emitting keys in different orders with a small window:
// items wait for partners that can never come.
bool RunState::stuck_locked() const {
  if (closed_count_ == stages_.size() || runner_.stopping()) return false;
  for (const auto& s : stages_) {
    if (s.active > 0) return false;
    if (s.window && (s.window->scheduled.load() || (!s.window->exhausted.load() && s.window->in_flight.load() < window_)))
      return false;
  }
  return true;
}

std::string RunState::stuck_message_locked() const {
  std::vector<std::string> waiting;
  for (const auto& s : stages_)
    if (!s.joins.empty()) waiting.push_back(s.name() + " (" + std::to_string(s.joins.size()) + " items)");
  return "the run cannot make progress: " +
         (waiting.empty() ? std::string("no stage can run") : "items wait for key partners in " + join(waiting, ", ")) +
         " while every source has max_in_flight=" + std::to_string(window_) +
         " items alive; sources feeding one stage must emit keys in compatible orders, or raise --max-in-flight";
}

void RunState::sample_trace(std::unique_lock<std::mutex>& lk) {
  lk.unlock();
  runner_.trace().counter("ready tasks", static_cast<double>(runner_.queued()));
  lk.lock();
  std::uint64_t alive = 0;
  for (const auto& s : stages_)
    if (s.window) alive += static_cast<std::uint64_t>(std::max(0, s.window->in_flight.load()));
  runner_.trace().counter("items in flight", static_cast<double>(alive));
}

namespace {

double steps_seconds(const Stage& s) {
  const std::int64_t began = s.steps_started_ns.load();
  if (began == 0) return 0;
  return static_cast<double>(std::chrono::steady_clock::now().time_since_epoch().count() - began) * 1e-9 *
         (static_cast<double>(std::chrono::steady_clock::period::num) * 1e9 /
          static_cast<double>(std::chrono::steady_clock::period::den));
}

}  // namespace

Progress RunState::progress_locked() const {
  Progress p;
  p.elapsed = Clock::now() - started_;
  bool all_known = true;
  std::uint64_t expected = 0;
  for (const auto& s : stages_) {
    p.stages.push_back(StageProgress{.name = s.name(),
                                     .op = s.op(),
                                     .tasks_done = s.tasks_done.load(),
                                     .on_gpu = s.on_gpu.load(),
                                     .items_out = s.items_out.load(),
                                     .bytes_out = s.bytes_out.load(),
                                     .failures = s.failures.load(),
                                     .running = s.running.load(),
                                     .busy_seconds = static_cast<double>(s.busy_ns.load()) * 1e-9,
                                     .longest_call_seconds = static_cast<double>(s.longest_call_ns.load()) * 1e-9,
                                     .closed = s.closed,
                                     .steps_done = s.steps_done.load(),
                                     .steps_expected = s.steps_expected.load(),
                                     .steps_seconds = steps_seconds(s),
                                     .step_name = s.step_name});
    if (s.window) {
      p.source_items += s.window->emitted.load();
      p.retired_items += s.window->retired.load();
      if (s.window->exhausted.load()) expected += s.window->emitted.load();
      else if (s.window->expected) expected += *s.window->expected;
      else all_known = false;
    }
  }
  if (all_known) p.expected_items = expected;
  return p;
}

void RunState::abort_sinks(std::size_t first) noexcept {
  std::vector<StageState*> sinks;
  for (auto& s : stages_)
    if (s.pattern() == Pattern::sink) sinks.push_back(&s);
  for (std::size_t i = sinks.size(); i-- > first;) {
    const auto note = current_task(*sinks[i]);
    if (!sinks[i]->sink_node) {
      static_cast<Sink&>(*sinks[i]->node->op).abort();
      continue;
    }
    if (sinks[i]->sink_node_lost) continue;  // nothing left to abort
    try {
      if (const RemoteResult r = sink_step(*sinks[i], {{"phase", "sink"}, {"step", "abort_sink"}}); !r.ok)
        log().warn("sink '" + sinks[i]->name() + "' on " + sinks[i]->sink_node_name + " did not abort: " + r.error);
    } catch (const std::exception& e) {
      log().warn("sink '" + sinks[i]->name() + "' on " + sinks[i]->sink_node_name + " did not abort: " + e.what());
    }
  }
}

// Two phases (output_set.hpp): every sink completes its staged files
// (commit, in stage order), then the run moves all of them into place at
// once. A failure in either phase leaves no output of this run. Sinks on
// worker nodes (remote_sink.cpp) take part: every node that writes flushes
// its files before any renames, then the nodes rename theirs, then this
// process; only a rename failing after another node's succeeded leaves
// outputs mixed, and the report says which node holds what.
void RunState::finish_sinks(RunReport& report) {
  auto abort_all = [&](std::size_t first_sink) {
    abort_sinks(first_sink);
    discard_node_outputs();
    outputs_.abort();
  };
  if (!opts().commit ||
      (report.status != RunStatus::succeeded && report.status != RunStatus::completed_with_failures)) {
    abort_all(0);
    return;
  }
  auto fail = [&](std::string error) {
    report.status = RunStatus::failed;
    report.error = std::move(error);
    log().error(report.error);
  };
  std::size_t index = 0;
  for (auto& s : stages_) {
    if (s.pattern() != Pattern::sink) continue;
    SinkContextImpl ctx(*s.node, nullptr, log(), runner_.stop_flag(), opts().provenance, outputs_);
    try {
      const auto note = current_task(s);
      if (!s.sink_node) {
        static_cast<Sink&>(*s.node->op).commit(ctx);
      } else if (const RemoteResult r = sink_step(s, {{"phase", "sink"}, {"step", "commit_sink"}}); !r.ok) {
        throw Error(r.error);
      }
    } catch (...) {
      fail("stage '" + s.name() + "' could not commit its output: " +
           current_exception_message("operator '" + s.op() + "'"));
      abort_all(index);  // this one and those not completed yet; the others hold nothing more
      return;
    }
    ++index;
  }
  const std::vector<StageState*> nodes = sink_nodes();
  for (StageState* first : nodes)
    if (const std::string why = node_outputs_step(*first, "prepare"); !why.empty()) {
      fail("the outputs could not be committed: " + why);
      abort_all(index);
      return;
    }
  std::vector<std::string> placed;  // nodes whose files are in place
  auto mixed = [&](const std::string& why) {
    fail("the outputs could not be committed: " + why + "; but the outputs written on " + join(placed, ", ") +
         " are already in place, so outputs are mixed");
    report.outputs_mixed = true;
    abort_all(index);
  };
  try {
    outputs_.prepare();
  } catch (const std::exception& e) {
    fail(std::string("the outputs could not be committed: ") + e.what());
    abort_all(index);
    return;
  }
  for (StageState* first : nodes) {
    if (const std::string why = node_outputs_step(*first, "commit"); !why.empty()) {
      if (placed.empty()) {
        fail("the outputs could not be committed: " + why);
        abort_all(index);
      } else {
        mixed(why);
      }
      return;
    }
    placed.push_back(first->sink_node_name);
  }
  for (auto& s : stages_)
    if (s.sink_node) log().info("sink '" + s.name() + "': its files were written on " + s.sink_node_name);
  try {
    outputs_.commit();
    for (auto& [folder, files] : outputs_.committed()) {
      OutputFolder f{folder.string(), {}};
      for (const auto& file : files) f.files.push_back(file.string());
      report.outputs.push_back(std::move(f));
    }
  } catch (const OutputsMixed& e) {
    fail(std::string("the outputs could not be committed: ") + e.what());
    report.outputs_mixed = true;
    outputs_.abort();
  } catch (const std::exception& e) {
    if (!placed.empty()) {
      mixed(std::string("here: ") + e.what());
      return;
    }
    fail(std::string("the outputs could not be committed: ") + e.what());
    outputs_.abort();
  }
}

Json RunState::config() const {
  const WorkerSet& workers = runner_.workers();
  Json workers_json = Json::array();
  for (const auto& w : workers.workers) {
    const char* kind = w.kind == sched::WorkerKind::cpu ? "cpu" : w.kind == sched::WorkerKind::gpu ? "gpu" : "sim_gpu";
    Json j = {{"name", w.name}, {"kind", kind}};
    if (const auto& d = workers.devices[static_cast<std::size_t>(w.id)]) j["device"] = d->name();
    workers_json.push_back(std::move(j));
  }
  Json c = {{"workflow", runner_.graph().workflow.name},
            {"scheduler", opts().scheduler},
            {"locality", opts().locality},
            {"prefetch", opts().prefetch},
            {"gpus", opts().gpus.str()},
            {"gpu_note", workers.gpu_note},
            {"simulated_gpus", workers.simulated},
            {"workers", std::move(workers_json)},
            {"max_in_flight", window_}};
  if (workers.simulated) c["sim_bandwidth_gb_s"] = opts().sim_bandwidth / 1e9;
  if (opts().speedup_error > 0) c["speedup_error"] = opts().speedup_error;
  c["transfer_impact"] = opts().transfer_impact.value_or(runner_.model().transfer_impact());
  for (const char* k : {"flowd_version", "workflow_sha256", "command", "created", "host"})
    if (opts().provenance.contains(k)) c[k] = opts().provenance[k];
  return c;
}

}  // namespace flowd::runtime::detail

// Sinks that a placement moved to a worker node (docs/cluster.md
// "Placement"): their files are written at the site that should hold them,
// and what they consume goes there straight from the node that made it. The
// coordinator keeps the sink's backlog and sends one step at a time, as
// runtime/node_sinks.hpp lists them; the run's two-phase commit spans every
// node that writes (finish_sinks in run_state.cpp).
#include <algorithm>
#include <future>

#include "runtime/remote.hpp"
#include "runtime/run_state.hpp"

namespace flowd::runtime::detail {

namespace {

// The answer to one step, for a caller that waits for it. A job the
// executor drops unanswered (submitted after drain()) still answers: the
// promise is kept when the last copy of the callback goes.
struct StepAnswer {
  std::promise<RemoteResult> promise;
  bool given = false;
  void give(RemoteResult r) {
    if (given) return;
    given = true;
    promise.set_value(std::move(r));
  }
  ~StepAnswer() {
    RemoteResult r;
    r.error = "the cluster dropped the step unanswered (the run was ending)";
    give(std::move(r));
  }
};

}  // namespace

bool RunState::sink_on_node(const StageState& s) const {
  return s.pattern() == Pattern::sink && opts().remote && opts().remote->takes_sink(s.node->index);
}

void RunState::choose_sink_nodes() {
  for (auto& s : stages_) {
    if (!sink_on_node(s)) continue;
    // One node for the whole sink: its operator's state and its files are there.
    const auto nodes = opts().remote->nodes_for(s.node->index);
    if (nodes.empty()) continue;  // open_sink_on_node says so
    s.sink_node = nodes.front().id;
    s.sink_node_name = nodes.front().name;
    log().info("sink '" + s.name() + "' runs on " + s.sink_node_name + ", which writes its files");
  }
}

RemoteResult RunState::sink_step(StageState& s, Json step) {
  if (s.sink_node_lost) {
    RemoteResult gone;
    gone.error = s.sink_node_name + " was lost during the run, and sink '" + s.name() + "' with it";
    gone.node_lost = true;
    return gone;
  }
  auto answer = std::make_shared<StepAnswer>();
  auto got = answer->promise.get_future();
  RemoteTask task;
  task.stage = s.node->index;
  task.key = s.name();
  task.scan = std::move(step);
  task.node = s.sink_node;
  task.done = [answer = std::move(answer)](RemoteResult r) { answer->give(std::move(r)); };
  opts().remote->submit(std::move(task));
  // Bounded by the cluster: the node answers, or is declared lost and the
  // pinned step fails (node_lost), or the step is dropped.
  RemoteResult r = got.get();
  if (!r.ok && r.node_lost) {
    s.sink_node_lost = true;
    r.error += " (sink '" + s.name() + "' kept its state and files on that node, so they are lost)";
  }
  return r;
}

void RunState::open_sink_on_node(StageState& s, bool check) {
  if (!s.sink_node)
    throw Error("sink '" + s.name() +
                "' is placed on worker nodes by its labels, but no live worker node matches them and has it open");
  Json step = {{"phase", "sink"}, {"step", "open"}, {"check", check}, {"overwrite", opts().overwrite},
               {"provenance", opts().provenance}};
  const RemoteResult r = sink_step(s, std::move(step));
  if (!r.ok) throw Error(r.error);  // "on NODE: ..." as the cluster words it
}

void RunState::run_sink_on_node(StageState& s, Tuple t) {
  RemoteTask task;
  task.stage = s.node->index;
  task.key = t.key;
  task.inputs = t.ports;
  task.scan = {{"phase", "sink"}, {"step", "consume"}};
  task.node = s.sink_node;
  task.done = [this, &s, t = std::move(t)](RemoteResult r) mutable {
    // Routed on a pool thread, as a map task's answer is.
    runner_.submit(std::make_unique<RemoteAnswer>(*this, s, std::move(t), std::move(r), &RunState::sink_answer),
                   nullptr);
  };
  opts().remote->submit(std::move(task));
}

void RunState::sink_answer(StageState& s, const Tuple& t, RemoteResult r) {
  count_node_task(s, r.key.empty() ? t.key : r.key, r);
  if (!r.ok && r.node_lost)
    r.error += " (sink '" + s.name() + "' kept its state and files on that node, so the run cannot go on)";
  std::lock_guard lk(m_);
  const bool lost = !r.ok && r.node_lost;
  if (lost) s.sink_node_lost = true;
  end_task_locked(s, &t, {r.ok, std::move(r.error), r.key.empty() ? t.key : std::move(r.key)}, nullptr);
  if (lost && !runner_.stopping()) {  // not even with --keep-going
    runner_.set_stopping();
    cv_.notify_all();
  }
}

std::vector<StageState*> RunState::sink_nodes() {
  std::vector<StageState*> firsts;  // the first sink of each node, in stage order
  for (auto& s : stages_) {
    if (!s.sink_node) continue;
    if (std::none_of(firsts.begin(), firsts.end(), [&](const StageState* f) { return f->sink_node == s.sink_node; }))
      firsts.push_back(&s);
  }
  return firsts;
}

std::string RunState::node_outputs_step(StageState& first, const char* step) {
  const RemoteResult r = sink_step(first, {{"phase", "sink"}, {"step", step}});
  return r.ok ? std::string() : r.error;
}

void RunState::discard_node_outputs() noexcept {
  try {
    for (StageState* first : sink_nodes())
      if (first->sink_node_lost) continue;  // nothing to remove there: its temporaries went with it
      else if (const std::string why = node_outputs_step(*first, "discard"); !why.empty())
        log().warn("removing the temporaries of sinks on worker nodes: " + why);
  } catch (const std::exception& e) {
    log().warn(std::string("removing the temporaries on the sinks' nodes: ") + e.what());
  }
}

}  // namespace flowd::runtime::detail

// A source that a placement moved to a worker node (docs/cluster.md
// "Placement"): the data are read where they are, and only what the next
// stages need crosses a link. The window, credits and routing stay here;
// each next() runs on one node, which keeps the source's operator from call
// to call (runtime::TaskHost::submit_source).
#include "runtime/checkpoint.hpp"
#include "runtime/remote.hpp"
#include "runtime/run_state.hpp"

namespace flowd::runtime::detail {

// Routed on a pool thread, as a map task's answer is.
class RunState::SourceAnswer final : public sched::Task {
public:
  SourceAnswer(RunState& st, StageState& s, RemoteResult r) : st_(st), s_(s), result_(std::move(r)) {}
  void run(sched::TaskEnv&) override { st_.source_answer(s_, std::move(result_)); }

private:
  RunState& st_;
  StageState& s_;
  RemoteResult result_;
};

void RunState::run_source_on_node(StageState& s) {
  SourceWindow& w = *s.window;
  std::string refused;
  if (!runner_.stopping() && !w.node) {
    // One node for the whole source: its operator's state lives there.
    const auto nodes = opts().remote->nodes_for(s.node->index);
    if (nodes.empty()) {
      refused = "source '" + s.name() +
                "' is placed on worker nodes by its labels, but no live worker node matches them and has it open";
    } else {
      w.node = nodes.front().id;
      log().info("source '" + s.name() + "' runs on " + nodes.front().name);
    }
  }
  if (runner_.stopping() || !refused.empty()) {
    {
      std::lock_guard lk(m_);
      if (!refused.empty()) fail_locked(s, s.name(), refused);
      w.exhausted = true;
      maybe_close_locked(s, nullptr);
    }
    w.scheduled = false;
    return;
  }
  RemoteTask task;
  task.stage = s.node->index;
  task.key = s.name();
  task.scan = {{"phase", "source"}};
  task.node = w.node;
  task.done = [this, &s](RemoteResult r) {
    runner_.submit(std::make_unique<SourceAnswer>(*this, s, std::move(r)), nullptr);
  };
  opts().remote->submit(std::move(task));
}

void RunState::source_answer(StageState& s, RemoteResult r) {
  SourceWindow& w = *s.window;
  // Its outputs end with the node's record of the call: the item before it
  // names the call.
  count_node_task(s, r.outputs.size() > 1 ? r.outputs.front().meta.key : s.name(), r);
  Outcome o{r.ok, std::move(r.error), r.key.empty() ? s.name() : std::move(r.key)};
  bool more = false;
  if (o.ok) {
    // The node's record of the call comes last (TaskHost::submit_source).
    const Json* record = nullptr;
    if (!r.outputs.empty())
      if (const auto it = r.outputs.back().meta.attrs.find("flowd.source"); it != r.outputs.back().meta.attrs.end())
        record = &*it;
    if (!record || !record->is_object() || !record->value("more", Json()).is_boolean()) {
      o = {false, "the worker node's answer to next() has no record of it (an older flowd on the node?)", s.name()};
    } else {
      more = record->at("more").get<bool>();
      if (const auto e = record->value("expected", Json()); e.is_number_unsigned()) {
        std::lock_guard lk(m_);
        w.expected = e.get<std::uint64_t>();
      }
      r.outputs.pop_back();
    }
  } else {
    // A source advances before it throws, so it may go on; not when its
    // node, which held its state, is gone.
    more = opts().keep_going && !r.node_lost;
    if (r.node_lost) o.error += " (the source's state was on that node, so it cannot go on elsewhere)";
  }
  if (opts().item_limit && w.emitted.load() + r.outputs.size() >= opts().item_limit) more = false;
  {
    std::lock_guard lk(m_);
    if (!o.ok) fail_locked(s, o.key, o.error);
    for (auto& out : r.outputs) {
      w.emitted.fetch_add(1);
      const std::string key = out.meta.key;
      if (checkpoint() && checkpoint()->finished(s.name(), key)) {
        ++w.skipped;
        take_credit(s, key, true);
        continue;
      }
      route_one_locked(s, out.port, carried_from(out, {take_credit(s, key)}), nullptr);
    }
    s.tasks_done.fetch_add(1);
    if (!more || runner_.stopping()) {
      w.exhausted = true;
      maybe_close_locked(s, nullptr);
    }
  }
  w.scheduled = false;
  if (more) schedule_source(s);
}

}  // namespace flowd::runtime::detail

#include "sched/task_graph.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>

namespace flowd::sched {

struct TaskGraph::Execution {
  std::atomic<std::size_t> remaining;
  std::atomic<bool> failed{false};
  std::mutex m;
  bool finished = false;  // set under m by the last node, so run() never frees state still in use
  std::condition_variable done;
  std::exception_ptr error;
};

class TaskGraph::NodeTask final : public Task {
public:
  NodeTask(TaskGraph& g, Execution& x, NodeId id) : graph_(g), exec_(x), id_(id) {
    runs_on = g.nodes_[id].runs_on;
  }

  void run(TaskEnv& env) override {
    Node& node = graph_.nodes_[id_];
    if (!exec_.failed.load(std::memory_order_relaxed)) {
      try {
        node.fn(env.worker());
      } catch (...) {
        std::lock_guard lk(exec_.m);
        if (!exec_.error) exec_.error = std::current_exception();
        exec_.failed = true;
      }
    }
    for (NodeId s : node.successors)
      if (graph_.nodes_[s].pending.fetch_sub(1, std::memory_order_acq_rel) == 1)
        env.spawn(std::make_unique<NodeTask>(graph_, exec_, s));
    if (exec_.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lk(exec_.m);
      exec_.finished = true;
      exec_.done.notify_all();
    }
  }

private:
  TaskGraph& graph_;
  Execution& exec_;
  NodeId id_;
};

TaskGraph::NodeId TaskGraph::add(Fn fn, KindMask runs_on) {
  return add_on_worker([fn = std::move(fn)](const WorkerInfo&) { fn(); }, runs_on);
}

TaskGraph::NodeId TaskGraph::add_on_worker(WorkerFn fn, KindMask runs_on) {
  auto& n = nodes_.emplace_back();
  n.fn = std::move(fn);
  n.runs_on = runs_on;
  return static_cast<NodeId>(nodes_.size() - 1);
}

void TaskGraph::precede(NodeId before, NodeId after) {
  if (before >= nodes_.size() || after >= nodes_.size()) throw std::out_of_range("TaskGraph::precede: no such node");
  nodes_[before].successors.push_back(after);
  ++nodes_[after].predecessors;
}

void TaskGraph::run_via(const Submit& submit, const Help& help) {
  if (nodes_.empty()) return;
  // Kahn's count detects a cycle before anything runs.
  {
    std::vector<std::uint32_t> indeg(nodes_.size());
    std::vector<NodeId> ready;
    for (NodeId i = 0; i < nodes_.size(); ++i)
      if ((indeg[i] = nodes_[i].predecessors) == 0) ready.push_back(i);
    std::size_t seen = 0;
    while (!ready.empty()) {
      const NodeId n = ready.back();
      ready.pop_back();
      ++seen;
      for (NodeId s : nodes_[n].successors)
        if (--indeg[s] == 0) ready.push_back(s);
    }
    if (seen != nodes_.size()) throw std::invalid_argument("TaskGraph::run: the graph has a cycle");
  }

  Execution x;
  x.remaining = nodes_.size();
  std::vector<TaskPtr> roots;
  for (NodeId i = 0; i < nodes_.size(); ++i) {
    nodes_[i].pending.store(nodes_[i].predecessors, std::memory_order_relaxed);
    if (nodes_[i].predecessors == 0) roots.push_back(std::make_unique<NodeTask>(*this, x, i));
  }
  submit(std::move(roots));
  if (help) {
    // Helps while tasks are ready; otherwise waits a little (a task made
    // ready meanwhile does not wake this thread, only the pool's workers).
    while (true) {
      {
        std::unique_lock lk(x.m);
        if (x.finished) break;
      }
      if (!help()) {
        std::unique_lock lk(x.m);
        x.done.wait_for(lk, std::chrono::milliseconds(1), [&] { return x.finished; });
      }
    }
  } else {
    std::unique_lock lk(x.m);
    x.done.wait(lk, [&] { return x.finished; });
  }
  if (x.error) std::rethrow_exception(x.error);
}

}  // namespace flowd::sched

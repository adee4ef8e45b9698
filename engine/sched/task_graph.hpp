#pragma once
// A static DAG of callables run on workers: the dispatch benchmark's shapes
// (independent tasks, chains, fork-join) and the scan strategies' plans
// (sched/scan.hpp).
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "sched/task.hpp"

namespace flowd::sched {

// Whatever queues tasks for workers (exec::WorkerPool): the scheduler layer
// decides what runs where and knows no threads, so it names no executor.
template <class P>
concept TaskSubmitter = requires(P& p, std::vector<TaskPtr> tasks) { p.submit(std::move(tasks)); };
// A submitter whose caller is itself a worker (a task building a graph): it
// runs ready tasks while it waits (help_one(): false when there was none),
// so a graph run from inside a task never waits for a worker it occupies.
template <class P>
concept HelpingSubmitter = TaskSubmitter<P> && requires(P& p) {
  { p.help_one() } -> std::convertible_to<bool>;
};

class TaskGraph {
public:
  using NodeId = std::uint32_t;
  using Fn = std::function<void()>;
  // A node that needs to know the worker running it (its kind picks an
  // operator's variant; its id keys per-worker statistics).
  using WorkerFn = std::function<void(const WorkerInfo&)>;

  NodeId add(Fn fn, KindMask runs_on = cpu_only);
  NodeId add_on_worker(WorkerFn fn, KindMask runs_on = cpu_only);
  // `before` must finish before `after` starts.
  void precede(NodeId before, NodeId after);
  std::size_t size() const noexcept { return nodes_.size(); }

  // Runs every node once on `pool`'s workers, respecting edges; blocks until
  // done. If a node throws, nodes depending on it are skipped and the first
  // exception is rethrown here. Throws std::invalid_argument for a cyclic graph.
  template <TaskSubmitter P> void run(P& pool) {
    Help help;
    if constexpr (HelpingSubmitter<P>) help = [&pool] { return pool.help_one(); };
    run_via([&pool](std::vector<TaskPtr> roots) { pool.submit(std::move(roots)); }, help);
  }

private:
  using Submit = std::function<void(std::vector<TaskPtr>)>;
  using Help = std::function<bool()>;
  // run() without the pool's type: `submit` takes the root tasks; later ones
  // are spawned by the tasks that make them ready. `help`, if set, runs a
  // ready task on the waiting thread.
  void run_via(const Submit& submit, const Help& help);

  struct Node {
    WorkerFn fn;
    KindMask runs_on;
    std::vector<NodeId> successors;
    std::uint32_t predecessors = 0;
    std::atomic<std::uint32_t> pending{0};
  };
  class NodeTask;
  struct Execution;

  std::deque<Node> nodes_;  // deque: stable addresses while nodes are added
};

}  // namespace flowd::sched

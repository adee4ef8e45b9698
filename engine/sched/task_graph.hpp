#pragma once
// A static DAG of callables run on a WorkerPool: the dispatch benchmark's
// shapes (independent tasks, chains, fork-join) and, later, scan strategies.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "sched/task.hpp"

namespace flowd::exec {
class WorkerPool;
}

namespace flowd::sched {

class TaskGraph {
public:
  using NodeId = std::uint32_t;
  using Fn = std::function<void()>;

  NodeId add(Fn fn, KindMask runs_on = cpu_only);
  // `before` must finish before `after` starts.
  void precede(NodeId before, NodeId after);
  std::size_t size() const noexcept { return nodes_.size(); }

  // Runs every node once, respecting edges; blocks until done. If a node
  // throws, nodes depending on it are skipped and the first exception is
  // rethrown here. Throws std::invalid_argument for a cyclic graph.
  void run(exec::WorkerPool& pool);

private:
  struct Node {
    Fn fn;
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

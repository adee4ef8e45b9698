#pragma once
// The tasks a worker node holds (docs/cluster.md "Runtime protocol", steps
// 4, 5 and 8): assigned tasks wait in arrival order until one of the node's
// `slots` is free, then they are *started* (inputs pulled, then run) and
// stay started until they end. Up to `pull_ahead` more are started while
// every slot is busy: their inputs are pulled while the slots compute, so a
// slot that frees finds its next task's inputs here instead of waiting for
// them. Unstarted tasks are the ones another node may steal, unless they
// were stolen once already.
//
// The queue also keeps the node's demand honest: it asks for work only for
// capacity (slots + lookahead) that is neither holding a task nor already
// asked for, so the coordinator, which counts what each node asked for, is
// never asked twice for the same room.
//
// Pure bookkeeping, no threads or sockets: the node's socket thread owns it
// (worker_node_serve.cpp), and the tests drive it alone.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "net/node/protocol.hpp"
#include "wire/messages.hpp"

namespace flowd::net::node {

// An assign_task, checked and with its spec parsed.
struct QueuedTask {
  std::uint64_t task_id = 0;
  std::string stage;
  std::vector<wire::ItemRef> inputs;  // one per connected input port
  TaskSpec spec;                      // spec.ports[i] is the port of inputs[i]
};

class WorkerQueue {
public:
  // `slots`: tasks run at once (at least 1); `lookahead`: tasks held
  // beyond them, waiting (and stealable); `pull_ahead`: of those, how many
  // may be started (their inputs pulled) while every slot is busy.
  WorkerQueue(std::size_t slots, std::size_t lookahead, std::size_t pull_ahead = 0);

  // Room for more tasks that has not been asked for yet: capacity minus
  // the tasks held minus what was asked for and not yet assigned.
  std::uint32_t demand() const noexcept;
  // demand(), now recorded as asked for: call it when sending request_work.
  std::uint32_t take_demand() noexcept;

  // An assignment arrived: it fills one room asked for (if any was; a
  // coordinator that sends unasked is still obeyed). add() does this
  // itself; call it alone for an assignment that is refused, not queued.
  void note_assignment() noexcept;

  // Queues a task (after note_assignment()). False, and nothing changes,
  // when a task with that id is already held: a duplicate assignment.
  bool add(QueuedTask task);

  // The oldest waiting task, now started; nullopt while every slot and every
  // pull ahead is taken, or nothing waits.
  std::optional<QueuedTask> start_next();
  // A started task ended (done, failed). False when it was not started.
  bool finish(std::uint64_t task_id);

  // Takes up to `max` waiting (never started) tasks out of the queue, the
  // newest first: the ones this node would reach last. A task whose spec
  // says it is not stealable (it was stolen once) stays. Their room becomes
  // free again (demand() counts it).
  std::vector<std::uint64_t> steal(std::size_t max);
  // Drops every waiting task (shutdown) and returns their ids.
  std::vector<std::uint64_t> drop_waiting();

  bool holds(std::uint64_t task_id) const { return ids_.count(task_id) > 0; }
  std::size_t waiting() const noexcept { return waiting_.size(); }
  std::size_t started() const noexcept { return started_.size(); }
  std::size_t asked() const noexcept { return asked_; }
  std::size_t slots() const noexcept { return slots_; }
  std::size_t capacity() const noexcept { return slots_ + lookahead_; }
  // Started task ids (shutdown reports them).
  std::vector<std::uint64_t> started_ids() const { return {started_.begin(), started_.end()}; }

private:
  std::size_t slots_;
  std::size_t lookahead_;
  std::size_t pull_ahead_;
  std::size_t asked_ = 0;          // asked for and not yet assigned
  std::deque<QueuedTask> waiting_;  // oldest first
  std::set<std::uint64_t> started_;
  std::set<std::uint64_t> ids_;     // waiting and started: duplicate detection
};

}  // namespace flowd::net::node

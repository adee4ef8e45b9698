#pragma once
// One combine of a scan stage as the scan strategies call it, wherever the
// scan runs: in the run's own process (runtime/scan_stage.cpp) or as a
// cluster rank's job on a worker node (runtime/task_host.cpp). The operands
// are placed where the worker's variant runs, the shortcut is tried, then
// the CPU or GPU combine; its span is traced.
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/task_runner.hpp"

namespace flowd::runtime::detail {

// ctx.item(port, key) of a combine: the item of the stage's input `port`
// with that key, wherever it is held (a remote one is pulled once and kept).
// Throws flowd::Error naming what is missing.
using ScanOtherInput = std::function<CarriedPtr(std::size_t port, std::string_view key)>;

// The workers of a task runner as a scan's task graph sees them from the
// worker running the scan task, which runs ready tasks while it waits (so a
// scan on one worker does not wait for itself).
class HelpingPool {
public:
  HelpingPool(TaskRunner& r, const sched::WorkerInfo& w) : runner_(r), worker_(w) {}
  void submit(std::vector<sched::TaskPtr> tasks) {
    for (auto& t : tasks)
      runner_.submit(std::move(t), nullptr);
  }
  bool help_one() { return runner_.run_one(worker_); }

private:
  TaskRunner& runner_;
  const sched::WorkerInfo& worker_;
};

// How many of the runner's workers can run the stage's combine (CPUs and
// simulated GPUs; real GPUs when it has a GPU combine), and which kinds.
sched::KindMask scan_kinds(const Stage& s);
int scan_lanes(const TaskRunner& runner, sched::KindMask kinds);

class ScanCombiner {
public:
  ScanCombiner(TaskRunner& runner, Stage& stage, ScanOtherInput others)
      : runner_(runner), s_(stage), others_(std::move(others)) {}

  // left ⊙ right; the result carries the right operand's metadata (the key of
  // the last element it covers). Throws ItemError naming that key.
  CarriedPtr operator()(const sched::WorkerInfo& w, const CarriedPtr& left, const CarriedPtr& right) const;

private:
  const Item& other_input(std::size_t port, std::string_view key, int where, std::vector<Item>& scratch) const;

  TaskRunner& runner_;
  Stage& s_;
  ScanOtherInput others_;
  mutable std::mutex fetched_m_;
  mutable std::map<std::pair<std::size_t, std::string>, CarriedPtr, std::less<>> fetched_;
};

}  // namespace flowd::runtime::detail

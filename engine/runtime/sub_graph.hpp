#pragma once
// The sub-tasks of a map task (flowd::SubTasks; Region Templates' two-level
// dataflow): a small dataflow of operator calls whose inputs are items or
// earlier calls' outputs, each call a task of its own through the run's
// queue, on the worker the policy picks and with that worker's variant.
// Private to the runtime.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "flowd/operator.hpp"
#include "runtime/carried.hpp"
#include "sched/task.hpp"
#include "workflow/graph.hpp"

namespace flowd::runtime::detail {

class TaskRunner;
struct Stage;

// An operator run as sub-tasks with one set of parameters: a stage node of
// its own (for contexts and checks) and its GPU variant.
struct SubOp {
  workflow::StageNode node;
  const GpuVariant* gpu = nullptr;
};

// The operators sub-task calls run, made once per operator and parameters
// and shared by every task of a run. Thread-safe.
class SubOps {
public:
  // Throws flowd::Error for an operator not in `parent`'s uses, and
  // workflow::ValidationError for parameters it does not accept.
  SubOp& get(const workflow::StageNode& parent, std::string_view op, const Json& params);

private:
  std::mutex m_;
  std::map<std::string, std::unique_ptr<SubOp>> ops_;  // by "op\nparams"
};

class SubGraph final : public SubTasks {
public:
  // The sub-tasks of the task on `task` of stage `parent`, running on
  // `worker`, traced as children of span `parent_span`.
  SubGraph(TaskRunner& runner, Stage& parent, const Tuple& task, const sched::WorkerInfo& worker,
           std::int64_t parent_span);
  // Sees calls still queued through: they refer to this graph.
  ~SubGraph() override;
  SubGraph(const SubGraph&) = delete;
  SubGraph& operator=(const SubGraph&) = delete;

  std::size_t call(std::string_view op, const Json& params, std::vector<SubInput> inputs) override;
  void wait() override;
  const Item& result(std::size_t call, std::string_view port) override;

  // Nanoseconds the parent's worker spent running other tasks while it
  // waited: not its operator's time. Read on the parent's thread.
  std::int64_t helped_ns() const noexcept { return helped_ns_; }
  // Nanoseconds the parent spent in wait(), helping or idle: its sub-tasks'
  // time, counted where they ran. Read on the parent's thread.
  std::int64_t waited_ns() const noexcept { return waited_ns_; }
  // Nanoseconds its sub-tasks ran, on whichever worker.
  std::int64_t work_ns() const noexcept { return work_ns_.load(); }

private:
  class CallTask;
  // An input of a call: an item, or output `port` of an earlier call.
  struct Wire {
    std::size_t call;
    std::size_t port;
  };
  using Input = std::variant<Item, Wire>;
  struct Call {
    SubOp* op = nullptr;
    std::vector<Input> inputs;
    std::size_t unresolved = 0;                // inputs that are outputs of calls not done yet
    std::vector<std::size_t> dependents;       // calls taking this one's outputs
    std::vector<std::vector<CarriedPtr>> out;  // per output port
    std::map<std::size_t, Item> host;          // results in host memory, by port
    bool done = false;
    std::string error;                         // why it (or an input of it) failed
  };

  // `ref` as a wire, checked against the calls made so far (m_ held).
  Wire wire_locked(std::string_view op, const SubRef& ref) const;
  sched::TaskPtr task_for_locked(std::size_t i);
  void finish_locked(std::size_t i, std::vector<sched::TaskPtr>& ready);
  void run(std::size_t i, const Tuple& inputs, sched::TaskEnv& env);
  void help_until_done();

  TaskRunner& runner_;
  Stage& parent_;
  const Tuple& task_;
  const sched::WorkerInfo& worker_;
  std::int64_t parent_span_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Call> calls_;  // deque: references stay valid as calls are added
  std::size_t pending_ = 0;
  std::int64_t helped_ns_ = 0;
  std::int64_t waited_ns_ = 0;
  std::atomic<std::int64_t> work_ns_{0};
};

}  // namespace flowd::runtime::detail

// A cluster worker node's executor: a task runner with the graph's map
// stages, without sources, routing or sinks; each task's result goes back to
// its caller.
#include "runtime/task_host.hpp"

#include <deque>

#include "runtime/task_runner.hpp"

namespace flowd::runtime {

using detail::Stage;
using detail::TaskRunner;

struct TaskHost::State {
  State(workflow::Graph& graph, RunOptions options, Logger& log) : runner(graph, std::move(options), log) {}
  TaskRunner runner;
  std::deque<Stage> stages;  // deque: Stage holds atomics and never moves
};

namespace {

class HostedTask final : public sched::Task {
public:
  HostedTask(TaskRunner& runner, Stage& s, Tuple t, std::function<void(HostedResult)> done)
      : runner_(runner), s_(s), tuple_(std::move(t)), done_(std::move(done)) {}

  void run(sched::TaskEnv& env) override {
    HostedResult r;
    if (runner_.stopping()) {
      r.error = "the node is stopping";
      r.key = tuple_.key;
      done_(std::move(r));
      return;
    }
    detail::Execution ex = runner_.run_map_task(s_, tuple_, env);
    s_.tasks_done.fetch_add(1);
    r.ok = ex.outcome.ok;
    r.seconds = static_cast<double>(ex.outcome.end_ns - ex.outcome.start_ns) * 1e-9;
    if (!r.ok) {
      r.error = ex.outcome.error;
      r.key = ex.outcome.key;
      s_.failures.fetch_add(1);
    } else {
      try {
        // Outputs leave the node from host memory: a GPU variant's results
        // are downloaded here, once.
        for (auto& [port, item] : ex.out.items()) {
          const auto c = runner_.carry(std::move(item), {}, &env.worker());
          Item scratch;
          const Item& on_host = runner_.on_host(*c, scratch);
          r.outputs.emplace_back(port, &on_host == &scratch ? std::move(scratch) : on_host);
        }
        s_.items_out.fetch_add(r.outputs.size());
      } catch (const std::exception& e) {
        r = HostedResult{};
        r.error = std::string("copying the outputs to host memory: ") + e.what();
        r.key = tuple_.key;
      }
    }
    done_(std::move(r));
  }

  void prefetch(const sched::WorkerInfo& w) override {
    if (sched::is_gpu_like(w.kind)) runner_.prefetch(tuple_, w);
  }
  bool wants_prefetch(const sched::WorkerInfo& w) const override {
    return sched::is_gpu_like(w.kind) && detail::needs_copy(tuple_, w.id);
  }
  const Tuple& tuple() const noexcept { return tuple_; }

private:
  TaskRunner& runner_;
  Stage& s_;
  Tuple tuple_;
  std::function<void(HostedResult)> done_;
};

}  // namespace

TaskHost::TaskHost(workflow::Graph& graph, RunOptions options, Logger& log)
    : state_(std::make_unique<State>(graph, std::move(options), log)) {
  for (const auto& node : graph.stages)
    if (node.spec().pattern != Pattern::map)
      throw Error("stage '" + node.name + "' (" + node.spec().name + ") is not a map stage; a worker node runs map stages only");
  for (auto& node : graph.stages) state_->stages.emplace_back(node);
  state_->runner.prepare();
  state_->runner.start();
}

TaskHost::~TaskHost() {
  state_->runner.set_stopping();
  state_->runner.stop_workers();
}

bool TaskHost::has_stage(const std::string& stage) const {
  for (const auto& s : state_->stages)
    if (s.name() == stage) return true;
  return false;
}

void TaskHost::submit(const std::string& stage, std::string key, std::vector<std::optional<Item>> inputs,
                      std::function<void(HostedResult)> done) {
  Stage* s = nullptr;
  for (auto& candidate : state_->stages)
    if (candidate.name() == stage) s = &candidate;
  if (!s) throw Error("this node has no stage '" + stage + "'");
  const auto& ports = s->node->spec().inputs;
  if (inputs.size() != ports.size())
    throw Error("stage '" + stage + "': " + std::to_string(inputs.size()) + " inputs for " + std::to_string(ports.size()) +
                " input ports");
  TaskRunner& runner = state_->runner;
  Tuple t{key, std::vector<CarriedPtr>(ports.size())};
  for (std::size_t p = 0; p < ports.size(); ++p) {
    if (!inputs[p]) {
      if (!ports[p].optional) {
        done(HostedResult{false, "required input '" + ports[p].name + "' is missing", key, {}, 0});
        return;
      }
      continue;
    }
    if (auto why = input_mismatch(ports[p], inputs[p]->value)) {
      done(HostedResult{false, *why, inputs[p]->meta.key, {}, 0});
      return;
    }
    t.ports[p] = runner.carry(std::move(*inputs[p]), {}, nullptr);
  }
  auto task = std::make_unique<HostedTask>(runner, *s, std::move(t), std::move(done));
  runner.estimate(s->op(), s->gpu, task->tuple(), *task);
  runner.submit(std::move(task), nullptr);
}

int TaskHost::slots() const { return static_cast<int>(state_->runner.workers().workers.size()); }

std::vector<sched::WorkerInfo> TaskHost::workers() const { return state_->runner.workers().workers; }

}  // namespace flowd::runtime

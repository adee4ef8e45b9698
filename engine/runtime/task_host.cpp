// A cluster worker node's executor: the stages of a run_state without
// sources, routing or sinks; each task's result goes back to its caller.
#include "runtime/task_host.hpp"

#include "runtime/run_state.hpp"

namespace flowd::runtime {

using detail::RunState;
using detail::StageState;

namespace {

class HostedTask final : public sched::Task {
public:
  HostedTask(RunState& st, StageState& s, Tuple t, std::function<void(HostedResult)> done)
      : st_(st), s_(s), tuple_(std::move(t)), done_(std::move(done)) {}

  void run(sched::TaskEnv& env) override {
    HostedResult r;
    if (st_.stopping.load()) {
      r.error = "the node is stopping";
      r.key = tuple_.key;
      done_(std::move(r));
      return;
    }
    detail::Execution ex = st_.run_map_task(s_, tuple_, env);
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
          const auto c = st_.carry(std::move(item), {}, &env.worker());
          Item scratch;
          const Item& on_host = st_.transfers->to(*c, memory::host, scratch);
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
    if (sched::is_gpu_like(w.kind)) st_.prefetch_map(tuple_, w);
  }
  bool wants_prefetch(const sched::WorkerInfo& w) const override {
    return sched::is_gpu_like(w.kind) && detail::needs_copy(tuple_, w.id);
  }
  const Tuple& tuple() const noexcept { return tuple_; }

private:
  RunState& st_;
  StageState& s_;
  Tuple tuple_;
  std::function<void(HostedResult)> done_;
};

}  // namespace

TaskHost::TaskHost(workflow::Graph& graph, RunOptions options, Logger& log)
    : state_(std::make_unique<RunState>(graph, std::move(options), log)) {
  for (const auto& node : graph.stages)
    if (node.spec().pattern != Pattern::map)
      throw Error("stage '" + node.name + "' (" + node.spec().name + ") is not a map stage; a worker node runs map stages only");
  state_->setup();
  state_->start_pool();
}

TaskHost::~TaskHost() {
  state_->stopping = true;
  state_->pool->stop();
}

bool TaskHost::has_stage(const std::string& stage) const {
  for (const auto& s : state_->stages)
    if (s.name() == stage) return true;
  return false;
}

void TaskHost::submit(const std::string& stage, std::string key, std::vector<std::optional<Item>> inputs,
                      std::function<void(HostedResult)> done) {
  RunState& st = *state_;
  StageState* s = nullptr;
  for (auto& candidate : st.stages)
    if (candidate.name() == stage) s = &candidate;
  if (!s) throw Error("this node has no stage '" + stage + "'");
  const auto& ports = s->node->spec().inputs;
  if (inputs.size() != ports.size())
    throw Error("stage '" + stage + "': " + std::to_string(inputs.size()) + " inputs for " + std::to_string(ports.size()) +
                " input ports");
  Tuple t{key, std::vector<CarriedPtr>(ports.size())};
  for (std::size_t p = 0; p < ports.size(); ++p) {
    if (!inputs[p]) {
      if (!ports[p].optional) {
        done(HostedResult{false, "required input '" + ports[p].name + "' is missing", key, {}, 0});
        return;
      }
      continue;
    }
    // As deliver_locked() checks items in a local run.
    if (!ports[p].type.accepts(inputs[p]->value)) {
      done(HostedResult{false,
                        "received " + describe(inputs[p]->value) + " on input '" + ports[p].name + "', which expects " +
                            ports[p].type.str(),
                        inputs[p]->meta.key, {}, 0});
      return;
    }
    t.ports[p] = st.carry(std::move(*inputs[p]), {}, nullptr);
  }
  auto task = std::make_unique<HostedTask>(st, *s, std::move(t), std::move(done));
  st.estimate(s->op(), s->gpu, task->tuple(), *task);
  st.pool->submit(std::move(task));
}

int TaskHost::slots() const { return static_cast<int>(state_->workers.workers.size()); }

std::vector<sched::WorkerInfo> TaskHost::workers() const { return state_->workers.workers; }

}  // namespace flowd::runtime

#include "runtime/run.hpp"

#include "runtime/run_state.hpp"

namespace flowd::runtime {

Run::Run(workflow::Graph& graph, RunOptions options, Logger& log)
    : state_(std::make_unique<detail::RunState>(graph, std::move(options), log)) {}

Run::~Run() = default;

RunReport Run::execute(const Tick& tick, std::chrono::milliseconds interval) {
  detail::RunState& st = *state_;
  RunReport report = st.prepare();
  if (!st.open_sinks(report)) return report;
  st.start();
  st.begin();
  st.wait(report, tick, interval);
  st.finish(report);
  return report;
}

}  // namespace flowd::runtime

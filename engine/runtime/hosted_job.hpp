#pragma once
// A job a cluster worker node runs for the coordinator as one task (a scan
// rank's half, an all-pairs stretch): compute() makes its outputs; a failure
// is reported charged to the key it names, or to the job's key.
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/task_host.hpp"
#include "runtime/task_runner.hpp"

namespace flowd::runtime::detail {

class HostedJob : public sched::Task {
public:
  HostedJob(TaskRunner& runner, Stage& s, std::string key, std::function<void(HostedResult)> done)
      : runner_(runner), s_(s), key_(std::move(key)), done_(std::move(done)) {}

  void run(sched::TaskEnv& env) final {
    HostedResult r;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (runner_.stopping()) throw Error("the node is stopping");
      r.outputs = compute(env);
      r.ok = true;
      s_.items_out.fetch_add(r.outputs.size());
    } catch (const std::exception& e) {
      r = HostedResult{};
      r.error = e.what();
      r.key = failed_key(e, key_);
      s_.failures.fetch_add(1);
    }
    s_.tasks_done.fetch_add(1);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    done_(std::move(r));
  }

protected:
  using Outputs = std::vector<std::pair<std::size_t, Item>>;
  virtual Outputs compute(sched::TaskEnv& env) = 0;

  TaskRunner& runner_;
  Stage& s_;
  const std::string key_;

private:
  std::function<void(HostedResult)> done_;
};

}  // namespace flowd::runtime::detail

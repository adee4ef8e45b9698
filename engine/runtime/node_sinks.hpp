#pragma once
// The sinks a placement moved to this worker node (docs/cluster.md
// "Placement"): their files are written here, at the site that should hold
// them, while the coordinator keeps the run's routing. The coordinator takes
// each sink through the steps a local run takes (runtime/run_state.cpp),
// one job per step, one step of a sink at a time:
//
//   open         the sink's open(); with "check", the node's outputs are then
//                checked against the files already there (OutputSet::check_existing)
//   consume      one tuple, pulled here from wherever it was made
//   commit_sink  the sink's commit(): it completes its temporaries
//   abort_sink   the sink's abort()
//   prepare      every file of this node flushed to disk, nothing renamed
//   commit       every file of this node renamed into place
//   discard      every temporary of this node removed
//
// A node that ends without a commit (the coordinator failed, was
// interrupted or went away) aborts its open sinks and removes every
// temporary: no half-written output stays behind.
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "flowd/item.hpp"
#include "runtime/contexts.hpp"
#include "runtime/output_set.hpp"
#include "util/log.hpp"

namespace flowd::runtime::detail {

struct Stage;  // runtime/task_runner.hpp

enum class SinkStep { open, consume, commit_sink, abort_sink, prepare, commit, discard };

std::optional<SinkStep> parse_sink_step(std::string_view name);
std::string_view name_of(SinkStep step);

class NodeSinks {
public:
  explicit NodeSinks(Logger& log) : log_(log) {}
  ~NodeSinks();
  NodeSinks(const NodeSinks&) = delete;
  NodeSinks& operator=(const NodeSinks&) = delete;

  // Step spec["step"] of sink stage `s`. `spec` of the first open brings the
  // run's "provenance" and "overwrite" (--overwrite); `inputs`: consume only.
  // Throws flowd::Error naming what failed.
  void run(Stage& s, const Json& spec, const Inputs* inputs, const std::atomic<bool>& stop);

private:
  OutputSet& outputs(const Json& spec);

  Logger& log_;
  std::mutex m_;  // the coordinator serialises each sink's steps; sinks of different stages may run at once
  Json provenance_ = Json::object();
  std::optional<OutputSet> outputs_;  // made at the first open
  std::map<std::string, Stage*> open_;  // opened, neither committed nor aborted
};

}  // namespace flowd::runtime::detail

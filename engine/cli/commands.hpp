#pragma once
// flowd's sub-commands. Each takes the arguments after the command name and
// returns an exit code (exit_codes.hpp).
#include <string>
#include <vector>

#include "util/log.hpp"

namespace flowd::net::node {
struct WorkerNodeOptions;
}

namespace flowd::cli {

struct PluginOptions;

using Args = std::vector<std::string>;

int cmd_run(const Args& args, const std::vector<std::string>& full_command_line);
int cmd_validate(const Args& args);
int cmd_plugins(const Args& args);
int cmd_inspect(const Args& args);
int cmd_calibrate(const Args& args);
int cmd_plan(const Args& args);
int cmd_perf(const Args& args);
int cmd_keygen(const Args& args);
int cmd_worker(const Args& args);
// The worker node's loop, for `flowd worker` and launcher ranks > 0 of `flowd run`.
int run_worker_node(net::node::WorkerNodeOptions options, const PluginOptions& plugins, Logger& log);

}  // namespace flowd::cli

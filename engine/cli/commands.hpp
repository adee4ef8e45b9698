#pragma once
// flowd's sub-commands. Each takes the arguments after the command name and
// returns an exit code (exit_codes.hpp).
#include <string>
#include <vector>

namespace flowd::cli {

using Args = std::vector<std::string>;

int cmd_run(const Args& args, const std::vector<std::string>& full_command_line);
int cmd_validate(const Args& args);
int cmd_plugins(const Args& args);
int cmd_inspect(const Args& args);
int cmd_calibrate(const Args& args);
int cmd_perf(const Args& args);
int cmd_keygen(const Args& args);

}  // namespace flowd::cli

#pragma once
// Running the flowd binary as a user would, for command-line tests.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/helpers.hpp"

namespace flowd::test {

struct Result {
  int code = -1;
  std::string out, err;
};

// What validation says of a workflow ("(valid)" when nothing).
inline std::string validation_problem(const std::string& json) {
  try {
    (void)graph(json);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(valid)";
}

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs flowd in `cwd` with the test plugins on the path and a private cache.
inline Result flowd_cmd(const std::filesystem::path& cwd, const std::vector<std::string>& args, const std::string& env = "") {
  std::string cmd = "cd " + quote(cwd.string()) + " && env FLOWD_CACHE_DIR=" + quote((cwd / ".cache").string()) +
                    " FLOWD_PLUGIN_PATH=" + quote(test_plugins("testops")) + " " + env + " " +
                    quote(FLOWD_BINARY);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote((cwd / "stdout.txt").string()) + " 2>" + quote((cwd / "stderr.txt").string());
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(cwd / "stdout.txt");
  r.err = slurp(cwd / "stderr.txt");
  return r;
}

}  // namespace flowd::test

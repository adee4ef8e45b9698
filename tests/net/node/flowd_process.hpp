#pragma once
// flowd processes started beside a test (coordinators, workers, launcher
// ranks), with the test plugins on their path, and the small workflow the
// cluster tests run: count -> step (sleeps) -> double -> record, whose sink
// writes every key with its value, sorted, on commit, so runs compare as text.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "support/cli.hpp"

extern char** environ;

namespace flowd::test {

inline std::string pipeline(int count, int sleep_ms) {
  return R"({"version": 1, "name": "pipe", "vars": {"output": "out.txt"}, "stages": {
    "src": {"op": "test.count", "params": {"count": )" + std::to_string(count) + R"(}},
    "step": {"op": "test.step", "inputs": {"in": "src.out"}, "params": {"sleep_ms": )" + std::to_string(sleep_ms) + R"(}},
    "double": {"op": "test.double", "inputs": {"in": "step.out"}},
    "out": {"op": "test.record", "inputs": {"in": "double.out"}, "params": {"path": "${output}"}}}})";
}

inline std::filesystem::path write(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

// What one plain process writes for `wf` (into dir/one.txt).
inline std::string expected_output(const std::filesystem::path& dir, const std::filesystem::path& wf) {
  const auto r = flowd_cmd(dir, {wf.string(), "--set", "output=" + (dir / "one.txt").string(), "--cpu", "2", "--gpu",
                                 "none", "--no-progress", "--no-perf-model"});
  EXPECT_EQ(r.code, 0) << r.err;
  return slurp(dir / "one.txt");
}

class Process {
public:
  // `extra_env` comes first: getenv() takes the first of duplicate names.
  Process(const std::filesystem::path& cwd, std::vector<std::string> args, const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> env = extra_env;
    env.push_back("FLOWD_PLUGIN_PATH=" + test_plugins("testops"));
    env.push_back("FLOWD_CACHE_DIR=" + (cwd / ".cache").string());
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "FLOWD_PLUGIN_PATH=", 18) != 0 && std::strncmp(*e, "FLOWD_CACHE_DIR=", 16) != 0) env.push_back(*e);
    args.insert(args.begin(), FLOWD_BINARY);
    err_ = cwd / ("stderr-" + std::to_string(counter()++) + ".txt");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::filesystem::path old = std::filesystem::current_path();
    std::filesystem::current_path(cwd);
    const int rc = posix_spawn(&pid_, FLOWD_BINARY, &fa, nullptr, argv.data(), envp.data());
    std::filesystem::current_path(old);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error("posix_spawn failed");
  }
  ~Process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // The exit code (128 + signal), or -1 while it runs.
  int poll() {
    int status = 0;
    if (pid_ <= 0) return code_;
    if (::waitpid(pid_, &status, WNOHANG) == 0) return -1;
    pid_ = -1;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return code_;
  }
  // The exit code, or -1 when it still runs after `limit`.
  int wait(std::chrono::seconds limit = std::chrono::seconds(120)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (poll() < 0) {
      if (std::chrono::steady_clock::now() > end) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return code_;
  }
  int kill_and_wait() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    while (poll() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return code_;
  }
  pid_t pid() const { return pid_; }
  std::string err() const { return slurp(err_); }

private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  pid_t pid_ = -1;
  int code_ = -1;
  std::filesystem::path err_;
};

// The worker processes `flowd run --workers` started.
inline std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t c;
  while (in >> c) out.push_back(c);
  return out;
}

// A TCP port free on loopback right now.
inline int free_port() {
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::rep);
  s.bind("tcp://127.0.0.1:*");
  const std::string ep = s.get(zmq::sockopt::last_endpoint);
  return std::stoi(ep.substr(ep.rfind(':') + 1));
}

}  // namespace flowd::test

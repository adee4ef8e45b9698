#include "cli/local_workers.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "flowd/error.hpp"

extern char** environ;

namespace flowd::cli {

namespace sec = net::security;

LocalWorkers::LocalWorkers(const std::string& endpoint, const std::vector<std::string>& args,
                           const std::vector<sec::ClientCredentials>& credentials, Logger& log)
    : log_(log) {
  // This binary, whatever the working directory or PATH.
  const std::string self = "/proc/self/exe";
  std::vector<std::string> env_base;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, sec::client_credentials_env, std::strlen(sec::client_credentials_env)) != 0) env_base.push_back(*e);
  for (const auto& c : credentials) {
    std::vector<std::string> argv_s{"flowd", "worker", "--connect", endpoint};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s = env_base;
    env_s.push_back(std::string(sec::client_credentials_env) + "=" + sec::encode_client_credentials(c));
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), envp.data());
    if (rc != 0) throw Error("could not start a local worker process: " + std::string(std::strerror(rc)));
    pids_.push_back(pid);
  }
}

LocalWorkers::~LocalWorkers() {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  for (const pid_t pid : pids_) {
    int status = 0;
    bool killed = false;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() >= deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        killed = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const std::string who = "local worker process " + std::to_string(pid);
    if (killed) log_.warn(who + " did not leave within 10 s of the end of the run and was killed");
    else if (WIFSIGNALED(status)) log_.warn(who + " was killed by signal " + std::to_string(WTERMSIG(status)));
    else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      log_.warn(who + " exited with code " + std::to_string(WEXITSTATUS(status)));
  }
}

}  // namespace flowd::cli

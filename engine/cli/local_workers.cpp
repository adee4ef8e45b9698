#include "cli/local_workers.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <sys/wait.h>

#include "cli/exit_codes.hpp"
#include "exec/crash_report.hpp"
#include "flowd/error.hpp"
#include "net/node/worker_node.hpp"

extern char** environ;

namespace flowd::cli {

namespace sec = net::security;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int note_fd_in_child = 3;
constexpr auto watch_period = std::chrono::milliseconds(20);

bool starts_with(const char* s, std::string_view prefix) { return std::strncmp(s, prefix.data(), prefix.size()) == 0; }

// "was killed by signal 11 (SIGSEGV)", "exited with code 3".
std::string describe(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = ::sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) + (abbrev ? " (SIG" + std::string(abbrev) + ")" : "");
  }
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "ended (status " + std::to_string(status) + ")";
}

// What a worker's crash report wrote to its note pipe: "<signal>\t<stage>\t<key>\n".
std::optional<std::pair<std::string, std::string>> read_note(int fd) {
  if (fd < 0) return std::nullopt;
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  const std::string text(buf, static_cast<std::size_t>(n));
  const auto line = text.substr(0, text.find('\n'));
  const auto a = line.find('\t');
  const auto b = a == std::string::npos ? a : line.find('\t', a + 1);
  if (b == std::string::npos || b == a + 1) return std::nullopt;  // not inside an operator
  return std::pair{line.substr(a + 1, b - a - 1), line.substr(b + 1)};
}

}  // namespace

LocalWorkers::LocalWorkers(const std::string& endpoint, const std::vector<std::string>& args,
                           const std::vector<sec::ClientCredentials>& credentials, Logger& log, LocalWorkerHooks hooks,
                           std::chrono::seconds join_timeout)
    : endpoint_(endpoint), args_(args), log_(log), hooks_(std::move(hooks)), join_timeout_(join_timeout) {
  for (const auto& c : credentials) {
    workers_.push_back(Worker{c});
    spawn(workers_.back());
  }
  watcher_ = std::thread([this] { watch(); });
}

void LocalWorkers::spawn(Worker& w) {
  std::vector<std::string> argv_s{"flowd", "worker", "--connect", endpoint_};
  argv_s.insert(argv_s.end(), args_.begin(), args_.end());
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e)
    if (!starts_with(*e, sec::client_credentials_env) && !starts_with(*e, exec::crash_note_env)) env_s.push_back(*e);
  env_s.push_back(std::string(sec::client_credentials_env) + "=" + sec::encode_client_credentials(w.credentials));
  env_s.push_back(std::string(exec::crash_note_env) + "=" + std::to_string(note_fd_in_child));
  std::vector<char*> argv, envp;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  // The worker's crash report names the item it died on here; the pipe
  // outlives the writer, so the note is read after the exit.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
    throw Error("could not start a local worker process: " + std::string(std::strerror(errno)));
  if (fds[1] == note_fd_in_child) {  // dup2 onto itself would keep it close-on-exec
    const int moved = ::fcntl(fds[1], F_DUPFD_CLOEXEC, note_fd_in_child + 1);
    ::close(fds[1]);
    fds[1] = moved;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], note_fd_in_child);  // the copy is not close-on-exec
  pid_t pid = 0;
  // This binary, whatever the working directory or PATH.
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw Error("could not start a local worker process: " + std::string(std::strerror(rc)));
  }
  w.pid = pid;
  w.note_fd = fds[0];
}

void LocalWorkers::watch() {
  while (!stop_.load()) {
    for (auto& w : workers_) {
      if (w.pid <= 0) continue;
      int status = 0;
      if (::waitpid(w.pid, &status, WNOHANG) == w.pid) {
        ended(w, status);
        continue;
      }
      if (!w.joining) continue;
      if (hooks_.registered && hooks_.registered(net::node::default_node_name(w.pid))) {
        w.joining = false;
      } else if (Clock::now() > w.join_deadline) {
        log_.warn("local worker process " + std::to_string(w.pid) + " did not register within " +
                  std::to_string(join_timeout_.count()) + " s and is killed");
        ::kill(w.pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(watch_period);
  }
}

void LocalWorkers::ended(Worker& w, int status) {
  const std::string name = net::node::default_node_name(w.pid);
  const std::string how = describe(status);
  const auto running = read_note(w.note_fd);
  ::close(w.note_fd);
  w.note_fd = -1;
  const bool orderly = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == exit_interrupted);
  log_.warn("local worker process " + std::to_string(w.pid) + " " + how +
            (running ? " while running stage '" + running->first + "' on item '" + running->second + "'" : ""));
  if (w.joining && hooks_.expect_more) hooks_.expect_more(-1);
  w.joining = false;
  w.pid = -1;
  // Replaced before the coordinator hears of the loss, so it waits for the
  // replacement instead of failing what no live worker could run.
  if (!orderly && !stop_.load()) {
    if (w.replacements < max_replacements) {
      ++w.replacements;
      if (hooks_.expect_more) hooks_.expect_more(1);
      try {
        spawn(w);
        w.joining = true;
        w.join_deadline = Clock::now() + join_timeout_;
        log_.info("started local worker process " + std::to_string(w.pid) + " in its place (replacement " +
                  std::to_string(w.replacements) + " of " + std::to_string(max_replacements) + ")");
      } catch (const std::exception& e) {
        if (hooks_.expect_more) hooks_.expect_more(-1);
        log_.warn(e.what());
      }
    } else {
      log_.warn("it is not replaced: it was replaced " + std::to_string(max_replacements) + " times already");
    }
  }
  if (hooks_.ended) hooks_.ended(name, net::node::WorkerLoss{how, !orderly, running});
}

void LocalWorkers::stop_replacing() {
  stop_ = true;
  if (watcher_.joinable()) watcher_.join();
}

LocalWorkers::~LocalWorkers() {
  stop_replacing();
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  for (auto& w : workers_) {
    if (w.pid <= 0) continue;
    int status = 0;
    bool killed = false;
    while (::waitpid(w.pid, &status, WNOHANG) == 0) {
      if (Clock::now() >= deadline) {
        ::kill(w.pid, SIGKILL);
        ::waitpid(w.pid, &status, 0);
        killed = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (w.note_fd >= 0) ::close(w.note_fd);
    const std::string who = "local worker process " + std::to_string(w.pid);
    if (killed)
      log_.warn(who + " did not leave within 10 s of the end of the run and was killed");
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      log_.warn(who + " " + describe(status));
  }
}

}  // namespace flowd::cli

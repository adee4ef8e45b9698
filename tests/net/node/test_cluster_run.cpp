// Whole cluster runs through the flowd binary on loopback: a coordinator and
// 1, 2 or 4 worker processes give what one process gives; a worker killed
// with SIGKILL mid-run costs nothing; CURVE keeps unauthorised workers out;
// garbage sent to the coordinator does not stop a run; a node that cannot
// load a plugin gets no tasks of it; labels place stages.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "support/cli.hpp"

extern char** environ;

using namespace flowd;
namespace fs = std::filesystem;

namespace {

// count -> step (sleeps) -> double -> record: the record sink writes every
// key with its value, sorted, so two runs compare as text.
std::string pipeline(int count, int sleep_ms, const std::string& step_extra = "") {
  return R"({"version": 1, "name": "pipe", "vars": {"output": "out.txt"}, "stages": {
    "src": {"op": "test.count", "params": {"count": )" + std::to_string(count) + R"(}},
    "step": {"op": "test.step", "inputs": {"in": "src.out"}, "params": {"sleep_ms": )" + std::to_string(sleep_ms) + R"(})" +
         step_extra + R"(},
    "double": {"op": "test.double", "inputs": {"in": "step.out"}},
    "out": {"op": "test.record", "inputs": {"in": "double.out"}, "params": {"path": "${output}"}}}})";
}

fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

std::string expected_output(const fs::path& dir, const fs::path& wf) {
  const auto r = test::flowd_cmd(dir, {wf.string(), "--set", "output=" + (dir / "one.txt").string(), "--cpu", "2",
                                       "--gpu", "none", "--no-progress", "--no-perf-model"});
  EXPECT_EQ(r.code, 0) << r.err;
  return test::slurp(dir / "one.txt");
}

// A process started beside the test (the coordinator or a worker), with the
// test plugins on its path; killed if the test leaves it running.
class Process {
public:
  Process(const fs::path& cwd, std::vector<std::string> args, const std::vector<std::string>& extra_env = {}) {
    // extra_env first: getenv() takes the first of duplicate names.
    std::vector<std::string> env = extra_env;
    env.push_back("FLOWD_PLUGIN_PATH=" + test::test_plugins("testops"));
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
    const fs::path old = fs::current_path();
    fs::current_path(cwd);
    const int rc = posix_spawn(&pid_, FLOWD_BINARY, &fa, nullptr, argv.data(), envp.data());
    fs::current_path(old);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error("posix_spawn failed");
  }
  ~Process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // The exit code, or -1 when it is still running after `limit`.
  int wait(std::chrono::seconds limit = std::chrono::seconds(120)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_t pid() const { return pid_; }
  std::string err() const { return test::slurp(err_); }

private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  pid_t pid_ = -1;
  fs::path err_;
};

// The worker processes `flowd run --workers` started.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t c;
  while (in >> c) out.push_back(c);
  return out;
}

int free_port() {
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::rep);
  s.bind("tcp://127.0.0.1:*");
  const std::string ep = s.get(zmq::sockopt::last_endpoint);
  return std::stoi(ep.substr(ep.rfind(':') + 1));
}

}  // namespace

TEST(ClusterRun, OneTwoAndFourWorkerProcessesGiveWhatOneProcessGives) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(40, 5));
  const std::string want = expected_output(dir, wf);
  ASSERT_FALSE(want.empty());
  for (const int n : {1, 2, 4}) {
    const std::string out = (dir / ("w" + std::to_string(n) + ".txt")).string();
    const auto r = test::flowd_cmd(dir, {wf.string(), "--set", "output=" + out, "--workers", std::to_string(n),
                                         "--worker-cpus", "1", "--gpu", "none", "--no-progress", "--no-perf-model"});
    ASSERT_EQ(r.code, 0) << n << " workers:\n" << r.err;
    EXPECT_EQ(test::slurp(out), want) << n << " workers";
    EXPECT_NE(r.err.find("workers joined"), std::string::npos) << r.err;
  }
}

TEST(ClusterRun, AKilledWorkersTasksRunElsewhereAndTheOutputIsTheSame) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(30, 60));
  const std::string want = expected_output(dir, wf);
  Process run(dir, {"run", wf.string(), "--set", "output=" + (dir / "killed.txt").string(), "--workers", "3",
                    "--worker-cpus", "1", "--gpu", "none", "--no-progress", "--no-perf-model", "--heartbeat-ms", "100",
                    "--missed-heartbeats", "3"});
  // Once the workers run tasks (each takes 60 ms), one of them dies.
  std::vector<pid_t> workers;
  for (int i = 0; i < 500 && workers.size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    workers = children_of(run.pid());
  }
  ASSERT_EQ(workers.size(), 3u) << run.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  ASSERT_EQ(::kill(workers[1], SIGKILL), 0);
  const int code = run.wait();
  ASSERT_EQ(code, 0) << run.err();
  EXPECT_EQ(test::slurp(dir / "killed.txt"), want);
  EXPECT_NE(run.err().find("lost"), std::string::npos) << run.err();
}

TEST(ClusterRun, ListenAndExpectWithKeysAcceptsOnlyAuthorisedWorkers) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(12, 1));
  const std::string want = expected_output(dir, wf);
  std::string authorised;
  for (const char* name : {"coordinator", "worker", "stranger"}) {
    const auto r = test::flowd_cmd(dir, {"keygen", name, "--out", (dir / "keys").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    // Its last line is the authorised-keys line; only "worker" is authorised.
    if (std::string(name) == "worker") authorised = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  }
  std::ofstream(dir / "keys/authorised_keys") << authorised;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  Process coordinator(dir, {"run", wf.string(), "--set", "output=" + (dir / "keys.txt").string(), "--listen", endpoint,
                            "--expect", "1", "--key", (dir / "keys/coordinator.key").string(), "--authorised-keys",
                            (dir / "keys/authorised_keys").string(), "--gpu", "none", "--no-progress", "--no-perf-model",
                            "--wait-workers", "60"});
  Process stranger(dir, {"worker", "--connect", endpoint, "--worker-key", (dir / "keys/stranger.key").string(),
                         "--coordinator-key", (dir / "keys/coordinator.pub").string(), "--gpu", "none", "--join-timeout", "3"});
  EXPECT_NE(stranger.wait(std::chrono::seconds(90)), 0) << "an unauthorised worker must not join:\n" << stranger.err();
  Process worker(dir, {"worker", "--connect", endpoint, "--worker-key", (dir / "keys/worker.key").string(),
                       "--coordinator-key", (dir / "keys/coordinator.pub").string(), "--gpu", "none", "--cpus", "2"});
  ASSERT_EQ(coordinator.wait(), 0) << coordinator.err();
  EXPECT_EQ(worker.wait(), 0) << worker.err();
  EXPECT_EQ(test::slurp(dir / "keys.txt"), want);
  EXPECT_NE(coordinator.err().find("refused"), std::string::npos) << "the refusal is logged:\n" << coordinator.err();
}

TEST(ClusterRun, GarbageSentToTheCoordinatorIsRejectedAndTheRunGoesOn) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(20, 20));
  const std::string want = expected_output(dir, wf);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  Process coordinator(dir, {"run", wf.string(), "--set", "output=" + (dir / "garbage.txt").string(), "--listen", endpoint,
                            "--expect", "1", "--gpu", "none", "--no-progress", "--no-perf-model"});
  Process worker(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1"});
  {
    zmq::context_t ctx;
    zmq::socket_t junk(ctx, zmq::socket_type::dealer);
    junk.set(zmq::sockopt::linger, 0);
    junk.connect(endpoint);
    for (int i = 0; i < 50; ++i) {
      const std::string garbage = "not a flowd frame " + std::to_string(i);
      junk.send(zmq::buffer(garbage), zmq::send_flags::dontwait);
      std::string prefix(32, '\0');
      prefix[0] = 'F', prefix[1] = 'L', prefix[2] = 'W', prefix[3] = 'D';  // right magic, wrong everything else
      junk.send(zmq::buffer(prefix), zmq::send_flags::dontwait);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(coordinator.wait(), 0) << coordinator.err();
  EXPECT_EQ(worker.wait(), 0) << worker.err();
  EXPECT_EQ(test::slurp(dir / "garbage.txt"), want);
}

TEST(ClusterRun, ANodeThatCannotLoadAPluginGetsNoTasksOfIt) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(16, 1));
  const std::string want = expected_output(dir, wf);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  Process coordinator(dir, {"run", wf.string(), "--set", "output=" + (dir / "partial.txt").string(), "--listen", endpoint,
                            "--expect", "2", "--gpu", "none", "--no-progress", "--no-perf-model"});
  // This one finds no test plugins at all.
  Process blind(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "blind"},
                {"FLOWD_PLUGIN_PATH=" + (dir / "nothing-here").string()});
  Process able(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "able"});
  ASSERT_EQ(coordinator.wait(), 0) << coordinator.err();
  EXPECT_EQ(test::slurp(dir / "partial.txt"), want);
  const std::string log = coordinator.err();
  EXPECT_TRUE(std::regex_search(log, std::regex("blind.*cannot run stage 'step'"))) << log;
  blind.wait();
  able.wait();
}

// Whole cluster runs through the flowd binary on loopback: a coordinator and
// 1, 2 or 4 worker processes give what one process gives; a worker killed
// with SIGKILL mid-run costs nothing; CURVE keeps unauthorised workers out;
// garbage sent to the coordinator does not stop a run; a node that cannot
// load a plugin gets no tasks of it; labels place stages.
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "flowd_process.hpp"

using namespace flowd;
using test::expected_output;
using test::pipeline;
using test::Process;
using test::write;
namespace fs = std::filesystem;

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

TEST(ClusterRun, TheTraceShowsTheTasksEachWorkerNodeRan) {
  // 12 items through two map stages on two nodes: 24 node tasks, on tracks
  // named after the nodes; the coordinator's own tracks hold only the
  // source's and the sink's.
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(12, 20));
  const auto r = test::flowd_cmd(dir, {wf.string(), "--set", "output=" + (dir / "out.txt").string(), "--workers", "2",
                                       "--worker-cpus", "1", "--gpu", "none", "--no-progress", "--no-perf-model",
                                       "--trace", (dir / "trace.json").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto trace = nlohmann::json::parse(test::slurp(dir / "trace.json"));
  std::map<int, std::string> thread;
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name")
      thread[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
  std::map<std::string, int> on_nodes, here;  // stage -> tasks on node tracks, on the coordinator's
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    const std::string track = thread[e.at("tid").get<int>()];
    if (track.rfind("node ", 0) == 0) {
      ++on_nodes[e.at("args").at("stage").get<std::string>()];
      EXPECT_EQ(e.at("args").at("variant"), "node");
      EXPECT_GE(e.at("dur").get<double>(), 0);
    } else {
      ++here[e.at("args").at("stage").get<std::string>()];
    }
  }
  EXPECT_EQ(on_nodes["step"], 12) << trace.dump().substr(0, 2000);
  EXPECT_EQ(on_nodes["double"], 12);
  EXPECT_EQ(on_nodes.size(), 2u) << "the source and the sink ran in the coordinator";
  // The coordinator's own: the sink's twelve and the source's calls.
  EXPECT_EQ(here["out"], 12);
  EXPECT_GE(here["src"], 12);
  EXPECT_EQ(here.size(), 2u);
  // A step task sleeps 20 ms: its bar lasts about that.
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") == "X" && e.at("args").at("stage") == "step") {
      EXPECT_GE(e.at("dur").get<double>(), 15e3);
    }
  }
}

TEST(ClusterRun, AKilledWorkersTasksRunElsewhereAndTheOutputIsTheSame) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(60, 60));
  const std::string want = expected_output(dir, wf);
  Process run(dir, {"run", wf.string(), "--set", "output=" + (dir / "killed.txt").string(), "--workers", "3",
                    "--worker-cpus", "1", "--gpu", "none", "--no-progress", "--no-perf-model", "--heartbeat-ms", "100",
                    "--missed-heartbeats", "3"});
  // Once the workers run tasks (each takes 60 ms), one of them dies.
  std::vector<pid_t> workers;
  for (int i = 0; i < 500 && workers.size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    workers = test::children_of(run.pid());
  }
  ASSERT_EQ(workers.size(), 3u) << run.err();
  // 60 tasks of 60 ms on three workers take over a second: kill mid-run.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ASSERT_LT(run.poll(), 0) << "the run ended before a worker could be killed:\n" << run.err();
  ASSERT_EQ(::kill(workers[1], SIGKILL), 0);
  const int code = run.wait();
  ASSERT_EQ(code, 0) << run.err();
  EXPECT_EQ(test::slurp(dir / "killed.txt"), want);
  EXPECT_NE(run.err().find("lost"), std::string::npos) << run.err();
  EXPECT_NE(run.err().find("was killed by signal 9"), std::string::npos) << "the coordinator says what became of it";
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
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
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
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
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
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
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

TEST(ClusterRun, StageLabelsPlaceTasksOnlyOnMatchingNodes) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", R"({"version": 1, "name": "labels", "vars": {"output": "out.txt"}, "stages": {
    "src": {"op": "test.count", "params": {"count": 16}},
    "step": {"op": "test.step", "inputs": {"in": "src.out"}, "labels": ["big"], "params": {"sleep_ms": 5}},
    "out": {"op": "test.record", "inputs": {"in": "step.out"}, "params": {"path": "${output}"}}}})");
  const std::string want = expected_output(dir, wf);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
  Process coordinator(dir, {"run", wf.string(), "--set", "output=" + (dir / "labels.txt").string(), "--listen", endpoint,
                            "--expect", "2", "--gpu", "none", "--no-progress", "--no-perf-model"});
  Process small(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "small"});
  Process big(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "big", "--label", "big"});
  ASSERT_EQ(coordinator.wait(), 0) << coordinator.err();
  EXPECT_EQ(test::slurp(dir / "labels.txt"), want);
  const std::string log = coordinator.err();
  EXPECT_NE(log.find("worker small: 0 tasks"), std::string::npos) << log;
  EXPECT_NE(log.find("worker big: 16 tasks"), std::string::npos) << log;
  small.wait();
  big.wait();
}

// The placement tests' workflow (src -> step -> out, `count` items, each
// step `sleep_ms`) as wf.json, and sites.json: site "far", then "near",
// the coordinator's, `far_nodes` nodes at far, `mb_s` between them.
fs::path placed_chain(const fs::path& dir, int count, int sleep_ms, int far_nodes, int mb_s) {
  write(dir, "sites.json", R"({"version": 1, "coordinator": "near",
    "sites": [{"name": "far", "nodes": )" + std::to_string(far_nodes) + R"(}, {"name": "near"}],
    "links": [{"from": "far", "to": "near", "bandwidth_mb_s": )" + std::to_string(mb_s) + "}]}");
  return write(dir, "wf.json", R"({"version": 1, "name": "placed", "vars": {"output": "out.txt"}, "stages": {
    "src": {"op": "test.count", "params": {"count": )" + std::to_string(count) + R"(}},
    "step": {"op": "test.step", "inputs": {"in": "src.out"}, "params": {"sleep_ms": )" + std::to_string(sleep_ms) + R"(}},
    "out": {"op": "test.record", "inputs": {"in": "step.out"}, "params": {"path": "${output}"}}}})");
}

// flowd run --sites S --placement PLAN.json (cli/run_placement.cpp): a
// stage planned on a site runs only on the nodes labelled with it, and the
// output is what one process gives.
TEST(ClusterRun, APlacementHoldsEachStageToItsSitesNodes) {
  const auto dir = test::scratch();
  const auto wf = placed_chain(dir, 16, 5, 1, 100);
  const std::string want = expected_output(dir, wf);
  write(dir, "plan.json", R"({"stages": {"src": "near", "step": "far", "out": "near"}})");
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
  Process coordinator(dir, {"run", wf.string(), "--set", "output=" + (dir / "placed.txt").string(), "--listen", endpoint,
                            "--expect", "2", "--gpu", "none", "--no-progress", "--no-perf-model", "--sites",
                            "sites.json", "--placement", "plan.json"});
  Process near(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "near", "--label",
                     "site:near"});
  Process far(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "far", "--label",
                    "site:far"});
  ASSERT_EQ(coordinator.wait(), 0) << coordinator.err();
  EXPECT_EQ(test::slurp(dir / "placed.txt"), want);
  const std::string log = coordinator.err();
  EXPECT_NE(log.find("placement (plan.json): src@near, step@far, out@near"), std::string::npos) << log;
  EXPECT_NE(log.find("worker far: 16 tasks"), std::string::npos) << log;
  EXPECT_NE(log.find("worker near: 0 tasks"), std::string::npos) << log;
  near.wait();
  far.wait();
}

// Kills `node` half a second after the coordinator logged `placed` (a stage
// placed on it began there), or after 30 s.
void kill_once_logged(Process& coordinator, Process& node, const std::string& placed) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (coordinator.err().find(placed) == std::string::npos && coordinator.poll() < 0 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  node.kill_and_wait();
}

// A source placed on another site than the coordinator's runs on a node of
// that site, which keeps its operator from next() to next(): every item is
// emitted there once, in order, and the output equals a one-process run's.
// Placed where no node of the run can run it, the run fails and names it.
TEST(ClusterRun, APlacedSourceRunsOnANodeOfItsSite) {
  const auto dir = test::scratch();
  const auto wf = placed_chain(dir, 24, 2, 1, 100);
  const std::string want = expected_output(dir, wf);
  write(dir, "plan.json", R"({"stages": {"src": "far", "step": "far", "out": "near"}})");
  {
    const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
    Process coordinator(dir, {"run", wf.string(), "--set", "output=" + (dir / "placed.txt").string(), "--listen",
                              endpoint, "--expect", "2", "--gpu", "none", "--no-progress", "--no-perf-model",
                              "--max-in-flight", "3", "--sites", "sites.json", "--placement", "plan.json"});
    Process near(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "near", "--label",
                       "site:near"});
    Process far(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "2", "--name", "far", "--label",
                      "site:far"});
    ASSERT_EQ(coordinator.wait(), 0) << coordinator.err();
    EXPECT_EQ(test::slurp(dir / "placed.txt"), want);
    const std::string log = coordinator.err();
    EXPECT_NE(log.find("placement (plan.json): src@far, step@far, out@near"), std::string::npos) << log;
    EXPECT_TRUE(std::regex_search(log, std::regex("source 'src' runs on [^\\n]*far"))) << log;
    EXPECT_NE(log.find("worker near: 0 tasks"), std::string::npos) << log;
    // 24 steps and at least 24 calls of next() (one per item; maybe a last
    // that says there is no more).
    std::smatch m;
    ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(worker far: (\d+) tasks)"))) << log;
    EXPECT_GE(std::stoi(m[1]), 48) << log;
    near.wait();
    far.wait();
  }
  {
    // No node of site 'far' joins this run.
    const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
    Process coordinator(dir, {"run", wf.string(), "--set", "output=" + (dir / "nowhere.txt").string(), "--listen",
                              endpoint, "--expect", "1", "--gpu", "none", "--no-progress", "--no-perf-model",
                              "--sites", "sites.json", "--placement", "plan.json"});
    Process near(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "near", "--label",
                       "site:near"});
    EXPECT_EQ(coordinator.wait(), 3) << coordinator.err();
    EXPECT_NE(coordinator.err().find("source 'src' is placed on worker nodes by its labels, but no live worker node "
                                     "matches them"),
              std::string::npos)
        << coordinator.err();
    EXPECT_FALSE(fs::exists(dir / "nowhere.txt"));
    near.wait();
  }
}

// The node running a placed source is killed mid-run: the source's state
// and the items it made were there, so the run fails saying so (the source
// is not restarted elsewhere, which would emit its items twice), and writes
// nothing.
TEST(ClusterRun, APlacedSourceWhoseNodeIsLostFailsTheRunNamingIt) {
  const auto dir = test::scratch();
  const auto wf = placed_chain(dir, 400, 20, 1, 100);
  write(dir, "plan.json", R"({"stages": {"src": "far", "step": "near", "out": "near"}})");
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
  Process coordinator(dir, {"run", wf.string(), "--set", "output=" + (dir / "lost.txt").string(), "--listen", endpoint,
                            "--expect", "2", "--gpu", "none", "--no-progress", "--no-perf-model", "--max-in-flight",
                            "4", "--sites", "sites.json", "--placement", "plan.json"});
  Process near(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "near", "--label",
                     "site:near"});
  Process far(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "far", "--label",
                    "site:far"});
  // Killed once the source has run on it for a while (400 items of 20 ms
  // each on one node take 8 s).
  kill_once_logged(coordinator, far, "source 'src' runs on");
  EXPECT_EQ(coordinator.wait(), 3) << coordinator.err();
  const std::string log = coordinator.err();
  // Whichever the run meets first: the source's next call, or an item the
  // source made there.
  EXPECT_TRUE(log.find("the source's state was on that node, so it cannot go on elsewhere") != std::string::npos ||
              log.find("placed source stage made on a worker node are not made again") != std::string::npos)
      << log;
  EXPECT_FALSE(fs::exists(dir / "lost.txt"));
  near.wait();
}

// A sink placed on another site than the coordinator's runs on a node of
// that site and writes its files there: the far node runs in a folder of
// its own, so a relative output path lands in that folder, never in the
// coordinator's. A failed run leaves nothing on the node, an output the
// node cannot open fails the run before any work, and a journalled run
// refuses a sink it could not replay.
TEST(ClusterRun, APlacedSinkWritesItsFilesOnANodeOfItsSite) {
  const auto dir = test::scratch();
  const auto wf = placed_chain(dir, 24, 2, 1, 100);
  const std::string want = expected_output(dir, wf);
  const fs::path far_dir = dir / "far-host";
  fs::create_directories(far_dir);
  write(dir, "plan.json", R"({"stages": {"src": "near", "step": "far", "out": "far"}})");
  // The run of `workflow` with `extra` options; its log.
  auto cluster = [&](const fs::path& workflow, const std::vector<std::string>& extra, int want_code) {
    const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
    std::vector<std::string> args = {"run",        workflow.string(), "--listen", endpoint,   "--expect",
                                     "2",          "--gpu",     "none",         "--no-progress", "--no-perf-model",
                                     "--sites",    "sites.json", "--placement", "plan.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    Process coordinator(dir, args);
    Process near(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "near", "--label",
                       "site:near"});
    Process far(far_dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "2", "--name", "far", "--label",
                          "site:far"});
    EXPECT_EQ(coordinator.wait(), want_code) << coordinator.err();
    near.wait();
    far.wait();
    return coordinator.err();
  };
  auto leftovers = [](const fs::path& d) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().filename().string().starts_with(".placed") || e.path().filename() == "placed.txt")
        names.push_back(e.path().filename().string());
    return names;
  };
  {
    // With a profile, the file's placement is predicted as written: its
    // sink away from the last site too (until 2026-11-28 refused, as the
    // planner holds sinks at the last site).
    write(dir, "profile.json", R"({"version": 1, "source_items": 24, "stages": {
      "src": {"seconds": 0, "bytes_out": 100}, "step": {"seconds": 0.002, "bytes_out": 100},
      "out": {"seconds": 0, "bytes_out": 100}}})");
    const std::string log = cluster(wf, {"--set", "output=placed.txt", "--profile", "profile.json"}, 0);
    EXPECT_EQ(test::slurp(far_dir / "placed.txt"), want);
    EXPECT_FALSE(fs::exists(dir / "placed.txt")) << "the coordinator wrote the sink's file";
    EXPECT_NE(log.find("placement (plan.json): src@near, step@far, out@far; predicted "), std::string::npos) << log;
    EXPECT_TRUE(std::regex_search(log, std::regex("sink 'out' runs on [^\\n]*far"))) << log;
    EXPECT_TRUE(std::regex_search(log, std::regex("sink 'out': its files were written on [^\\n]*far"))) << log;
  }
  fs::remove(far_dir / "placed.txt");
  {
    // The sink fails on one item: the run fails and the node keeps nothing.
    const auto failing = write(dir, "wf-fail.json", test::slurp(wf).replace(test::slurp(wf).find("\"path\""), 6,
                                                                          "\"fail_key\": \"item/7\", \"path\""));
    const std::string log = cluster(failing, {"--set", "output=placed.txt"}, 3);
    EXPECT_NE(log.find("sink asked to fail on item/7"), std::string::npos) << log;
    EXPECT_TRUE(leftovers(far_dir).empty()) << leftovers(far_dir).front();
  }
  {
    // The node cannot open the output: a folder stands where the file goes.
    fs::create_directories(far_dir / "placed.txt");
    const std::string log = cluster(wf, {"--set", "output=placed.txt"}, 3);
    EXPECT_TRUE(std::regex_search(log, std::regex("stage 'out' could not open its output: on [^\\n]*far[^\\n]*is a folder")))
        << log;
    fs::remove(far_dir / "placed.txt");
    EXPECT_TRUE(leftovers(far_dir).empty()) << leftovers(far_dir).front();
  }
  {
    const std::string log = cluster(wf, {"--set", "output=placed.txt", "--journal", (dir / "journal").string()}, 2);
    EXPECT_NE(log.find("sink 'out' is placed on a worker node: the inputs it consumes there are not kept"),
              std::string::npos)
        << log;
  }
}

// The node holding a placed sink is killed mid-run: what the sink consumed
// and staged was there, so the run fails saying so, and no file of the run
// is anywhere.
TEST(ClusterRun, APlacedSinkWhoseNodeIsLostFailsTheRunNamingIt) {
  const auto dir = test::scratch();
  const auto wf = placed_chain(dir, 400, 20, 1, 100);
  const fs::path far_dir = dir / "far-host";
  fs::create_directories(far_dir);
  write(dir, "plan.json", R"({"stages": {"src": "near", "step": "near", "out": "far"}})");
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
  Process coordinator(dir, {"run", wf.string(), "--set", "output=lost.txt", "--listen", endpoint, "--expect", "2",
                            "--gpu", "none", "--no-progress", "--no-perf-model", "--max-in-flight", "4", "--sites",
                            "sites.json", "--placement", "plan.json"});
  Process near(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "near", "--label",
                     "site:near"});
  Process far(far_dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "far", "--label",
                        "site:far"});
  kill_once_logged(coordinator, far, "sink 'out' runs on");
  EXPECT_EQ(coordinator.wait(), 3) << coordinator.err();
  const std::string log = coordinator.err();
  EXPECT_NE(log.find("sink 'out' kept its state and files on that node"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(far_dir / "lost.txt"));
  EXPECT_FALSE(fs::exists(dir / "lost.txt"));
  near.wait();
}

// --placement auto with a profile that is wrong (the step said to cost
// nothing, so it is planned next to the coordinator): once the measured
// time drifts past the margin, the run plans again and the far site's four
// nodes take the step; the output is unchanged.
TEST(ClusterRun, APlacementIsPlannedAgainWhenMeasuredCostsDrift) {
  const auto dir = test::scratch();
  const auto wf = placed_chain(dir, 60, 30, 4, 1);
  const std::string want = expected_output(dir, wf);
  // 10 kB an item each way over 1 MB/s: 0.01 s an item, dearer than the
  // profiled step (0.1 ms), cheaper than the measured one (30 ms) on one node.
  write(dir, "profile.json", R"({"version": 1, "source_items": 60, "stages": {
    "src": {"seconds": 0, "bytes_out": 10000, "items_out": 1},
    "step": {"seconds": 0.0001, "bytes_out": 10000, "items_out": 1},
    "out": {"seconds": 0, "bytes_out": 100, "items_out": 1}}})");
  const auto no_margin = test::flowd_cmd(dir, {wf.string(), "--sites", "sites.json", "--placement", "auto", "--profile",
                                               "profile.json", "--replan-margin", "0", "--workers", "1", "--no-progress"});
  EXPECT_EQ(no_margin.code, 2);
  EXPECT_NE(no_margin.err.find("--replan-margin 0.000000: expected a fraction above 0"), std::string::npos)
      << no_margin.err;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(test::free_port());
  Process coordinator(dir, {"run", wf.string(), "--set", "output=" + (dir / "replan.txt").string(), "--listen", endpoint,
                            "--expect", "2", "--gpu", "none", "--no-progress", "--no-perf-model", "--sites",
                            "sites.json", "--placement", "auto", "--profile", "profile.json"});
  Process near(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "1", "--name", "near", "--label",
                     "site:near"});
  Process far(dir, {"worker", "--connect", endpoint, "--gpu", "none", "--cpus", "4", "--name", "far", "--label",
                    "site:far"});
  ASSERT_EQ(coordinator.wait(), 0) << coordinator.err();
  EXPECT_EQ(test::slurp(dir / "replan.txt"), want);
  const std::string log = coordinator.err();
  EXPECT_NE(log.find("placement (planned): src@near, step@near, out@near"), std::string::npos) << log;
  EXPECT_NE(log.find("re-planned: src@near, step@far, out@near"), std::string::npos) << log;
  // Checked again every tenth of the items, against the values measured:
  // the step's cost no longer drifts, so the run plans no more.
  EXPECT_EQ(log.find("re-planned", log.find("re-planned") + 1), std::string::npos) << log;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(worker far: (\d+) tasks)"))) << log;
  EXPECT_GT(std::stoi(m[1]), 0) << log;
  near.wait();
  far.wait();
}

// 64 even tasks on two one-slot workers that each queue three ahead: the
// nodes stay busy until the end, so stealing has nothing to gain. Busy
// nodes used to steal into their lookahead from each other (hundreds of
// tasks moved back and forth, benchmarks.md §7.2); now each task moves at
// most once and only to an idle slot, and the output is the same either way.
TEST(ClusterRun, StealingStaysBoundedAndChangesNoOutput) {
  const auto dir = test::scratch();
  const int tasks = 64;
  const auto wf = write(dir, "wf.json", R"({"version": 1, "name": "even", "vars": {"output": "out.txt"}, "stages": {
    "src": {"op": "test.count", "params": {"count": 64}},
    "step": {"op": "test.step", "inputs": {"in": "src.out"}, "params": {"sleep_ms": 20}},
    "out": {"op": "test.record", "inputs": {"in": "step.out"}, "params": {"path": "${output}"}}}})");
  const std::string want = expected_output(dir, wf);
  ASSERT_FALSE(want.empty());
  const std::regex summary(R"(cluster: (\d+) tasks on 2 workers, .* (\d+) steals \((\d+) tasks moved)");
  for (const std::string steal : {"on", "off"}) {
    const std::string out = (dir / ("steal-" + steal + ".txt")).string();
    const auto r = test::flowd_cmd(
        dir, {wf.string(), "--set", "output=" + out, "--workers", "2", "--worker-cpus", "1", "--worker-lookahead", "3",
              "--steal", steal, "--gpu", "none", "--no-progress", "--no-perf-model"});
    ASSERT_EQ(r.code, 0) << "--steal " << steal << ":\n" << r.err;
    EXPECT_EQ(test::slurp(out), want) << "--steal " << steal;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, summary)) << r.err;
    EXPECT_EQ(std::stoi(m[1]), tasks);
    const int steals = std::stoi(m[2]), moved = std::stoi(m[3]);
    EXPECT_LE(moved, tasks) << "a task moved more than once:\n" << r.err;
    EXPECT_LE(steals, tasks) << r.err;
    if (steal == "off") {
      EXPECT_EQ(steals + moved, 0) << r.err;
    }
  }
}

// srun in miniature: three ranks of the same command line, told who they
// are by Slurm's variables; rank 0 coordinates, publishes its address in
// the rendezvous file, and the others join it with CURVE keys.
TEST(ClusterRun, LauncherRanksFindTheCoordinatorThroughTheRendezvousFile) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(12, 5));
  const std::string want = expected_output(dir, wf);
  std::string authorised;
  for (const char* name : {"coordinator", "worker"}) {
    const auto r = test::flowd_cmd(dir, {"keygen", name, "--out", (dir / "keys").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    if (std::string(name) == "worker") authorised = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  }
  std::ofstream(dir / "keys/authorised_keys") << authorised;
  // The documented command line (docs/cluster.md): --listen without
  // --expect, the launcher giving the number of workers.
  const std::vector<std::string> args{"run",
                                      wf.string(),
                                      "--set",
                                      "output=" + (dir / "srun.txt").string(),
                                      "--gpu",
                                      "none",
                                      "--no-progress",
                                      "--no-perf-model",
                                      "--cpu",
                                      "1",
                                      "--listen",
                                      "tcp://127.0.0.1:0",
                                      "--key",
                                      (dir / "keys/coordinator.key").string(),
                                      "--authorised-keys",
                                      (dir / "keys/authorised_keys").string(),
                                      "--worker-key",
                                      (dir / "keys/worker.key").string(),
                                      "--coordinator-key",
                                      (dir / "keys/coordinator.pub").string()};
  auto env = [&](int rank) {
    return std::vector<std::string>{"FLOWD_LAUNCHER=slurm", "SLURM_PROCID=" + std::to_string(rank), "SLURM_NTASKS=3",
                                    "SLURM_JOB_ID=4711", "SLURM_STEP_ID=0", "FLOWD_ADVERTISE=127.0.0.1",
                                    "FLOWD_RENDEZVOUS=" + (dir / "rendezvous.json").string()};
  };
  Process rank0(dir, args, env(0));
  Process rank1(dir, args, env(1));
  Process rank2(dir, args, env(2));
  ASSERT_EQ(rank0.wait(), 0) << rank0.err();
  EXPECT_EQ(rank1.wait(), 0) << rank1.err();
  EXPECT_EQ(rank2.wait(), 0) << rank2.err();
  EXPECT_EQ(test::slurp(dir / "srun.txt"), want);
  EXPECT_NE(rank1.err().find("rank 1 of 3 (slurm)"), std::string::npos) << rank1.err();
}

TEST(ClusterRun, WorkersKeepingTheirItemsInHdf5GiveTheSameOutput) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(24, 2));
  const std::string want = expected_output(dir, wf);
  const auto r = test::flowd_cmd(dir, {wf.string(), "--set", "output=" + (dir / "h5.txt").string(), "--workers", "2",
                                       "--worker-cpus", "1", "--worker-store", (dir / "stores").string(), "--gpu", "none",
                                       "--no-progress", "--no-perf-model"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::slurp(dir / "h5.txt"), want);
  EXPECT_NE(r.err.find("keeping its items in"), std::string::npos) << r.err;
  // Each node's file goes with it.
  EXPECT_TRUE(fs::is_empty(dir / "stores"));
}

// Under a launcher --expect is the launcher's size - 1; one that disagrees is
// a usage error naming both numbers.
TEST(ClusterRun, AnExpectThatDisagreesWithTheLauncherIsRefusedNamingBoth) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(4, 1));
  const auto r = test::flowd_cmd(dir,
                                 {"run", wf.string(), "--set", "output=" + (dir / "x.txt").string(), "--listen",
                                  "tcp://127.0.0.1:0", "--expect", "5", "--gpu", "none", "--no-progress"},
                                 "FLOWD_LAUNCHER=slurm SLURM_PROCID=0 SLURM_NTASKS=3 SLURM_JOB_ID=1");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("--expect 5 disagrees with the launcher: slurm started 3 ranks, so 2 workers"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.txt"));
}

// A worker rank whose rank 0 never writes the rendezvous file gives up after
// --wait-workers seconds with exit 3, naming the file.
TEST(ClusterRun, AWorkerRankWhoseCoordinatorNeverAppearsGivesUpAfterWaitWorkers) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(4, 1));
  const auto rendezvous = dir / "never.json";
  const auto r = test::flowd_cmd(
      dir,
      {"run", wf.string(), "--listen", "tcp://127.0.0.1:0", "--wait-workers", "2", "--gpu", "none", "--no-progress"},
      "FLOWD_LAUNCHER=slurm SLURM_PROCID=1 SLURM_NTASKS=3 SLURM_JOB_ID=1 FLOWD_RENDEZVOUS=" +
          test::quote(rendezvous.string()));
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("rendezvous file " + rendezvous.string() + " did not appear"), std::string::npos) << r.err;
  // The bound is --wait-workers, not the rendezvous default of 5 minutes.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("within ([0-9]+) ms"))) << r.err;
  EXPECT_LT(std::stol(m[1].str()), 60000) << r.err;
}

// A worker rank waiting for the rendezvous file stops at SIGTERM (Ctrl-C, or
// its launcher ending the step) with exit 130, not after --wait-workers.
// `timeout --foreground` signals flowd once: without it, timeout also signals
// its process group, flowd sometimes saw the TERM twice and took the "second
// interrupt" exit, and the test failed about one run in five.
TEST(ClusterRun, AWorkerRankWaitingForTheRendezvousStopsAtSigterm) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(4, 1));
  const auto rendezvous = dir / "never.json";
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = test::flowd_cmd(
      dir,
      {"run", wf.string(), "--listen", "tcp://127.0.0.1:0", "--wait-workers", "100", "--gpu", "none", "--no-progress"},
      "FLOWD_LAUNCHER=slurm SLURM_PROCID=1 SLURM_NTASKS=3 SLURM_JOB_ID=1 FLOWD_RENDEZVOUS=" +
          test::quote(rendezvous.string()) + " timeout --foreground --preserve-status -s TERM 1");
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted while waiting"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(rendezvous.string()), std::string::npos) << r.err;
  EXPECT_LT(waited, std::chrono::seconds(50));
}

// Without keys everything stays on loopback: the launched worker ranks'
// item servers too (they bound every interface, which the endpoint policy
// refuses without CURVE, and the ranks could never join).
TEST(ClusterRun, LauncherRanksWithoutKeysRunOnLoopback) {
  const auto dir = test::scratch();
  const auto wf = write(dir, "wf.json", pipeline(12, 5));
  const std::string want = expected_output(dir, wf);
  const std::vector<std::string> args{"run",
                                      wf.string(),
                                      "--set",
                                      "output=" + (dir / "mpirun.txt").string(),
                                      "--gpu",
                                      "none",
                                      "--no-progress",
                                      "--no-perf-model",
                                      "--cpu",
                                      "1",
                                      "--listen",
                                      "tcp://127.0.0.1:0",
                                      "--wait-workers",
                                      "60"};
  auto env = [&](int rank) {
    return std::vector<std::string>{"FLOWD_LAUNCHER=openmpi", "OMPI_COMM_WORLD_RANK=" + std::to_string(rank),
                                    "OMPI_COMM_WORLD_SIZE=3", "FLOWD_RENDEZVOUS=" + (dir / "rendezvous.json").string()};
  };
  Process rank0(dir, args, env(0));
  Process rank1(dir, args, env(1));
  Process rank2(dir, args, env(2));
  ASSERT_EQ(rank0.wait(), 0) << rank0.err();
  EXPECT_EQ(rank1.wait(), 0) << rank1.err();
  EXPECT_EQ(rank2.wait(), 0) << rank2.err();
  EXPECT_EQ(test::slurp(dir / "mpirun.txt"), want);
  EXPECT_NE(rank1.err().find("items served at tcp://127.0.0.1:"), std::string::npos) << rank1.err();
}

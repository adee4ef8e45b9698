// Two-level dataflow: an operator's sub-tasks go through the run's queue, run
// with the picked worker's variant, chain through SubRef (by output port
// name), fail as a unit and appear in the trace as children of their stage
// task.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <set>

#include "support/helpers.hpp"

using namespace flowd;
using runtime::RunStatus;

namespace {

std::string fanout(const std::string& params, const std::string& out, int count = 6) {
  return R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": )" + std::to_string(count) + R"(}},
    "fan":  {"op": "test.fanout", "inputs": {"in": "src.out"}, "params": {)" + params + R"(}},
    "sink": {"op": "test.record", "inputs": {"in": "fan.out"}, "params": {"path": ")" + out + R"("}}
  }})";
}

runtime::RunOptions options(int cpus, const std::string& gpus = "none", trace::Recorder* rec = nullptr) {
  runtime::RunOptions o;
  o.cpu_workers = cpus;
  o.gpus = runtime::GpuSpec::parse(gpus);
  o.recorder = rec;
  return o;
}

// Runs on another thread so that a regression fails instead of hanging ctest.
runtime::RunReport run_guarded(const std::string& json, runtime::RunOptions o) {
  auto g = test::graph(json);
  runtime::Run run(g, std::move(o), test::quiet_log());
  auto f = std::async(std::launch::async, [&] { return run.execute(); });
  if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    ADD_FAILURE() << "run did not finish in 60 s";
    std::abort();  // the run references this frame: nothing safe to return
  }
  return f.get();
}

}  // namespace

TEST(SubTasks, IndependentCallsRunAndTheirResultsComeBack) {
  const auto dir = test::scratch();
  const auto out = dir / "o.txt";
  ASSERT_EQ(run_guarded(fanout(R"("calls": 8)", out.string()), options(2)).status, RunStatus::succeeded);
  const auto got = test::lines(out);
  ASSERT_EQ(got.size(), 6u);
  // item i: sum over k < 8 of 2 (i + k) = 16 i + 56
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], "item/" + std::to_string(i) + " {\"i\":" + std::to_string(16 * i + 56) + "}");
}

TEST(SubTasks, ChainedCallsSeeTheirPredecessorsOutputs) {
  const auto dir = test::scratch();
  const auto out = dir / "o.txt";
  for (const char* gpus : {"none", "sim:1"}) {
    ASSERT_EQ(run_guarded(fanout(R"("calls": 5, "chain": true)", out.string()), options(2, gpus)).status,
              RunStatus::succeeded) << gpus;
    const auto got = test::lines(out);
    ASSERT_EQ(got.size(), 6u);
    EXPECT_EQ(got[3], "item/3 {\"i\":96}") << gpus;  // 3 * 2^5
  }
}

TEST(SubTasks, AreTracedAsChildrenOfTheirStageTaskAndGoToTheSimulatedGpu) {
  const auto dir = test::scratch();
  trace::Recorder rec(true);
  // test.double's hint is 8x: with one CPU worker and a simulated GPU, the GPU
  // takes sub-tasks as well as the CPU.
  ASSERT_EQ(run_guarded(fanout(R"("calls": 6, "cost_ms": 4)", (dir / "o.txt").string(), 8), options(1, "sim:1", &rec)).status,
            RunStatus::succeeded);
  const auto t = rec.snapshot(Json::object());
  std::map<std::int64_t, std::string> fan_tasks;  // id -> key
  for (const auto& s : t.spans)
    if (s.name == "test.fanout") {
      EXPECT_EQ(s.parent, -1);
      fan_tasks[s.id] = s.key;
    }
  ASSERT_EQ(fan_tasks.size(), 8u);
  std::map<std::int64_t, int> children;
  int on_sim = 0;
  for (const auto& s : t.spans)
    if (s.name == "test.double") {
      EXPECT_EQ(s.stage, "fan");
      ASSERT_TRUE(fan_tasks.count(s.parent)) << "sub-task " << s.key << " has no parent span";
      EXPECT_EQ(s.key, fan_tasks[s.parent]) << "a sub-task is traced under its stage task's item";
      ++children[s.parent];
      on_sim += s.variant == "sim";
    }
  for (const auto& [id, n] : children) EXPECT_EQ(n, 6) << fan_tasks[id];
  EXPECT_GT(on_sim, 0) << "no sub-task ran on the simulated GPU";
}

TEST(SubTasks, AFailedCallFailsItsDependentsAndTheStageTask) {
  const auto dir = test::scratch();
  const auto out = dir / "o.txt";
  trace::Recorder rec(true);
  auto o = options(2, "none", &rec);
  o.keep_going = true;
  // Every item's call 1 fails; with the chain, calls 2 and 3 never run.
  auto r = run_guarded(R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": 4}},
    "fan":  {"op": "test.fanout", "inputs": {"in": "src.out"}, "params": {"calls": 4, "chain": true, "fail_call": 1}},
    "sink": {"op": "test.record", "inputs": {"in": "fan.out"}, "params": {"path": ")" + out.string() + R"("}}
  }})", o);
  EXPECT_EQ(r.status, RunStatus::completed_with_failures);
  ASSERT_EQ(r.failures.size(), 4u);  // every item's call 1 fails
  for (const auto& f : r.failures) {
    EXPECT_EQ(f.stage, "fan");
    EXPECT_NE(f.message.find("sub-task 1 (test.step) on '" + f.key + "'"), std::string::npos) << f.message;
    EXPECT_NE(f.message.find("asked to fail"), std::string::npos) << f.message;
  }
  EXPECT_TRUE(test::lines(out).empty());
  // Per item: call 0 (test.double) ran, call 1 (test.step) failed, calls 2
  // and 3 never ran.
  int doubles = 0, failed_steps = 0;
  for (const auto& s : rec.snapshot(Json::object()).spans) {
    doubles += s.name == "test.double";
    failed_steps += s.name == "test.step" && s.failed;
  }
  EXPECT_EQ(doubles, 4);
  EXPECT_EQ(failed_steps, 4);
}

TEST(SubTasks, AnOperatorNotInUsesIsRefusedByName) {
  const auto dir = test::scratch();
  auto r = run_guarded(fanout(R"("op": "test.liar")", (dir / "o.txt").string(), 2), options(2));
  EXPECT_EQ(r.status, RunStatus::failed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_NE(r.failures[0].message.find("may not run 'test.liar' as a sub-task"), std::string::npos) << r.failures[0].message;
  EXPECT_FALSE(std::filesystem::exists(dir / "o.txt"));
}

TEST(SubTasks, AReferenceToACallNotMadeYetIsRefused) {
  const auto dir = test::scratch();
  auto r = run_guarded(fanout(R"("calls": 3, "bad_ref": true)", (dir / "o.txt").string(), 2), options(2));
  EXPECT_EQ(r.status, RunStatus::failed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_NE(r.failures[0].message.find("input refers to call 8, which does not exist yet"), std::string::npos)
      << r.failures[0].message;
}

TEST(SubTasks, AReferenceToAnUnknownOutputPortIsRefusedNamingThePorts) {
  const auto dir = test::scratch();
  auto r = run_guarded(fanout(R"("calls": 3, "chain": true, "ref_port": "result")", (dir / "o.txt").string(), 2),
                       options(2));
  EXPECT_EQ(r.status, RunStatus::failed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_EQ(r.failures[0].stage, "fan");
  EXPECT_NE(r.failures[0].message.find(
                "sub-task test.double: call 0 (test.double) has no output port 'result'; its output ports: out"),
            std::string::npos)
      << r.failures[0].message;
  EXPECT_FALSE(std::filesystem::exists(dir / "o.txt"));
}

TEST(SubTasks, UsesAreListedByInspectAndOpenedAtValidation) {
  auto reg = test::default_registry();
  const auto& spec = reg.open("test.fanout").spec();
  EXPECT_EQ(spec.uses, (std::vector<std::string>{"test.double", "test.step"}));
  const auto g = test::graph(fanout("", "/dev/null"));
  const auto& fan = g.stages.at(1);
  ASSERT_EQ(fan.name, "fan");
  EXPECT_EQ(fan.uses.size(), 2u);
}

TEST(SubTasks, TheParentsModelledTimeExcludesTasksItRanWhileWaiting) {
  // One CPU worker: the parent runs its own sub-tasks (4 x 10 ms of simulated
  // compute) while it waits; the model must not charge them to test.fanout.
  const auto dir = test::scratch();
  sched::PerfModel model;
  auto o = options(1);
  o.model = &model;
  ASSERT_EQ(run_guarded(fanout(R"("calls": 4, "cost_ms": 10)", (dir / "o.txt").string(), 3), o).status,
            RunStatus::succeeded);
  const Json m = model.to_json();
  const auto mean = [&](const char* op) { return m["operators"][op]["runs"][0]["stats"]["mean"].get<double>(); };
  EXPECT_GE(mean("test.double"), 0.009);
  EXPECT_LT(mean("test.fanout"), 0.010) << "the parent was charged its sub-tasks' time";
}

TEST(SubTasks, TheStagesBusyTimeCountsItsSubTasksOnce) {
  // A stage's busy time (the summary's, and a stage profile's seconds for
  // flowd plan) is its compute: the sub-tasks' time plus the parent's own,
  // not the parent's wait on top of them. With one worker the parent runs
  // its own sub-tasks while it waits, and they were counted twice (nuclei's
  // segment: 0.66 s a tile instead of 0.2 s). With two, the parent idles
  // while the other worker runs them.
  for (const int cpus : {1, 2}) {
    const auto dir = test::scratch();
    trace::Recorder rec(true);
    auto o = options(cpus, "none", &rec);
    const auto r = run_guarded(fanout(R"("calls": 4, "cost_ms": 20)", (dir / "o.txt").string(), 4), o);
    ASSERT_EQ(r.status, RunStatus::succeeded);
    double sub_seconds = 0;  // as traced, whatever the machine's noise
    for (const auto& s : rec.snapshot(Json::object()).spans)
      if (s.name == "test.double") sub_seconds += static_cast<double>(s.end_ns - s.start_ns) * 1e-9;
    EXPECT_GE(sub_seconds, 16 * 0.020);
    const double busy = r.final.stages.at(1).busy_seconds;
    EXPECT_GE(busy, 0.95 * sub_seconds) << cpus << " worker(s)";
    EXPECT_LT(busy, 1.3 * sub_seconds) << cpus << " worker(s): sub-tasks counted twice";
  }
}

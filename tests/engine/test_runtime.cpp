// Running graphs: streaming, backpressure, joins, reduce, failures,
// keep-going, interrupts and transactional sinks.
#include <gtest/gtest.h>

#include <climits>
#include <thread>

#include "support/helpers.hpp"

using namespace flowd;
using runtime::RunStatus;

namespace {

std::string chain(const std::string& extra_src, const std::string& step_params, const std::string& out, int count = 20) {
  return R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": )" + std::to_string(count) + extra_src + R"(}},
    "step": {"op": "test.step", "inputs": {"in": "src.out"}, "params": {)" + step_params + R"(}},
    "sink": {"op": "test.record", "inputs": {"in": "step.out"}, "params": {"path": ")" + out + R"("}}
  }})";
}

runtime::RunOptions workers(int n, int window = 0) {
  runtime::RunOptions o;
  o.cpu_workers = n;
  o.max_in_flight = window;
  return o;
}

}  // namespace

TEST(Runtime, EveryItemReachesTheSinkOnce) {
  const auto dir = test::scratch();
  for (int w : {1, 2, 4}) {
    const auto out = dir / ("out" + std::to_string(w) + ".txt");
    auto r = test::run(chain("", R"("copies": 2)", out.string(), 50), workers(w));
    ASSERT_EQ(r.status, RunStatus::succeeded);
    const auto got = test::lines(out);
    ASSERT_EQ(got.size(), 100u);
    EXPECT_EQ(got.front(), "item/0/copy0 {\"i\":0}");
    EXPECT_EQ(got.back(), "item/49/copy1 {\"i\":49}");
    EXPECT_EQ(r.final.source_items, 50u);
    EXPECT_EQ(r.final.retired_items, 50u);
  }
}

TEST(Runtime, ItemsStreamThroughStages) {
  // No barrier between stages: b works on early items while a still has
  // later ones to do, and two items are in flight at once.
  const auto dir = test::scratch();
  const auto trace = dir / "trace.txt";
  const std::string json = R"({"version": 1, "stages": {
    "src": {"op": "test.count", "params": {"count": 6}},
    "a":   {"op": "test.step", "inputs": {"in": "src.out"}, "params": {"sleep_ms": 30, "trace": ")" + trace.string() + R"("}},
    "b":   {"op": "test.step", "inputs": {"in": "a.out"}, "params": {"sleep_ms": 30, "trace": ")" + trace.string() + R"("}},
    "sink": {"op": "test.record", "inputs": {"in": "b.out"}, "params": {"path": ")" + (dir / "o.txt").string() + R"("}}
  }})";
  ASSERT_EQ(test::run(json, workers(2)).status, RunStatus::succeeded);
  struct Span { std::string stage, key; long long t0, t1; };
  std::vector<Span> spans;
  for (const auto& l : test::lines(trace)) {
    std::istringstream in(l);
    Span s;
    in >> s.stage >> s.key >> s.t0 >> s.t1;
    spans.push_back(s);
  }
  ASSERT_EQ(spans.size(), 12u);
  long long first_b = LLONG_MAX, last_a = 0;
  bool two_items_at_once = false;
  for (const auto& x : spans) {
    if (x.stage == "b") first_b = std::min(first_b, x.t0);
    if (x.stage == "a") last_a = std::max(last_a, x.t1);
    for (const auto& y : spans) two_items_at_once |= x.key != y.key && x.t0 < y.t1 && y.t0 < x.t1;
  }
  EXPECT_LT(first_b, last_a) << "stage b waited for stage a to finish every item";
  EXPECT_TRUE(two_items_at_once);
}

TEST(Runtime, MemoryIsBoundedByTheSourceWindow) {
  const auto dir = test::scratch();
  const auto report = dir / "alive.txt";
  const std::string src = R"(, "bytes": 1048576, "alive_report": ")" + report.string() + R"(")";
  auto r = test::run(chain(src, R"("sleep_ms": 2)", (dir / "o.txt").string(), 200), workers(2, 4));
  ASSERT_EQ(r.status, RunStatus::succeeded);
  const int peak = std::stoi(test::lines(report).at(0));
  EXPECT_GE(peak, 2);
  EXPECT_LE(peak, 4) << "more source items alive than max_in_flight";
}

TEST(Runtime, InputsAreJoinedByKey) {
  const auto dir = test::scratch();
  const auto out = dir / "pairs.txt";
  const std::string json = R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": 30}},
    "slow": {"op": "test.step", "inputs": {"in": "src.out"}, "params": {"sleep_ms": 1}},
    "pair": {"op": "test.pair", "inputs": {"a": "src.out", "b": "slow.out"}},
    "sink": {"op": "test.record", "inputs": {"in": "pair.out"}, "params": {"path": ")" + out.string() + R"("}}
  }})";
  ASSERT_EQ(test::run(json, workers(2)).status, RunStatus::succeeded);
  const auto got = test::lines(out);
  ASSERT_EQ(got.size(), 30u);
  EXPECT_EQ(got[7], R"(item/7 {"a":7,"b":7,"c":false})");
}

TEST(Runtime, ItemsThatNeverFindAPartnerAreReported) {
  const auto dir = test::scratch();
  const std::string json = R"({"version": 1, "stages": {
    "x":    {"op": "test.count", "params": {"count": 3, "prefix": "x"}},
    "y":    {"op": "test.count", "params": {"count": 3, "prefix": "y"}},
    "pair": {"op": "test.pair", "inputs": {"a": "x.out", "b": "y.out"}},
    "sink": {"op": "test.record", "inputs": {"in": "pair.out"}, "params": {"path": ")" + (dir / "o.txt").string() + R"("}}
  }})";
  auto r = test::run(json, workers(2, 8));
  EXPECT_EQ(r.status, RunStatus::failed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_EQ(r.failures[0].stage, "pair");
  EXPECT_NE(r.failures[0].message.find("arrived on input a but never on b"), std::string::npos) << r.failures[0].message;
  EXPECT_FALSE(std::filesystem::exists(dir / "o.txt"));
}

TEST(Runtime, AJoinThatCanNeverProgressIsDetectedNotHung) {
  // Two sources emit the same keys in opposite orders; with a window of 2
  // no key ever meets its partner.
  const auto dir = test::scratch();
  const std::string json = R"({"version": 1, "stages": {
    "x":    {"op": "test.count", "params": {"count": 50}},
    "y":    {"op": "test.count", "params": {"count": 50, "reverse": true}},
    "pair": {"op": "test.pair", "inputs": {"a": "x.out", "b": "y.out"}},
    "sink": {"op": "test.record", "inputs": {"in": "pair.out"}, "params": {"path": ")" + (dir / "o.txt").string() + R"("}}
  }})";
  auto g = test::graph(json);
  runtime::Run run(g, workers(2, 2), test::quiet_log());
  auto r = run.execute({}, std::chrono::milliseconds(20));
  EXPECT_EQ(r.status, RunStatus::failed);
  EXPECT_NE(r.error.find("cannot make progress"), std::string::npos) << r.error;
}

TEST(Runtime, ReduceMergesEveryItem) {
  const auto dir = test::scratch();
  const auto out = dir / "sum.txt";
  const std::string json = R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": 200}},
    "sum":  {"op": "test.sum", "inputs": {"in": "src.out"}, "params": {"sleep_ms": 1}},
    "sink": {"op": "test.record", "inputs": {"in": "sum.out"}, "params": {"path": ")" + out.string() + R"("}}
  }})";
  ASSERT_EQ(test::run(json, workers(2)).status, RunStatus::succeeded);
  EXPECT_EQ(test::lines(out), std::vector<std::string>{R"(sum {"n":200,"sum":19900})"});
}

TEST(Runtime, AFailingTaskStopsTheRunAndNothingIsWritten) {
  const auto dir = test::scratch();
  const auto out = dir / "o.txt";
  auto r = test::run(chain("", R"("fail_key": "item/5")", out.string(), 40), workers(2));
  EXPECT_EQ(r.status, RunStatus::failed);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].describe(), "stage 'step' failed on item 'item/5': asked to fail on item/5");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Runtime, KeepGoingRecordsFailuresAndWritesTheRest) {
  const auto dir = test::scratch();
  const auto out = dir / "o.txt";
  runtime::RunOptions o = workers(2);
  o.keep_going = true;
  auto r = test::run(chain("", R"("fail_key": "item/5")", out.string(), 10), o);
  EXPECT_EQ(r.status, RunStatus::completed_with_failures);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].key, "item/5");
  EXPECT_EQ(test::lines(out).size(), 9u);
}

TEST(Runtime, ASourceFailureIsNamedAndKeepGoingContinuesPastIt) {
  const auto dir = test::scratch();
  auto r = test::run(chain(R"(, "fail_at": 3)", "", (dir / "a.txt").string(), 6), workers(2));
  EXPECT_EQ(r.status, RunStatus::failed);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].stage, "src");
  EXPECT_EQ(r.failures[0].key, "item/3");  // an ItemError names the item a source was making
  EXPECT_NE(r.failures[0].message.find("failing at 3"), std::string::npos);
  runtime::RunOptions o = workers(2);
  o.keep_going = true;
  auto k = test::run(chain(R"(, "fail_at": 3)", "", (dir / "b.txt").string(), 6), o);
  EXPECT_EQ(k.status, RunStatus::completed_with_failures);
  EXPECT_EQ(test::lines(dir / "b.txt").size(), 5u);
}

TEST(Runtime, AnOutputOfTheWrongTypeFailsTheTask) {
  const auto dir = test::scratch();
  const std::string json = R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": 2}},
    "liar": {"op": "test.liar", "inputs": {"in": "src.out"}},
    "sink": {"op": "test.record", "inputs": {"in": "liar.out"}, "params": {"path": ")" + (dir / "o.txt").string() + R"("}}
  }})";
  auto r = test::run(json, workers(1));
  EXPECT_EQ(r.status, RunStatus::failed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_NE(r.failures[0].message.find("emitted json on output 'out', declared array<u8,2>"), std::string::npos)
      << r.failures[0].message;
}

TEST(Runtime, AMissingRequiredOutputFailsTheTask) {
  const auto dir = test::scratch();
  auto r = test::run(chain("", R"("copies": 0)", (dir / "o.txt").string(), 3), workers(1));
  EXPECT_EQ(r.status, RunStatus::failed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_NE(r.failures[0].message.find("produced nothing on required output 'out'"), std::string::npos);
}

TEST(Runtime, ASinkThatCannotOpenFailsBeforeAnyWork) {
  const auto dir = test::scratch();
  const std::string json = R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": 5}},
    "sink": {"op": "test.record", "inputs": {"in": "src.out"}, "params": {"path": "x", "fail_open": true}}
  }})";
  auto r = test::run(json, workers(1));
  EXPECT_EQ(r.status, RunStatus::failed);
  EXPECT_NE(r.error.find("could not open its output"), std::string::npos);
  EXPECT_EQ(r.final.source_items, 0u);
}

TEST(Runtime, ACommitFailureFailsTheRun) {
  const auto dir = test::scratch();
  const std::string json = R"({"version": 1, "stages": {
    "src":  {"op": "test.count", "params": {"count": 5}},
    "sink": {"op": "test.record", "inputs": {"in": "src.out"}, "params": {"path": "x", "fail_commit": true}}
  }})";
  auto r = test::run(json, workers(1));
  EXPECT_EQ(r.status, RunStatus::failed);
  EXPECT_NE(r.error.find("could not commit its output: commit refused"), std::string::npos) << r.error;
}

TEST(Runtime, AnInterruptStopsCleanlyWithoutOutput) {
  const auto dir = test::scratch();
  const auto out = dir / "o.txt";
  auto g = test::graph(chain("", R"("sleep_ms": 20)", out.string(), 1000));
  std::atomic<bool> stop{false};
  runtime::RunOptions o = workers(2);
  o.interrupt = &stop;
  runtime::Run run(g, o, test::quiet_log());
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    stop = true;
  });
  auto r = run.execute({}, std::chrono::milliseconds(20));
  t.join();
  EXPECT_EQ(r.status, RunStatus::interrupted);
  EXPECT_LT(r.final.source_items, 1000u);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Runtime, ProgressReportsExpectedAndRetiredItems) {
  const auto dir = test::scratch();
  auto g = test::graph(chain("", R"("sleep_ms": 5)", (dir / "o.txt").string(), 30));
  runtime::Run run(g, workers(2), test::quiet_log());
  std::vector<runtime::Progress> ticks;
  auto r = run.execute([&](const runtime::Progress& p) { ticks.push_back(p); }, std::chrono::milliseconds(10));
  ASSERT_EQ(r.status, RunStatus::succeeded);
  ASSERT_FALSE(ticks.empty());
  for (const auto& p : ticks) {
    ASSERT_TRUE(p.expected_items);
    EXPECT_EQ(*p.expected_items, 30u);
    EXPECT_LE(p.retired_items, p.source_items);
  }
  EXPECT_EQ(r.final.stages.size(), 3u);
  EXPECT_EQ(r.final.stages[1].tasks_done, 30u);
  EXPECT_GT(r.final.stages[1].busy_seconds, 0.1);
}

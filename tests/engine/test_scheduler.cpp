// The ready queue, the worker pool and static task graphs.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "exec/worker_pool.hpp"
#include "sched/fcfs_queue.hpp"
#include "sched/task_graph.hpp"

using namespace flowd;
using namespace std::chrono_literals;

namespace {

class Fn final : public sched::Task {
public:
  explicit Fn(std::function<void()> f, sched::KindMask mask = sched::cpu_only) : f_(std::move(f)) { runs_on = mask; }
  void run(sched::TaskEnv&) override { f_(); }

private:
  std::function<void()> f_;
};

sched::TaskPtr task(std::function<void()> f, sched::KindMask mask = sched::cpu_only) {
  return std::make_unique<Fn>(std::move(f), mask);
}

exec::WorkerPool pool(int workers) {
  return exec::WorkerPool(std::make_unique<sched::FcfsQueue>(), exec::WorkerPool::cpu_workers(workers));
}

}  // namespace

TEST(FcfsQueue, ServesOldestTaskTheWorkerCanRun) {
  sched::FcfsQueue q;
  std::vector<int> order;
  const auto gpu = sched::bit(sched::WorkerKind::gpu);
  q.push(task([&] { order.push_back(0); }));
  q.push(task([&] { order.push_back(1); }, gpu));
  q.push(task([&] { order.push_back(2); }, static_cast<sched::KindMask>(gpu | sched::cpu_only)));
  q.push(task([&] { order.push_back(3); }));
  const sched::WorkerInfo cpu{0, sched::WorkerKind::cpu, -1, "cpu0"}, gpu0{1, sched::WorkerKind::gpu, 0, "gpu0"};
  sched::TaskEnv env(cpu);
  EXPECT_TRUE(q.has_work_for(gpu0));
  q.pop(cpu)->run(env);
  q.pop(cpu)->run(env);
  q.pop(gpu0)->run(env);
  q.pop(cpu)->run(env);
  EXPECT_EQ(order, (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(q.pop(cpu), nullptr);
  EXPECT_EQ(q.size(), 0u);
}

TEST(WorkerPool, RunsEveryTaskExactlyOnce) {
  for (int workers : {1, 2, 4}) {
    auto p = pool(workers);
    std::atomic<int> n{0};
    std::vector<sched::TaskPtr> batch;
    for (int i = 0; i < 20000; ++i) batch.push_back(task([&] { ++n; }));
    p.submit(std::move(batch));
    for (int i = 0; i < 1000; ++i) p.submit(task([&] { ++n; }));
    p.wait_idle();
    EXPECT_EQ(n.load(), 21000) << workers << " workers";
    EXPECT_EQ(p.stats().tasks_run, 21000u);
  }
}

TEST(WorkerPool, ExpensiveTasksRunConcurrently) {
  auto p = pool(2);
  std::atomic<int> running{0}, peak{0};
  for (int i = 0; i < 8; ++i)
    p.submit(task([&] {
      const int now = ++running;
      for (int m = peak.load(); now > m && !peak.compare_exchange_weak(m, now);) {
      }
      std::this_thread::sleep_for(20ms);
      --running;
    }));
  p.wait_idle();
  EXPECT_EQ(peak.load(), 2);
}

TEST(WorkerPool, QueuedWorkIsNotStrandedBehindALongTaskAfterCheapOnes) {
  auto p = pool(2);
  // Teach the pool that tasks are cheap.
  for (int i = 0; i < 2000; ++i) p.submit(task([] {}));
  p.wait_idle();
  std::atomic<bool> long_done{false};
  std::atomic<int> short_done_first{0};
  p.submit(task([&] {
    std::this_thread::sleep_for(300ms);
    long_done = true;
  }));
  std::this_thread::sleep_for(5ms);  // the long task is running
  for (int i = 0; i < 4; ++i)
    p.submit(task([&] {
      if (!long_done) ++short_done_first;
    }));
  p.wait_idle();
  EXPECT_EQ(short_done_first.load(), 4);
}

TEST(WorkerPool, WaitIdleRethrowsAnEscapedException) {
  auto p = pool(2);
  p.submit(task([] { throw std::runtime_error("boom"); }));
  EXPECT_THROW(p.wait_idle(), std::runtime_error);
  std::atomic<int> n{0};
  p.submit(task([&] { ++n; }));
  p.wait_idle();
  EXPECT_EQ(n.load(), 1);
}

TEST(WorkerPool, StopDestroysQueuedTasksUnrun) {
  std::atomic<int> ran{0};
  {
    auto p = pool(1);
    std::atomic<bool> release{false};
    p.submit(task([&] {
      while (!release) std::this_thread::sleep_for(1ms);
    }));
    for (int i = 0; i < 10; ++i) p.submit(task([&] { ++ran; }));
    release = true;
  }  // destructor stops the pool
  EXPECT_LE(ran.load(), 10);
}

// A worker node stopped while a task waits for its sub-tasks (nuclei.segment
// under mpirun's SIGTERM): the queued sub-tasks must still run, or the task
// never ends and stop() joins it forever.
TEST(WorkerPool, ATaskHelpingItsSubTasksFinishesWhileThePoolStops) {
  auto p = pool(1);
  std::atomic<bool> sub_ran{false}, waiting{false}, gave_up{false};
  p.submit(task([&] {
    p.submit(task([&] { sub_ran = true; }));  // queued: the only worker is busy here
    waiting = true;
    while (!p.stopping())
      std::this_thread::sleep_for(1ms);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!sub_ran) {
      if (!p.run_one(p.workers().front())) std::this_thread::sleep_for(1ms);
      if (std::chrono::steady_clock::now() > deadline) {
        gave_up = true;
        return;
      }
    }
  }));
  while (!waiting)
    std::this_thread::sleep_for(1ms);
  p.stop();
  EXPECT_TRUE(sub_ran.load());
  EXPECT_FALSE(gave_up.load()) << "the sub-task stayed queued after stop() began";
}

TEST(TaskGraph, ChainRunsInOrder) {
  auto p = pool(2);
  sched::TaskGraph g;
  std::vector<int> order;
  std::mutex m;
  sched::TaskGraph::NodeId prev = 0;
  for (int i = 0; i < 500; ++i) {
    auto id = g.add([&, i] {
      std::lock_guard lk(m);
      order.push_back(i);
    });
    if (i) g.precede(prev, id);
    prev = id;
  }
  g.run(p);
  ASSERT_EQ(order.size(), 500u);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(order[i], i);
}

TEST(TaskGraph, ForkJoinRunsJoinLastAndEveryNodeOnce) {
  auto p = pool(2);
  sched::TaskGraph g;
  std::atomic<int> leaves{0};
  std::atomic<int> seen_at_join{-1};
  auto root = g.add([] {});
  auto join = g.add([&] { seen_at_join = leaves.load(); });
  for (int i = 0; i < 1000; ++i) {
    auto leaf = g.add([&] { ++leaves; });
    g.precede(root, leaf);
    g.precede(leaf, join);
  }
  g.run(p);
  EXPECT_EQ(seen_at_join.load(), 1000);
  g.run(p);  // a graph can run again
  EXPECT_EQ(leaves.load(), 2000);
}

TEST(TaskGraph, RejectsCycles) {
  auto p = pool(1);
  sched::TaskGraph g;
  auto a = g.add([] {}), b = g.add([] {}), c = g.add([] {});
  g.precede(a, b);
  g.precede(b, c);
  g.precede(c, a);
  EXPECT_THROW(g.run(p), std::invalid_argument);
}

TEST(TaskGraph, AFailedNodeSkipsItsDependents) {
  auto p = pool(2);
  sched::TaskGraph g;
  std::atomic<bool> dependent_ran{false};
  auto a = g.add([] { throw std::runtime_error("node failed"); });
  auto b = g.add([&] { dependent_ran = true; });
  g.precede(a, b);
  EXPECT_THROW(g.run(p), std::runtime_error);
  EXPECT_FALSE(dependent_ran.load());
}

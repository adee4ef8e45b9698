// The scheduling policies' choices, deterministically: which task each kind
// of worker gets.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "exec/worker_pool.hpp"
#include "sched/fcfs_queue.hpp"
#include "sched/heft_queue.hpp"
#include "sched/task_graph.hpp"
#include "sched/pats_queue.hpp"

using namespace flowd;
using sched::WorkerKind;

namespace {

const sched::KindMask cpu_gpu = sched::cpu_only | sched::gpu_like;

// A task that remembers its name and which worker ran it.
class Named final : public sched::Task {
public:
  Named(std::string n, float speedup, sched::KindMask mask, int on_worker = -1) : name(std::move(n)) {
    runs_on = mask;
    est.speedup = speedup;
    data_worker = on_worker;
  }
  void run(sched::TaskEnv& env) override { ran_on = env.worker().name; }
  std::string name;
  std::string ran_on;
};

std::unique_ptr<Named> task(std::string n, float s, sched::KindMask m = cpu_gpu, int dw = -1) {
  return std::make_unique<Named>(std::move(n), s, m, dw);
}

std::string name_of(const sched::TaskPtr& t) { return t ? static_cast<Named&>(*t).name : "(none)"; }

const sched::WorkerInfo cpu0{0, WorkerKind::cpu, -1, "cpu0"};
const sched::WorkerInfo cpu1{1, WorkerKind::cpu, -1, "cpu1"};
const sched::WorkerInfo gpu0{2, WorkerKind::gpu, 0, "gpu0"};
const sched::WorkerInfo sim0{3, WorkerKind::sim_gpu, 0, "sim0"};

}  // namespace

TEST(Pats, CpuTakesTheSmallestSpeedupGpuTheLargest) {
  sched::PatsQueue q;
  q.push(task("recon", 15));
  q.push(task("open", 1.5));
  q.push(task("watershed", 12));
  q.push(task("rbc", 1.1));
  EXPECT_EQ(name_of(q.pop(gpu0)), "recon");
  EXPECT_EQ(name_of(q.pop(cpu0)), "rbc");
  EXPECT_EQ(name_of(q.pop(sim0)), "watershed");  // a simulated GPU is a GPU to PATS
  EXPECT_EQ(name_of(q.pop(cpu0)), "open");
  EXPECT_EQ(q.pop(cpu0), nullptr);
}

TEST(Pats, EqualSpeedupsAreServedOldestFirst) {
  sched::PatsQueue q;
  for (const char* n : {"a", "b", "c", "d"}) q.push(task(n, 4));
  EXPECT_EQ(name_of(q.pop(gpu0)), "a");
  EXPECT_EQ(name_of(q.pop(cpu0)), "b");
  EXPECT_EQ(name_of(q.pop(gpu0)), "c");
}

TEST(Pats, ATaskGoesOnlyWhereItHasAVariant) {
  sched::PatsQueue q;
  q.push(task("cpu-only-big", 50, sched::cpu_only));
  q.push(task("either-small", 2));
  EXPECT_EQ(name_of(q.pop(gpu0)), "either-small");  // the larger speedup is not runnable on a GPU
  EXPECT_FALSE(q.has_work_for(gpu0));
  EXPECT_TRUE(q.has_work_for(cpu0));
  EXPECT_EQ(q.pop(gpu0), nullptr);
  EXPECT_EQ(name_of(q.pop(cpu0)), "cpu-only-big");
}

TEST(Pats, DataLocalityPrefersAReuseTaskWhenItsSpeedupIsCloseEnough) {
  // Sq = 10; a task whose inputs are on gpu0 with Sd = 8.5 >= 10 * (1 - 0.2).
  sched::PatsQueue q(sched::PatsOptions{true, 0.2});
  q.push(task("best-elsewhere", 10));
  q.push(task("reuses-gpu0", 8.5, cpu_gpu, gpu0.id));
  EXPECT_EQ(name_of(q.pop(gpu0)), "reuses-gpu0");
  EXPECT_EQ(name_of(q.pop(gpu0)), "best-elsewhere");
}

TEST(Pats, DataLocalityYieldsToAMuchFasterTask) {
  sched::PatsQueue q(sched::PatsOptions{true, 0.2});
  q.push(task("best-elsewhere", 10));
  q.push(task("reuses-gpu0", 7.9, cpu_gpu, gpu0.id));  // 7.9 < 8
  EXPECT_EQ(name_of(q.pop(gpu0)), "best-elsewhere");
  // Data on gpu0 is not local to sim0.
  q.push(task("big", 9));
  EXPECT_EQ(name_of(q.pop(sim0)), "big");
  // A larger transfer impact lets the reuse task win.
  q.push(task("best-elsewhere-2", 10));
  q.set_transfer_impact(0.3);
  EXPECT_EQ(name_of(q.pop(gpu0)), "reuses-gpu0");
}

TEST(Pats, WithoutLocalityOnlySpeedupCounts) {
  sched::PatsQueue q(sched::PatsOptions{false, 0.9});
  q.push(task("best-elsewhere", 10));
  q.push(task("reuses-gpu0", 9.9, cpu_gpu, gpu0.id));
  EXPECT_EQ(name_of(q.pop(gpu0)), "best-elsewhere");
}

TEST(Pats, ManyTasksPopInLogTime) {
  sched::PatsQueue q;
  for (int i = 0; i < 100000; ++i) q.push(task("t", static_cast<float>(i % 97), cpu_gpu, i % 3 == 0 ? gpu0.id : -1));
  float last = 1e9f;
  for (int i = 0; i < 1000; ++i) {
    auto t = q.pop(sim0);
    ASSERT_TRUE(t);
    EXPECT_LE(t->est.speedup, last);
    last = t->est.speedup;
  }
  EXPECT_EQ(q.size(), 99000u);
}

TEST(Heft, GivesEachTaskToTheWorkerThatFinishesItFirst) {
  sched::HeftQueue q;
  q.attach({cpu0, gpu0});
  // 10 ms on a CPU, 1 ms on the GPU: the GPU until its backlog exceeds 10 ms.
  for (int i = 0; i < 12; ++i) {
    auto t = task("t" + std::to_string(i), 10, cpu_gpu);
    t->est.cpu_seconds = 0.010f;
    t->est.gpu_seconds = 0.001f;
    q.push(std::move(t));
  }
  int on_gpu = 0, on_cpu = 0;
  while (q.pop(gpu0)) ++on_gpu;
  while (q.pop(cpu0)) ++on_cpu;
  EXPECT_EQ(on_gpu + on_cpu, 12);
  EXPECT_GE(on_gpu, 10);
  EXPECT_GE(on_cpu, 1);
}

TEST(Heft, CountsTheCostOfMovingInputs) {
  sched::HeftQueue q;
  q.attach({cpu0, gpu0, sim0});
  auto t = task("data-on-sim0", 2, cpu_gpu, sim0.id);
  t->est.cpu_seconds = 0.004f;
  t->est.gpu_seconds = 0.002f;
  t->est.transfer_seconds = 0.003f;
  EXPECT_NEAR(q.cost(*t, gpu0), 0.002 + 0.003, 1e-7);  // estimates are floats
  EXPECT_NEAR(q.cost(*t, sim0), 0.002, 1e-7);
  EXPECT_NEAR(q.cost(*t, cpu0), 0.004 + 0.003, 1e-7);
  q.push(std::move(t));
  EXPECT_TRUE(q.has_work_for(sim0));
  EXPECT_FALSE(q.has_work_for(gpu0));
  EXPECT_EQ(q.pop(gpu0), nullptr);  // bound to sim0
  EXPECT_EQ(name_of(q.pop(sim0)), "data-on-sim0");
}

TEST(Heft, CpuOnlyTasksNeverGoToAGpu) {
  sched::HeftQueue q;
  q.attach({cpu0, gpu0});
  for (int i = 0; i < 5; ++i) q.push(task("c", 100, sched::cpu_only));
  EXPECT_FALSE(q.has_work_for(gpu0));
  int n = 0;
  while (q.pop(cpu0)) ++n;
  EXPECT_EQ(n, 5);
}

TEST(PoolWithGpus, HeftWakesTheWorkerAReadyTaskWasGivenTo) {
  // A chain alternating CPU-only tasks with tasks HEFT gives the GPU: every
  // ready task is bound to the other worker, which sleeps and must be woken
  // (it once waited forever).
  class Alternate final : public sched::Task {
  public:
    Alternate(int left, std::atomic<int>& ran) : left_(left), ran_(ran) {
      const bool on_gpu = left % 2 == 0;
      runs_on = on_gpu ? cpu_gpu : sched::cpu_only;
      est.speedup = 10;
      est.cpu_seconds = 0.01f;
      est.gpu_seconds = 0.001f;
    }
    void run(sched::TaskEnv& env) override {
      ++ran_;
      if (left_ > 0) env.spawn(std::make_unique<Alternate>(left_ - 1, ran_));
    }

  private:
    int left_;
    std::atomic<int>& ran_;
  };
  std::vector<sched::WorkerInfo> workers = {cpu0, {1, WorkerKind::sim_gpu, 0, "sim0"}};
  exec::WorkerPool pool(std::make_unique<sched::HeftQueue>(), workers);
  std::atomic<int> ran{0};
  pool.submit(std::make_unique<Alternate>(200, ran));
  auto done = std::async(std::launch::async, [&] { pool.wait_idle(); });
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    pool.stop();  // releases wait_idle, so a regression fails instead of hanging
    FAIL() << "a chain stalled on a HEFT pool after " << ran.load() << " tasks";
  }
  EXPECT_EQ(ran.load(), 201);
}

TEST(PoolWithGpus, EachTaskRunsOnlyWhereItHasAVariantAndGpusTakeTheFastest) {
  std::vector<sched::WorkerInfo> workers = {cpu0, {1, WorkerKind::sim_gpu, 0, "sim0"}};
  exec::WorkerPool pool(std::make_unique<sched::PatsQueue>(), workers);
  std::mutex m;
  std::vector<std::pair<std::string, std::string>> ran;  // task, worker
  class Record final : public sched::Task {
  public:
    Record(std::string n, float s, sched::KindMask mask, std::mutex& m, decltype(ran)& out)
        : name_(std::move(n)), m_(m), out_(out) {
      runs_on = mask;
      est.speedup = s;
    }
    void run(sched::TaskEnv& env) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::lock_guard lk(m_);
      out_.emplace_back(name_, env.worker().name);
    }
  private:
    std::string name_;
    std::mutex& m_;
    decltype(ran)& out_;
  };
  std::vector<sched::TaskPtr> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(std::make_unique<Record>("cpu-only", 30, sched::cpu_only, m, ran));
  for (int i = 0; i < 6; ++i) batch.push_back(std::make_unique<Record>("fast", 20, cpu_gpu, m, ran));
  for (int i = 0; i < 6; ++i) batch.push_back(std::make_unique<Record>("slow", 1.2f, cpu_gpu, m, ran));
  pool.submit(std::move(batch));
  pool.wait_idle();
  ASSERT_EQ(ran.size(), 18u);
  int fast_on_gpu = 0, slow_on_gpu = 0;
  for (const auto& [t, w] : ran) {
    if (t == "cpu-only") {
      EXPECT_EQ(w, "cpu0");
    }
    if (w == "sim0") (t == "fast" ? fast_on_gpu : slow_on_gpu) += 1;
  }
  EXPECT_GE(fast_on_gpu, 5);  // the GPU takes the high-speedup tasks
  EXPECT_LE(slow_on_gpu, 1);
}

TEST(Pats, ACpuLeavesTasksThatAreFasterOnAFreeGpuToIt) {
  sched::PatsQueue q;
  q.push(task("recon", 15));
  q.push(task("even", 1.0f));
  q.set_free(sim0, true);  // sim0 is looking for work
  EXPECT_EQ(name_of(q.pop(cpu0)), "even");  // no faster anywhere: the CPU takes it
  EXPECT_EQ(q.pop(cpu0), nullptr);          // recon is left to sim0
  q.push(task("cpu-only", 30, sched::cpu_only));
  q.push(task("real-gpu-only-kind", 30, sched::cpu_only | sched::bit(WorkerKind::gpu)));
  EXPECT_EQ(name_of(q.pop(cpu0)), "cpu-only");
  EXPECT_EQ(name_of(q.pop(cpu0)), "real-gpu-only-kind");  // no free worker of a kind that can run it
  q.set_free(sim0, false);  // sim0 got busy: the CPU may take recon
  EXPECT_EQ(name_of(q.pop(cpu0)), "recon");

  sched::PatsQueue off(sched::PatsOptions{.free_gpu_first = false});
  off.push(task("recon", 15));
  off.set_free(sim0, true);
  EXPECT_EQ(name_of(off.pop(cpu0)), "recon");
}

// A GPU-like worker that spawns a task only a CPU can run, while every CPU
// sleeps, must see a CPU woken (it expected to take the task itself); and a
// CPU that leaves a task to a sleeping GPU must wake it.
TEST(PoolWithGpus, TasksForTheOtherKindWakeIt) {
  class Hop final : public sched::Task {
  public:
    Hop(int left, std::atomic<int>& ran, bool on_gpu) : left_(left), ran_(ran) {
      runs_on = on_gpu ? sched::bit(WorkerKind::sim_gpu) : sched::cpu_only | sched::bit(WorkerKind::sim_gpu);
      est.speedup = on_gpu ? 10.0f : 5.0f;
    }
    void run(sched::TaskEnv& env) override {
      ++ran_;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      if (left_ > 0) env.spawn(std::make_unique<Hop>(left_ - 1, ran_, left_ % 2 == 0));
    }

  private:
    int left_;
    std::atomic<int>& ran_;
  };
  class CpuOnly final : public sched::Task {
  public:
    explicit CpuOnly(std::atomic<int>& ran) : ran_(ran) { runs_on = sched::cpu_only; }
    void run(sched::TaskEnv&) override { ++ran_; }

  private:
    std::atomic<int>& ran_;
  };
  class SpawnsCpuWork final : public sched::Task {
  public:
    SpawnsCpuWork(int left, std::atomic<int>& ran) : left_(left), ran_(ran) { runs_on = sched::bit(WorkerKind::sim_gpu); }
    void run(sched::TaskEnv& env) override {
      ++ran_;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      env.spawn(std::make_unique<CpuOnly>(ran_));
      if (left_ > 0) env.spawn(std::make_unique<SpawnsCpuWork>(left_ - 1, ran_));
    }

  private:
    int left_;
    std::atomic<int>& ran_;
  };
  for (const bool cpu_only_children : {false, true}) {
    std::vector<sched::WorkerInfo> workers = {cpu0, cpu1, {2, WorkerKind::sim_gpu, 0, "sim0"}};
    exec::WorkerPool pool(std::make_unique<sched::PatsQueue>(), workers);
    std::atomic<int> ran{0};
    if (cpu_only_children) pool.submit(std::make_unique<SpawnsCpuWork>(50, ran));
    else pool.submit(std::make_unique<Hop>(100, ran, false));
    auto done = std::async(std::launch::async, [&] { pool.wait_idle(); });
    if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      pool.stop();
      FAIL() << "stalled after " << ran.load() << " tasks (cpu_only_children=" << cpu_only_children << ")";
    }
    EXPECT_EQ(ran.load(), cpu_only_children ? 102 : 101);
  }
}

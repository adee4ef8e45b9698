#pragma once
// pats: Performance-Aware Task Scheduling (Teodoro et al., Region Templates).
// Ready tasks are kept sorted by estimated GPU speedup; an idle CPU takes the
// task with the smallest speedup, an idle GPU the one with the largest, and a
// task goes only to worker kinds it has a variant for.
//
// Data locality (DL): a GPU looking for work first considers the tasks whose
// inputs are already in its memory; with Sq the largest speedup in the queue
// and Sd the largest among those, it takes the local task when
// Sd >= Sq * (1 - TransferImpact).
#include <cstdint>
#include <map>
#include <unordered_map>

#include "sched/ready_queue.hpp"

namespace flowd::sched {

struct PatsOptions {
  bool locality = true;
  double transfer_impact = 0.2;  // the Region Templates authors' default until measured
  // A CPU leaves a task with speedup > 1 to a GPU-like worker that is free
  // to take it (the pool wakes that worker), instead of racing it for the
  // task; without this a CPU that just spawned a task usually wins, and with
  // few tasks ready the GPU idles while the CPU runs its best tasks.
  bool free_gpu_first = true;
};

class PatsQueue final : public ReadyQueue {
public:
  using Options = PatsOptions;
  explicit PatsQueue(Options opts = {}) : opts_(opts) {}

  std::string_view name() const noexcept override { return "pats"; }
  void push(TaskPtr task) override;
  TaskPtr pop(const WorkerInfo& worker) override;
  bool has_work_for(const WorkerInfo& worker) const noexcept override;
  std::size_t size() const noexcept override { return size_; }
  void set_free(const WorkerInfo& worker, bool free) noexcept override;

  // The share of transfer time in a GPU task's total time, as measured.
  void set_transfer_impact(double ti) noexcept { opts_.transfer_impact = ti; }
  double transfer_impact() const noexcept { return opts_.transfer_impact; }

private:
  struct Key {
    float speedup;
    std::uint64_t seq;  // arrival order breaks ties: the oldest first
    bool operator<(const Key& o) const noexcept { return speedup != o.speedup ? speedup < o.speedup : seq < o.seq; }
  };
  static constexpr int mask_count = 8;
  using Bucket = std::map<Key, TaskPtr>;

  TaskPtr take(KindMask mask, Bucket::iterator it);
  // The best entry of one bucket for a worker kind: smallest key for a CPU,
  // oldest among the largest speedup for a GPU.
  static Bucket::iterator best(Bucket& b, bool gpu);

  Options opts_;
  Bucket buckets_[mask_count];  // one per capability mask
  // Tasks whose inputs are in a GPU-like worker's memory, by that worker.
  std::unordered_map<int, std::map<Key, KindMask>> local_;
  std::uint64_t next_seq_ = 0;
  std::size_t size_ = 0;
  int free_[3] = {0, 0, 0};  // free workers per WorkerKind
};

}  // namespace flowd::sched

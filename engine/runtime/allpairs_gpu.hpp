#pragma once
// An all-pairs stage's lanes on GPUs (issue 15; Rocket's device cache).
// Each GPU-like worker of this process runs a lane whose items sit in a
// cache in its own memory (sched::NearLevel), filled from the host cache.
// On a real GPU the lane's pairs run the operator's GPU variant
// (compare_gpu), the loads the lane makes itself run its GPU preprocess
// where it has one, and the host cache keeps its items in pinned memory so
// that copies up need no staging. On a simulated GPU the lane runs the CPU
// compare, and each copy up takes the time it would take.
#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "runtime/allpairs_pairs.hpp"
#include "runtime/workers.hpp"
#include "sched/allpairs_run.hpp"

namespace flowd::runtime::detail {

class AllPairsGpuLanes {
public:
  // `device_slots`: each GPU's cache (0: `host_slots`, the host cache's).
  AllPairsGpuLanes(const workflow::StageNode& node, const WorkerSet& workers, std::size_t device_slots,
                   std::size_t host_slots);
  AllPairsGpuLanes(const AllPairsGpuLanes&) = delete;
  AllPairsGpuLanes& operator=(const AllPairsGpuLanes&) = delete;

  // The workers that run lanes: CPUs, simulated GPUs, and real GPUs when
  // the operator has a GPU variant.
  sched::KindMask kinds() const noexcept { return kinds_; }
  // The device level for run_allpairs; null when no lane can run on a GPU.
  const sched::NearLevel<Item>* near() const noexcept { return near_.caches.empty() ? nullptr : &near_; }
  // How many of the process's GPUs run the operator's GPU variant.
  int gpu_lanes() const noexcept { return gpu_lanes_; }

  // ℓ(raw) for a lane on `w` (on_lane) or a loader thread: on a real GPU's
  // own lane, the GPU preprocess where the operator has one (downloaded for
  // the host cache); pinned when a real GPU reads the host cache.
  Item load(const sched::WorkerInfo& w, const Item& raw, bool on_lane, Logger& log,
            const std::atomic<bool>& stop) const;
  // f(a, b) on `w` (compare_pair's contract): the GPU variant on a real GPU.
  void compare(const sched::WorkerInfo& w, Logger& log, const std::atomic<bool>& stop, std::size_t nscores,
               LaneRows& out, std::int64_t i, std::int64_t j, const Item& a, const Item& b,
               const std::string& row_key, const std::string& col_key) const;
  // How a worker's leaves show in the trace: "gpu", "sim" or "cpu".
  static const char* kind_name(const sched::WorkerInfo& w) noexcept;

private:
  bool runs_variant(const sched::WorkerInfo& w) const noexcept;
  memory::Device& device_of(const sched::WorkerInfo& w) const;

  const workflow::StageNode& node_;
  const WorkerSet& workers_;
  const GpuAllPairsVariant* variant_;
  sched::KindMask kinds_;
  int gpu_lanes_ = 0;
  memory::Device* pin_with_ = nullptr;  // a real GPU that runs a lane
  std::map<int, std::unique_ptr<sched::ItemCache<Item>>> caches_;  // by worker id
  sched::NearLevel<Item> near_;
};

}  // namespace flowd::runtime::detail

#pragma once
// The workers a run gets: CPU workers, then one manager thread per GPU (real
// or simulated), each GPU-like worker with its device.
#include <memory>
#include <string>
#include <vector>

#include "memory/device.hpp"
#include "runtime/run_types.hpp"
#include "sched/task.hpp"

namespace flowd::runtime {

struct WorkerSet {
  std::vector<sched::WorkerInfo> workers;               // ids are indices
  std::vector<std::unique_ptr<memory::Device>> devices;  // by worker id; null for CPU workers
  std::vector<std::vector<int>> pin;                     // CPUs each worker's thread is pinned to (GPUs: near ones)
  std::string gpu_note;  // e.g. "no GPU: the CUDA runtime found no usable GPU: ..." or "2 simulated GPUs"
  bool simulated = false;
};

// Throws flowd::Error when more real GPUs are asked for than exist.
WorkerSet make_workers(int cpu_workers, const GpuSpec& gpus, double sim_bandwidth);

}  // namespace flowd::runtime

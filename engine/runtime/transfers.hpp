#pragma once
// Moving items' arrays between host memory and GPU-like workers' memories,
// once per memory: the runtime asks for an item as a worker must see it and
// gets it there, the copy recorded in the item's residency, the trace and the
// performance model.
#include <atomic>
#include <memory>
#include <vector>

#include "memory/device.hpp"
#include "runtime/carried.hpp"
#include "sched/perf_model.hpp"
#include "trace/recorder.hpp"

namespace flowd::runtime {

// A copy engine's trace track: one per GPU-like worker.
constexpr int copy_track(int worker) noexcept { return 1000 + worker; }

class Transfers {
public:
  // `devices` is indexed by worker id: null for CPU workers.
  Transfers(const std::vector<std::unique_ptr<memory::Device>>& devices, trace::Recorder& trace, sched::PerfModel& model)
      : devices_(devices), trace_(trace), model_(model) {}

  // The item as worker `to` (memory::host for CPU workers) must see it. When
  // that needs a copy held outside the carried item, it is built in `scratch`;
  // the result is valid while both live. `seconds` (if given) receives the
  // time spent moving data. Throws flowd::Error if a device copy fails.
  const Item& to(const Carried& c, int to_worker, Item& scratch, double* seconds = nullptr);

  std::uint64_t bytes_to_devices() const noexcept { return up_.load(); }
  std::uint64_t bytes_to_host() const noexcept { return down_.load(); }

private:
  Array host_copy_locked(const Carried& c, double& seconds);
  void record(int device_worker, bool upload, const Carried& c, std::size_t bytes, std::int64_t t0, std::int64_t t1);

  const std::vector<std::unique_ptr<memory::Device>>& devices_;
  trace::Recorder& trace_;
  sched::PerfModel& model_;
  std::atomic<std::uint64_t> up_{0}, down_{0};
};

}  // namespace flowd::runtime

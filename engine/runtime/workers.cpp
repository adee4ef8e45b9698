#include "runtime/workers.hpp"

#include <thread>

#include "memory/cuda_devices.hpp"
#include "memory/sim_device.hpp"
#if FLOWD_HAVE_CUDA
#include "memory/cuda_device.hpp"
#endif

namespace flowd::runtime {

WorkerSet make_workers(int cpu_workers, const GpuSpec& gpus, double sim_bandwidth) {
  WorkerSet set;
  const int cpus = cpu_workers > 0 ? cpu_workers : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (int i = 0; i < cpus; ++i) {
    set.workers.push_back({i, sched::WorkerKind::cpu, -1, "cpu" + std::to_string(i)});
    set.devices.emplace_back();
    set.pin.emplace_back();
  }
  auto add = [&](sched::WorkerKind kind, int device, std::string name, std::unique_ptr<memory::Device> dev,
                 std::vector<int> near) {
    set.workers.push_back({static_cast<int>(set.workers.size()), kind, device, std::move(name)});
    set.devices.push_back(std::move(dev));
    set.pin.push_back(std::move(near));
  };

  switch (gpus.mode) {
    case GpuSpec::Mode::none: set.gpu_note = "no GPU workers (--gpu none)"; break;
    case GpuSpec::Mode::sim:
      for (int i = 0; i < gpus.count; ++i)
        add(sched::WorkerKind::sim_gpu, i, "sim" + std::to_string(i), std::make_unique<memory::SimDevice>(i, sim_bandwidth), {});
      set.simulated = true;
      set.gpu_note = std::to_string(gpus.count) + " simulated GPU" + (gpus.count == 1 ? "" : "s") +
                     " (CPU variants at the modelled speedup" + (gpus.scale != 1.0 ? " x " + Json(gpus.scale).dump() : "") +
                     ", transfers at " + Json(sim_bandwidth / 1e9).dump() + " GB/s)";
      break;
    case GpuSpec::Mode::all:
    case GpuSpec::Mode::count: {
      const auto found = memory::discover_gpus();
      const int want = gpus.mode == GpuSpec::Mode::all ? static_cast<int>(found.gpus.size()) : gpus.count;
      if (want > static_cast<int>(found.gpus.size()))
        throw Error("--gpu " + gpus.str() + ": " + std::to_string(found.gpus.size()) + " GPU" +
                    (found.gpus.size() == 1 ? "" : "s") + " available" +
                    (found.why_none.empty() ? "" : " (" + found.why_none + ")") + "; use --gpu sim:N to simulate");
      for (int i = 0; i < want; ++i) {
        const auto& g = found.gpus[static_cast<std::size_t>(i)];
#if FLOWD_HAVE_CUDA
        add(sched::WorkerKind::gpu, g.ordinal, "gpu" + std::to_string(g.ordinal),
            std::make_unique<memory::CudaDevice>(g.ordinal, g.name), g.near_cpus);
#else
        (void)g;
#endif
      }
      set.gpu_note = want > 0 ? std::to_string(want) + " GPU" + (want == 1 ? "" : "s")
                              : "no GPU workers: " + (found.why_none.empty() ? std::string("none found") : found.why_none);
      break;
    }
  }
  return set;
}

}  // namespace flowd::runtime

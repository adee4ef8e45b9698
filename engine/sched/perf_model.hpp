#pragma once
// The performance model: what each operator costs on each variant, learnt
// from runs (like StarPU's history-based models) and seeded from manifest
// hints. It yields the estimates the ready queues use: GPU speedup (pats),
// durations and transfer times (heft), transfer impact (the DL rule).
//
// Durations are kept per (operator, variant, input-size class), the class
// being floor(log2(input bytes)), as running mean and variance. Transfer
// bandwidth is kept per device and direction. The model is thread-safe.
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "flowd/item.hpp"

namespace flowd::sched {

// cpu and gpu are the operator's variants on their devices; sim is the CPU
// variant run on a simulated GPU (kept apart so it never poses as a GPU).
enum class Variant : std::uint8_t { cpu, gpu, sim };
enum class Direction : std::uint8_t { to_device, to_host };

struct RunningStats {
  std::uint64_t n = 0;
  double mean = 0;
  double m2 = 0;  // sum of squared deviations (Welford)
  void add(double x) noexcept;
  double variance() const noexcept { return n > 1 ? m2 / static_cast<double>(n - 1) : 0.0; }
};

struct OpSummary {
  std::string op;
  std::optional<double> hint;          // the manifest's speedup hint
  std::optional<double> cpu_seconds;   // mean over size classes, weighted by count
  std::optional<double> gpu_seconds;
  std::optional<double> sim_seconds;
  std::uint64_t cpu_runs = 0, gpu_runs = 0, sim_runs = 0;
  double speedup = 1.0;                // as the queues see it
  bool measured = false;               // speedup from measured CPU and GPU runs
};

class PerfModel {
public:
  static int size_class(std::uint64_t bytes) noexcept;

  void hint(const std::string& op, double speedup);
  void record(const std::string& op, Variant v, int size_class, double seconds);
  void record_transfer(int device, Direction d, std::uint64_t bytes, double seconds);

  // Mean duration of `op` on `v` for this size class; without samples in
  // it, the nearest class that has samples, scaled linearly by size.
  std::optional<double> seconds(const std::string& op, Variant v, int size_class) const;
  // GPU/CPU speedup: measured when both variants have samples, else the
  // hint, else 1.
  double speedup(const std::string& op, int size_class) const;
  bool has_gpu_estimate(const std::string& op) const;
  // Mean bytes per second, or nullopt without samples.
  std::optional<double> bandwidth(int device, Direction d) const;
  // Share of transfer time in the time of GPU-like tasks, measured; the
  // Region Templates default 0.2 without samples.
  double transfer_impact() const;
  void record_gpu_task(double transfer_seconds, double compute_seconds);

  std::vector<OpSummary> summary() const;

  Json to_json() const;
  static PerfModel from_json(const Json& j);
  // Loads `file` if it exists; throws flowd::Error naming it if unreadable.
  static PerfModel load(const std::filesystem::path& file);
  // Writes atomically; throws flowd::Error naming the file.
  void save(const std::filesystem::path& file) const;

  PerfModel() = default;
  PerfModel(const PerfModel& o);
  PerfModel& operator=(const PerfModel& o);

private:
  struct OpModel {
    std::optional<double> hint;
    std::map<std::pair<Variant, int>, RunningStats> runs;  // (variant, size class)
  };
  std::optional<double> seconds_locked(const std::string& op, Variant v, int size_class) const;

  mutable std::mutex m_;
  std::map<std::string, OpModel, std::less<>> ops_;
  std::map<std::pair<int, Direction>, RunningStats> bandwidth_;  // bytes/s per transfer
  RunningStats gpu_transfer_, gpu_compute_;                      // seconds per GPU-like task
};

// The default file: FLOWD_PERF_MODEL, else <user cache>/perf-model.json.
std::optional<std::filesystem::path> default_perf_model_path();

}  // namespace flowd::sched

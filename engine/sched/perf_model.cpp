#include "sched/perf_model.hpp"

#include <cmath>
#include <cstdlib>

#include "util/fs.hpp"

namespace flowd::sched {

namespace {
const char* name_of(Variant v) { return v == Variant::cpu ? "cpu" : v == Variant::gpu ? "gpu" : "sim"; }
Variant variant_from(const std::string& s) {
  if (s == "cpu") return Variant::cpu;
  if (s == "gpu") return Variant::gpu;
  if (s == "sim") return Variant::sim;
  throw Error("performance model: unknown variant '" + s + "'");
}
const char* name_of(Direction d) { return d == Direction::to_device ? "to_device" : "to_host"; }
Json stats_json(const RunningStats& s) { return {{"n", s.n}, {"mean", s.mean}, {"m2", s.m2}}; }
RunningStats stats_from(const Json& j) {
  return {j.at("n").get<std::uint64_t>(), j.at("mean").get<double>(), j.at("m2").get<double>()};
}
}  // namespace

void RunningStats::add(double x) noexcept {
  ++n;
  const double d = x - mean;
  mean += d / static_cast<double>(n);
  m2 += d * (x - mean);
}

PerfModel::PerfModel(const PerfModel& o) {
  std::lock_guard lk(o.m_);
  ops_ = o.ops_;
  bandwidth_ = o.bandwidth_;
  gpu_transfer_ = o.gpu_transfer_;
  gpu_compute_ = o.gpu_compute_;
}

PerfModel& PerfModel::operator=(const PerfModel& o) {
  if (this == &o) return *this;
  PerfModel copy(o);
  std::lock_guard lk(m_);
  ops_ = std::move(copy.ops_);
  bandwidth_ = std::move(copy.bandwidth_);
  gpu_transfer_ = copy.gpu_transfer_;
  gpu_compute_ = copy.gpu_compute_;
  return *this;
}

int PerfModel::size_class(std::uint64_t bytes) noexcept {
  int c = 0;
  while (bytes > 1) bytes >>= 1, ++c;
  return c;
}

void PerfModel::hint(const std::string& op, double speedup) {
  if (!(speedup > 0) || !std::isfinite(speedup)) return;
  std::lock_guard lk(m_);
  ops_[op].hint = speedup;
}

void PerfModel::record(const std::string& op, Variant v, int size_class, double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  std::lock_guard lk(m_);
  ops_[op].runs[{v, size_class}].add(seconds);
}

void PerfModel::record_transfer(int device, Direction d, std::uint64_t bytes, double seconds) {
  if (bytes == 0 || !(seconds > 0)) return;
  std::lock_guard lk(m_);
  bandwidth_[{device, d}].add(static_cast<double>(bytes) / seconds);
}

void PerfModel::record_gpu_task(double transfer_seconds, double compute_seconds) {
  std::lock_guard lk(m_);
  gpu_transfer_.add(transfer_seconds);
  gpu_compute_.add(compute_seconds);
}

std::optional<double> PerfModel::seconds_locked(const std::string& op, Variant v, int size_class) const {
  const auto it = ops_.find(op);
  if (it == ops_.end()) return std::nullopt;
  const RunningStats* nearest = nullptr;
  int nearest_class = 0;
  for (const auto& [key, stats] : it->second.runs) {
    if (key.first != v || stats.n == 0) continue;
    if (key.second == size_class) return stats.mean;
    if (!nearest || std::abs(key.second - size_class) < std::abs(nearest_class - size_class))
      nearest = &stats, nearest_class = key.second;
  }
  if (!nearest) return std::nullopt;
  return nearest->mean * std::ldexp(1.0, size_class - nearest_class);  // linear in size
}

std::optional<double> PerfModel::seconds(const std::string& op, Variant v, int size_class) const {
  std::lock_guard lk(m_);
  return seconds_locked(op, v, size_class);
}

double PerfModel::speedup(const std::string& op, int size_class) const {
  std::lock_guard lk(m_);
  const auto cpu = seconds_locked(op, Variant::cpu, size_class);
  const auto gpu = seconds_locked(op, Variant::gpu, size_class);
  if (cpu && gpu && *gpu > 0) return *cpu / *gpu;
  const auto it = ops_.find(op);
  if (it != ops_.end() && it->second.hint) return *it->second.hint;
  return 1.0;
}

bool PerfModel::has_gpu_estimate(const std::string& op) const {
  std::lock_guard lk(m_);
  const auto it = ops_.find(op);
  if (it == ops_.end()) return false;
  if (it->second.hint) return true;
  for (const auto& [key, stats] : it->second.runs)
    if (key.first == Variant::gpu && stats.n > 0) return true;
  return false;
}

std::optional<double> PerfModel::bandwidth(int device, Direction d) const {
  std::lock_guard lk(m_);
  const auto it = bandwidth_.find({device, d});
  if (it == bandwidth_.end() || it->second.n == 0) return std::nullopt;
  return it->second.mean;
}

double PerfModel::transfer_impact() const {
  std::lock_guard lk(m_);
  if (gpu_transfer_.n == 0) return 0.2;
  const double total = gpu_transfer_.mean + gpu_compute_.mean;
  return total > 0 ? gpu_transfer_.mean / total : 0.2;
}

std::vector<OpSummary> PerfModel::summary() const {
  std::vector<OpSummary> out;
  std::lock_guard lk(m_);
  for (const auto& [op, m] : ops_) {
    OpSummary s;
    s.op = op;
    s.hint = m.hint;
    double sums[3] = {0, 0, 0};
    std::uint64_t counts[3] = {0, 0, 0};
    for (const auto& [key, stats] : m.runs) {
      const int v = static_cast<int>(key.first);
      sums[v] += stats.mean * static_cast<double>(stats.n);
      counts[v] += stats.n;
    }
    auto mean = [&](int v) { return counts[v] ? std::optional<double>(sums[v] / static_cast<double>(counts[v])) : std::nullopt; };
    s.cpu_seconds = mean(0), s.gpu_seconds = mean(1), s.sim_seconds = mean(2);
    s.cpu_runs = counts[0], s.gpu_runs = counts[1], s.sim_runs = counts[2];
    s.measured = s.cpu_seconds && s.gpu_seconds && *s.gpu_seconds > 0;
    s.speedup = s.measured ? *s.cpu_seconds / *s.gpu_seconds : m.hint.value_or(1.0);
    out.push_back(std::move(s));
  }
  return out;
}

Json PerfModel::to_json() const {
  std::lock_guard lk(m_);
  Json j = {{"format", 1}, {"operators", Json::object()}, {"bandwidth", Json::array()}};
  for (const auto& [op, m] : ops_) {
    Json o = {{"runs", Json::array()}};
    if (m.hint) o["hint"] = *m.hint;
    for (const auto& [key, stats] : m.runs)
      o["runs"].push_back({{"variant", name_of(key.first)}, {"size_class", key.second}, {"stats", stats_json(stats)}});
    j["operators"][op] = std::move(o);
  }
  for (const auto& [key, stats] : bandwidth_)
    j["bandwidth"].push_back({{"device", key.first}, {"direction", name_of(key.second)}, {"stats", stats_json(stats)}});
  j["gpu_tasks"] = {{"transfer", stats_json(gpu_transfer_)}, {"compute", stats_json(gpu_compute_)}};
  return j;
}

PerfModel PerfModel::from_json(const Json& j) {
  if (j.value("format", 0) != 1) throw Error("unsupported performance model format " + j.value("format", Json()).dump());
  PerfModel p;
  for (const auto& [op, o] : j.at("operators").items()) {
    OpModel m;
    if (o.contains("hint")) m.hint = o["hint"].get<double>();
    for (const auto& r : o.at("runs"))
      m.runs[{variant_from(r.at("variant").get<std::string>()), r.at("size_class").get<int>()}] = stats_from(r.at("stats"));
    p.ops_[op] = std::move(m);
  }
  for (const auto& b : j.at("bandwidth")) {
    const auto dir = b.at("direction").get<std::string>() == "to_device" ? Direction::to_device : Direction::to_host;
    p.bandwidth_[{b.at("device").get<int>(), dir}] = stats_from(b.at("stats"));
  }
  if (j.contains("gpu_tasks")) {
    p.gpu_transfer_ = stats_from(j["gpu_tasks"].at("transfer"));
    p.gpu_compute_ = stats_from(j["gpu_tasks"].at("compute"));
  }
  return p;
}

PerfModel PerfModel::load(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return {};
  try {
    return from_json(Json::parse(read_file(file)));
  } catch (const std::exception& e) {
    throw Error("cannot read the performance model " + file.string() + ": " + e.what() +
                " (delete it, or run `flowd calibrate` to rebuild it)");
  }
}

void PerfModel::save(const std::filesystem::path& file) const {
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  write_file_atomic(file, to_json().dump(1));
}

std::optional<std::filesystem::path> default_perf_model_path() {
  if (const char* p = std::getenv("FLOWD_PERF_MODEL"); p && *p) return std::filesystem::path(p);
  if (auto dir = user_cache_dir()) return *dir / "perf-model.json";
  return std::nullopt;
}

}  // namespace flowd::sched

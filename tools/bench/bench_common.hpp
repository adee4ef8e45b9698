#pragma once
// Small helpers shared by the benchmark drivers: timing and medians.
#include <algorithm>

#include <sys/resource.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define FLOWD_HAVE_CALLGRIND 1
#endif

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace flowd::bench {

using Clock = std::chrono::steady_clock;

// kB of a /proc/self/status field (VmRSS, VmHWM); -1 if absent.
inline long status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::strtol(line.c_str() + n + 1, nullptr, 10);
  return -1;
}

// Makes VmHWM the current RSS (Linux >= 4.0); false where not allowed.
inline bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  return static_cast<bool>(out.flush());
}

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU seconds used by the whole process (every thread, user + system). On a
// shared virtual machine it excludes time the host gave to other tenants.
inline double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Minor page faults of the whole process so far (fresh pages the kernel had
// to zero: the cost of returning big buffers to the OS and asking again).
inline long minor_faults() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Wall and CPU time, and page faults, of one measured section.
struct Timing {
  double wall = 0;
  double cpu = 0;
  long faults = 0;
};

// Under `valgrind --tool=callgrind --collect-atstart=no`, instructions are
// counted only inside measure(): deterministic, whatever else the machine does.
template <class F>
Timing measure(F&& f) {
  const double c0 = process_cpu_seconds();
  const long f0 = minor_faults();
  const auto t0 = Clock::now();
#ifdef FLOWD_HAVE_CALLGRIND
  CALLGRIND_START_INSTRUMENTATION;
#endif
  f();
#ifdef FLOWD_HAVE_CALLGRIND
  CALLGRIND_STOP_INSTRUMENTATION;
#endif
  return {seconds_since(t0), process_cpu_seconds() - c0, minor_faults() - f0};
}

// How much of a second core this machine gives right now: the time of a fixed
// amount of arithmetic on one thread divided by the time of the same amount on
// each of two threads at once (1.0: two real cores; 0.5: one core's worth).
// Shared cloud machines vary; every parallel result should be read with it.
inline double parallel_efficiency() {
  auto work = [] {
    volatile double x = 1.0;
    for (long i = 0; i < 100'000'000; ++i)
      x = x * 1.0000001 + 1e-9;
  };
  auto t0 = Clock::now();
  work();
  const double one = seconds_since(t0);
  t0 = Clock::now();
  std::thread a(work), b(work);
  a.join();
  b.join();
  return one / seconds_since(t0);
}

// A folder of this process's own under the system's temporary folder,
// removed with everything in it at the end: benchmarks run at once by
// several people on one machine never share (or delete) each other's files.
class ScratchDir {
public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

private:
  std::filesystem::path path_;
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace flowd::bench

// flowd-bench-prnu-speed: the PRNU core (plugins/prnu/core) on one thread at
// the Dresden image size (3648 x 2736), on a generated RGB photograph.
//
//   flowd-bench-prnu-speed [--method nfi|wavelet|ncc] [--repeat R]
//   flowd-bench-prnu-speed --gpu [--repeat R]
//
// nfi, wavelet: the median of R (default 3) runs of residual_nfi /
// residual_wavelet (FFT plans made on the first run, which the median
// drops), and the peak resident memory the method added: VmHWM after the
// runs minus VmRSS before them, with the peak reset (/proc/self/clear_refs)
// once the input exists. ncc: the median of R (default 20) NCCs of two
// 3648 x 2736 float patterns against the median of R std::copy runs of the
// same two arrays, as GB/s of input read and their ratio (NCC reads what
// the copy reads; the copy also writes as much). Without --method the
// program runs itself once per method, so that each peak is measured in a
// fresh process. Lines "<method>_median_ms <value>" and "<method>_peak_mib
// <value>" are for scripts. Exit 1 on a bad argument.
//
// --gpu (built with FLOWD_HAVE_CUDA=1 and flowd_prnu_gpu; exit 2 without a
// GPU): the CUDA twin on the first device: residual_nfi per image on a
// device-resident image (median of R runs, default 10, after one that makes
// the cuFFT plans; events on one stream), the same through the host API
// (upload and download included), its largest difference from the CPU
// residual relative to the CPU's largest magnitude, and NCC of two
// 3648 x 2736 device patterns against a device-to-device cudaMemcpyAsync of
// the same two arrays (GB/s of input read; the copy also writes as much).
// Lines "gpu_<what> <value>" are for scripts.
//
// Built by tools/bench/CMakeLists.txt (flowd-bench-prnu-speed).

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "prnu.hpp"

#if defined(FLOWD_HAVE_CUDA) && FLOWD_HAVE_CUDA
#include <cuda_runtime.h>

#include "prnu_gpu.hpp"
#endif

namespace {

using flowd::bench::Clock;
using flowd::bench::median;
using flowd::bench::reset_peak;
using flowd::bench::status_kib;
using flowd::bench::seconds_since;
namespace prnu = flowd::prnu;

constexpr int kWidth = 3648;
constexpr int kHeight = 2736;

// A smooth scene with edges, times (1 + K), plus read noise, 8-bit values.
prnu::Image photograph() {
  std::mt19937 rng(2024);
  std::normal_distribution<float> k(0.0f, 0.01f), noise(0.0f, 2.0f);
  prnu::Image im(kWidth, kHeight, 3);
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      const float scene = 120.0f +
                          60.0f * std::sin(0.004f * static_cast<float>(x)) * std::cos(0.003f * static_cast<float>(y)) +
                          (((x / 400) + (y / 300)) % 2 ? 30.0f : 0.0f);
      const float gain = 1.0f + k(rng);
      for (int c = 0; c < 3; ++c) {
        const float v = scene * (0.8f + 0.1f * static_cast<float>(c)) * gain + noise(rng);
        im.at(x, y, c) = std::round(std::clamp(v, 0.0f, 255.0f));
      }
    }
  return im;
}

int run_residual(const std::string& method, int repeat) {
  const prnu::Image im = photograph();
  prnu::FftPlans plans;
  const bool peak_ok = reset_peak();
  const long rss0 = status_kib("VmRSS");
  std::vector<double> ms;
  double checksum = 0.0;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = Clock::now();
    const prnu::Image w = method == "nfi" ? prnu::residual_nfi(im, plans) : prnu::residual_wavelet(im, plans);
    ms.push_back(1e3 * seconds_since(t0));
    checksum += w.data[w.data.size() / 2];
  }
  const long hwm = status_kib("VmHWM");
  std::printf("%s: %dx%d RGB, %d runs:", method.c_str(), kWidth, kHeight, repeat);
  for (const double t : ms)
    std::printf(" %.0f", t);
  std::printf(" ms (checksum %.6g)\n", checksum);
  std::printf("%s_median_ms %.1f\n", method.c_str(), median(ms));
  if (peak_ok && rss0 >= 0 && hwm >= 0)
    std::printf("%s_peak_mib %.1f\n", method.c_str(), static_cast<double>(hwm - rss0) / 1024.0);
  else
    std::printf("%s_peak_mib unknown (no /proc/self/clear_refs)\n", method.c_str());
  return 0;
}

int run_ncc(int repeat) {
  const std::size_t n = static_cast<std::size_t>(kWidth) * kHeight;
  std::vector<float> a(n), b(n), ca(n), cb(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = u(rng);
    b[i] = 0.1f * a[i] + u(rng);
  }
  std::vector<double> t_ncc, t_copy;
  double sink = 0.0;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = Clock::now();
    sink += prnu::ncc(a, b);
    t_ncc.push_back(seconds_since(t0));
    t0 = Clock::now();
    std::copy(a.begin(), a.end(), ca.begin());
    std::copy(b.begin(), b.end(), cb.begin());
    t_copy.push_back(seconds_since(t0));
    sink += ca[static_cast<std::size_t>(r)] + cb[n - 1 - static_cast<std::size_t>(r)];
  }
  const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);
  const double m_ncc = median(t_ncc);
  const double m_copy = median(t_copy);
  std::printf("ncc: two %dx%d float patterns (%.1f MiB read), %d runs (sink %.6g)\n", kWidth, kHeight,
              bytes / (1 << 20), repeat, sink);
  std::printf("ncc_median_ms %.2f\nncc_read_gbps %.2f\n", 1e3 * m_ncc, bytes / m_ncc / 1e9);
  std::printf("copy_median_ms %.2f\ncopy_read_gbps %.2f\ncopy_read_write_gbps %.2f\n", 1e3 * m_copy,
              bytes / m_copy / 1e9, 2.0 * bytes / m_copy / 1e9);
  std::printf("ncc_over_copy_time %.2f\n", m_ncc / m_copy);
  return 0;
}

#if defined(FLOWD_HAVE_CUDA) && FLOWD_HAVE_CUDA
bool cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "gpu: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

// Milliseconds of fn() on `stream`, between two events.
template <class Fn>
double event_ms(cudaStream_t stream, Fn&& fn) {
  cudaEvent_t start = nullptr, stop = nullptr;
  cuda_ok(cudaEventCreate(&start), "cudaEventCreate");
  cuda_ok(cudaEventCreate(&stop), "cudaEventCreate");
  cuda_ok(cudaEventRecord(start, stream), "cudaEventRecord");
  fn();
  cuda_ok(cudaEventRecord(stop, stream), "cudaEventRecord");
  cuda_ok(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0.0f;
  cuda_ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

int run_gpu(int repeat) {
  std::string why;
  if (prnu::gpu::device_count(&why) == 0) {
    std::fprintf(stderr, "gpu: no CUDA GPU: %s\n", why.c_str());
    return 2;
  }
  cudaDeviceProp prop{};
  cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("gpu: %s\n", prop.name);
  const prnu::Image im = photograph();
  const std::size_t n = im.pixels();
  prnu::gpu::GpuPlans plans;
  cudaStream_t stream = nullptr;
  if (!cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate")) return 1;
  prnu::gpu::DeviceBuffer rgb(im.data.size()), out(n);
  rgb.upload(im.data.data(), im.data.size(), stream);
  std::vector<double> device_ms, host_ms;
  for (int r = 0; r <= repeat; ++r) {
    const double t =
        event_ms(stream, [&] { prnu::gpu::residual_nfi(rgb.data(), kWidth, kHeight, 3, out.data(), plans, stream); });
    if (r > 0)  // the first makes the cuFFT plans
      device_ms.push_back(t);
  }
  prnu::Image got;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = Clock::now();
    got = prnu::gpu::residual_nfi(im, plans);
    host_ms.push_back(1e3 * seconds_since(t0));
  }
  prnu::FftPlans cpu;
  const prnu::Image want = prnu::residual_nfi(im, cpu);
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(got.data[i] - want.data[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want.data[i])));
  }
  std::printf(
      "gpu_residual_nfi_device_ms %.3f\ngpu_residual_nfi_host_api_ms %.2f\ngpu_residual_nfi_rel_max_diff %.3g\n",
      median(device_ms), median(host_ms), scale > 0.0 ? diff / scale : diff);

  // NCC against a device-to-device copy of the same two arrays.
  std::vector<float> a(n), b(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = u(rng);
    b[i] = 0.1f * a[i] + u(rng);
  }
  prnu::gpu::DeviceBuffer da(n), db(n), ca(n), cb(n);
  da.upload(a.data(), n, stream);
  db.upload(b.data(), n, stream);
  std::vector<double> t_ncc, t_copy;
  double sink = 0.0;
  const int runs = std::max(repeat, 20);
  for (int r = 0; r <= runs; ++r) {
    const double tn = event_ms(stream, [&] { sink += prnu::gpu::ncc(da.data(), db.data(), n, plans, stream); });
    const double tc = event_ms(stream, [&] {
      cuda_ok(cudaMemcpyAsync(ca.data(), da.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, stream), "copy");
      cuda_ok(cudaMemcpyAsync(cb.data(), db.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, stream), "copy");
    });
    if (r > 0) {
      t_ncc.push_back(tn);
      t_copy.push_back(tc);
    }
  }
  const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);
  const double m_ncc = median(t_ncc) / 1e3;
  const double m_copy = median(t_copy) / 1e3;
  std::printf("gpu ncc: cpu %.9f gpu %.9f (sink %.6g)\n", prnu::ncc(a, b), sink / (runs + 1), sink);
  std::printf("gpu_ncc_ms %.3f\ngpu_ncc_read_gbps %.1f\ngpu_copy_ms %.3f\ngpu_copy_read_gbps %.1f\n", 1e3 * m_ncc,
              bytes / m_ncc / 1e9, 1e3 * m_copy, bytes / m_copy / 1e9);
  std::printf("gpu_ncc_over_copy_time %.2f\n", m_ncc / m_copy);
  cudaStreamDestroy(stream);
  return 0;
}
#endif

int usage() {
  std::fprintf(stderr, "usage: flowd-bench-prnu-speed [--method nfi|wavelet|ncc] [--repeat R] | --gpu [--repeat R]\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string method;
  int repeat = 0;
  bool gpu = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--gpu")
      gpu = true;
    else if (arg == "--method" && i + 1 < argc)
      method = argv[++i];
    else if (arg == "--repeat" && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else
      return usage();
  }
  if (repeat < 0 || (!method.empty() && method != "nfi" && method != "wavelet" && method != "ncc")) return usage();
  if (gpu) {
    if (!method.empty()) return usage();
#if defined(FLOWD_HAVE_CUDA) && FLOWD_HAVE_CUDA
    return run_gpu(repeat > 0 ? repeat : 10);
#else
    std::fprintf(stderr, "flowd-bench-prnu-speed: built without CUDA (FLOWD_HAVE_CUDA)\n");
    return 2;
#endif
  }
  if (method.empty()) {
    // One fresh process per method: each peak starts from a clean heap.
    int status = 0;
    for (const char* m : {"nfi", "wavelet", "ncc"}) {
      std::fflush(stdout);
      const pid_t pid = ::fork();
      if (pid == 0) {
        const std::string r = std::to_string(repeat);
        if (repeat > 0)
          ::execl("/proc/self/exe", argv[0], "--method", m, "--repeat", r.c_str(), static_cast<char*>(nullptr));
        else
          ::execl("/proc/self/exe", argv[0], "--method", m, static_cast<char*>(nullptr));
        std::_Exit(127);
      }
      int child = 0;
      if (pid < 0 || ::waitpid(pid, &child, 0) != pid || !WIFEXITED(child) || WEXITSTATUS(child) != 0) status = 1;
    }
    return status;
  }
  if (method == "ncc") return run_ncc(repeat > 0 ? repeat : 20);
  return run_residual(method, repeat > 0 ? repeat : 3);
}

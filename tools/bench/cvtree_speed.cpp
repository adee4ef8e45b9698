// flowd-bench-cvtree-speed: the CVTree core (plugins/cvtree/core) on one
// thread, on proteomes generated along a random tree (tools/cvtree), the
// work CVTree does for a matrix: parse every proteome, build its vector,
// compare every pair.
//
//   flowd-bench-cvtree-speed [--proteomes N] [--proteins P] [--length L] [--seed S]
//                            [--k 5,6,7] [--repeat R] [--gpu]
//
// The proteomes are written to files first and read back for each k, as
// CVTree reads them. Per k: the median time to read and parse a proteome,
// to build its vector, and to compare a pair (all C(N,2) pairs, R rounds,
// default 1), the mean expected k-mers of a vector (its length written out
// in full), the seen ones (those stored with a value) and the MiB a vector
// takes, the whole job on one thread (parse + build every vector + every
// pair once), and the peak resident memory while the k's vectors are held
// (VmHWM, freed heap trimmed and the peak reset before the k). --gpu (a
// CUDA build, flowd_cvtree_gpu; exit 2 without a GPU): the vectors uploaded
// once, then the median time of the GPU cosine per pair (from the host:
// launches, the wait and the 8-byte result included) and its largest
// difference from the CPU's, for the automatic walk (k<k>_gpu_*) and for
// each walk (k<k>_gpu_by_middle_*, k<k>_gpu_by_kmer_*). Lines "k<k>_<what> <value>" are for scripts.
// Exit 1 on a bad argument.
//
// Built by tools/bench/CMakeLists.txt (flowd-bench-cvtree-speed).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <malloc.h>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "cvtree/generate.hpp"
#include "packed.hpp"
#include "proteome.hpp"
#include "vector.hpp"

#if defined(FLOWD_HAVE_CUDA) && FLOWD_HAVE_CUDA
#include "cvtree_gpu.hpp"
#endif

namespace {

using flowd::bench::Clock;
using flowd::bench::median;
using flowd::bench::reset_peak;
using flowd::bench::seconds_since;
using flowd::bench::status_kib;
namespace cvt = flowd::cvtree;

int usage() {
  std::fprintf(stderr,
               "usage: flowd-bench-cvtree-speed [--proteomes N] [--proteins P] [--length L] [--seed S] [--k 5,6,7] "
               "[--repeat R] [--gpu]\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  cvt::synth::Params p;
  std::vector<int> ks = {5, 6, 7};
  int repeat = 1;
  bool gpu = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--proteomes")
      p.proteomes = std::atoi(next().c_str());
    else if (arg == "--proteins")
      p.proteins = std::atoi(next().c_str());
    else if (arg == "--length")
      p.mean_length = std::atoi(next().c_str());
    else if (arg == "--seed")
      p.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (arg == "--repeat")
      repeat = std::atoi(next().c_str());
    else if (arg == "--gpu")
      gpu = true;
    else if (arg == "--k") {
      ks.clear();
      std::stringstream ss(next());
      for (std::string k; std::getline(ss, k, ',');)
        ks.push_back(std::atoi(k.c_str()));
    } else
      return usage();
  }
  if (repeat < 1 || ks.empty()) return usage();
  try {
    cvt::synth::validate(p);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flowd-bench-cvtree-speed: %s\n", e.what());
    return 1;
  }
#if !(defined(FLOWD_HAVE_CUDA) && FLOWD_HAVE_CUDA)
  if (gpu) {
    std::fprintf(stderr, "flowd-bench-cvtree-speed: built without CUDA (FLOWD_HAVE_CUDA)\n");
    return 2;
  }
#else
  std::string why;
  if (gpu && cvt::gpu::device_count(&why) == 0) {
    std::fprintf(stderr, "flowd-bench-cvtree-speed: no CUDA GPU: %s\n", why.c_str());
    return 2;
  }
#endif
  // The proteomes as files, read back for each k as CVTree reads them: the
  // peak then counts what the job holds (the vectors, one proteome at a
  // time), not the generator's text.
  const flowd::bench::ScratchDir dir("flowd-bench-cvtree");
  std::vector<std::filesystem::path> files;
  const auto t_gen = Clock::now();
  {
    const cvt::synth::DataSet data = cvt::synth::generate(p);
    for (const auto& pr : data.proteomes) {
      files.push_back(dir.path() / (pr.name + ".faa"));
      std::ofstream(files.back()) << pr.fasta;
    }
  }
  const std::size_t n = files.size();
  std::printf("proteomes %zu\ngenerate_s %.2f\n", n, seconds_since(t_gen));

  for (int k : ks) {
    ::malloc_trim(0);  // the last k's vectors, freed, are not counted in this k's peak
    const bool peak_ok = reset_peak();
    std::vector<cvt::CompositionVector> vs;
    std::vector<double> parse_s, build_s;
    double entries = 0, seen = 0, bytes = 0, residues = 0;
    for (const auto& f : files) {
      auto t0 = Clock::now();
      const cvt::Proteome pr = cvt::read_proteome(f);
      parse_s.push_back(seconds_since(t0));
      residues += static_cast<double>(pr.residues.size());
      t0 = Clock::now();
      vs.push_back(cvt::composition_vector(pr, k));
      build_s.push_back(seconds_since(t0));
      entries += static_cast<double>(cvt::expected_count(cvt::view_of(vs.back())));
      seen += static_cast<double>(vs.back().ends.size());
      bytes += static_cast<double>(cvt::packed_size(vs.back()));
    }
    if (k == ks.front())
      std::printf("residues_per_proteome %.0f\nparse_ms %.2f\n", residues / static_cast<double>(n),
                  1e3 * median(parse_s));
    double parse_total = 0;
    for (double x : parse_s)
      parse_total += x;
    std::vector<double> cmp_s, cosines;
    for (int r = 0; r < repeat; ++r)
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) {
          const auto t0 = Clock::now();
          const double c = cvt::cosine(cvt::view_of(vs[i]), cvt::view_of(vs[j]));
          cmp_s.push_back(seconds_since(t0));
          if (r == 0) cosines.push_back(c);
        }
    double build_total = 0, cmp_total = 0;
    for (double s : build_s)
      build_total += s;
    for (double s : cmp_s)
      cmp_total += s;
    cmp_total /= repeat;
    const long hwm = status_kib("VmHWM");
    const double per = static_cast<double>(n);
    std::printf("k%d_entries %.0f\nk%d_seen %.0f\nk%d_mib_per_vector %.1f\n", k, entries / per, k, seen / per, k,
                bytes / per / 1048576.0);
    std::printf("k%d_build_ms %.1f\nk%d_compare_ms %.3f\nk%d_total_s %.2f\n", k, 1e3 * median(build_s), k,
                1e3 * median(cmp_s), k, parse_total + build_total + cmp_total);
    if (peak_ok && hwm >= 0) std::printf("k%d_peak_mib %.0f\n", k, static_cast<double>(hwm) / 1024.0);
#if defined(FLOWD_HAVE_CUDA) && FLOWD_HAVE_CUDA
    if (gpu) {
      cvt::gpu::Scratch scratch(0);
      std::vector<std::unique_ptr<cvt::gpu::DeviceBytes>> dv;
      std::vector<cvt::gpu::DeviceVector> on_device;
      for (const auto& v : vs) {
        std::vector<double> host((cvt::packed_size(v) + 7) / 8);  // 8-byte aligned
        const std::span<std::byte> b(reinterpret_cast<std::byte*>(host.data()), cvt::packed_size(v));
        cvt::pack(v, b);
        dv.push_back(std::make_unique<cvt::gpu::DeviceBytes>(b.data(), b.size()));
        on_device.push_back(cvt::gpu::device_vector(dv.back()->data(), v.middles.size(), v.ends.size()));
      }
      using Walk = cvt::gpu::Walk;
      for (const auto& [walk, name] : {std::pair{Walk::automatic, ""}, std::pair{Walk::by_middle, "_by_middle"},
                                       std::pair{Walk::by_kmer, "_by_kmer"}}) {
        std::vector<double> gpu_s;
        double worst = 0;
        for (int r = 0; r < repeat + 1; ++r) {  // the first round warms the device up and is not timed
          std::size_t at = 0;
          for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = i + 1; j < n; ++j, ++at) {
              const auto t0 = Clock::now();
              const double c = cvt::gpu::cosine(on_device[i], on_device[j], scratch, nullptr, walk);
              if (r > 0) gpu_s.push_back(seconds_since(t0));
              worst = std::max(worst, std::abs(c - cosines[at]));
            }
        }
        std::printf("k%d_gpu%s_compare_ms %.4f\nk%d_gpu%s_max_diff %.2e\n", k, name, 1e3 * median(gpu_s), k, name,
                    worst);
      }
    }
#endif
  }
  return 0;
}

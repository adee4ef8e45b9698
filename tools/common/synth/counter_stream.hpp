#pragma once
// The generators' random numbers (tools/tem, tools/prnu): a counter-based
// stream, where draw n of the stream with key s is a hash of (s, n). Any
// draw (a lattice site, a camera, a frame's noise) is found without
// replaying the others, so adding frames, cameras or images leaves the
// existing ones as they were, on every platform (no std distribution is
// involved). Each generator derives its keys from its own purposes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace flowd::synth {

class CounterStream {
public:
  // splitmix64's finaliser: what keys are built with.
  static constexpr std::uint64_t mix(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  // The stream with an already mixed key.
  explicit CounterStream(std::uint64_t mixed_key) : key_(mixed_key) {}

  std::uint64_t bits() { return mix(key_ + 0x9e3779b97f4a7c15ULL * ++counter_); }
  double uniform() { return static_cast<double>(bits() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  int uniform_int(int lo, int hi) {  // [lo, hi]
    return lo + static_cast<int>(bits() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  double normal() {  // Box-Muller
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  // Knuth's product of uniforms for small means, a rounded normal above.
  int poisson(double mean) {
    if (mean <= 0.0) return 0;
    if (mean > 40.0) return std::max(0, static_cast<int>(std::lround(mean + std::sqrt(mean) * normal())));
    const double limit = std::exp(-mean);
    int k = 0;
    for (double prod = uniform(); prod > limit; prod *= uniform())
      ++k;
    return k;
  }

private:
  std::uint64_t key_;
  std::uint64_t counter_ = 0;
};

}  // namespace flowd::synth

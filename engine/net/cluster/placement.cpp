#include "net/cluster/placement.hpp"

#include <utility>

namespace flowd::net::cluster {

namespace {

// SplitMix64: tiny, fast, and fully specified, so a seed means the same
// order on every platform.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Rejection sampling: plain modulo would favour small values.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t x;
    do x = next();
    while (x >= limit);
    return x % n;
  }
};

void shuffle(std::vector<std::size_t>& v, SplitMix64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

std::optional<std::size_t> pick_executor(const StageLabels& stage, std::span<const Executor> candidates) {
  std::optional<std::size_t> best;
  int best_pref = 0;
  // True when candidate (pref, c) is better than the current best.
  const auto better = [&](int pref, const Executor& c) {
    const Executor& b = candidates[*best];
    if (pref != best_pref) return pref < best_pref;
    if (stage.rank == workflow::RankPolicy::biggest && c.labels.rank != b.labels.rank) return c.labels.rank > b.labels.rank;
    if (stage.rank == workflow::RankPolicy::smallest && c.labels.rank != b.labels.rank) return c.labels.rank < b.labels.rank;
    return c.id < b.id;
  };
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto pref = workflow::preference(stage, candidates[i].labels);
    if (!pref) continue;
    if (!best || better(*pref, candidates[i])) {
      best = i;
      best_pref = *pref;
    }
  }
  return best;
}

std::vector<std::size_t> steal_victim_order(const std::optional<std::string>& thief_site,
                                            std::span<const Executor> others, std::uint64_t seed) {
  std::vector<std::size_t> same;
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < others.size(); ++i) {
    const auto site = workflow::site_of(others[i].labels);
    (thief_site && site && *site == *thief_site ? same : rest).push_back(i);
  }
  SplitMix64 rng{seed};
  shuffle(same, rng);
  shuffle(rest, rng);
  same.insert(same.end(), rest.begin(), rest.end());
  return same;
}

}  // namespace flowd::net::cluster

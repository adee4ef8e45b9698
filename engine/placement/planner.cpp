#include "placement/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace flowd::placement {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// m^n, saturating.
std::uint64_t assignments(std::size_t m, std::size_t n) {
  std::uint64_t total = 1;
  for (std::size_t i = 0; i < n; ++i) {
    if (total > std::numeric_limits<std::uint64_t>::max() / std::max<std::size_t>(m, 1)) return UINT64_MAX;
    total *= m;
  }
  return total;
}

// The costs of contiguous placements: stages [a, b) on site j, and link j
// with stages [0, k) before it.
struct Contiguous {
  const Problem& p;
  std::size_t n, m;
  std::vector<double> prefix_seconds;  // Σ seconds of stages [0, i)
  std::vector<double> prefix_serial;   // Σ seconds of the sources among them

  explicit Contiguous(const Problem& pr) : p(pr), n(pr.stages.size()), m(pr.sites.size()) {
    prefix_seconds.assign(n + 1, 0.0);
    prefix_serial.assign(n + 1, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      prefix_seconds[i + 1] = prefix_seconds[i] + p.stages[i].seconds;
      prefix_serial[i + 1] = prefix_serial[i] + (p.stages[i].source ? p.stages[i].seconds : 0.0);
    }
  }
  double site(std::size_t j, std::size_t a, std::size_t b) const {
    return site_time(p.sites.sites[j], prefix_seconds[b] - prefix_seconds[a], prefix_serial[b] - prefix_serial[a]);
  }
  // Per item over link j when stages [0, k) sit before it: the input data
  // for each source at or after k, the outputs of each stage before k once
  // for each consumer at or after k (each pulls its own copy), and a sink's
  // results.
  struct Traffic {
    double bytes = 0, items = 0;
  };
  Traffic crossing(std::size_t k) const {
    Traffic t;
    for (std::size_t i = 0; i < n; ++i) {
      const StageCost& s = p.stages[i];
      if (i >= k) {
        if (s.source && s.input_bytes > 0) {
          t.bytes += s.input_bytes;
          t.items += 1;
        }
        continue;
      }
      const auto pulls = static_cast<double>(
          (s.sink ? 1 : 0) + std::count_if(s.consumers.begin(), s.consumers.end(), [&](std::size_t c) { return c >= k; }));
      t.bytes += pulls * s.bytes_out;
      t.items += pulls * s.items_out;
    }
    return t;
  }
  double link(std::size_t j, const Traffic& t) const {
    const Link& l = p.sites.links[j];
    return t.bytes / l.bandwidth + t.items * l.message_overhead;
  }
};

}  // namespace

Plan plan_exhaustive(const Problem& p) {
  check(p);
  const std::size_t n = p.stages.size(), m = p.sites.size();
  Plan best;
  best.method = "exhaustive";
  best.predicted.total = inf;
  Placement where(n, 0);
  // Odometer over m^n; infeasible ones skipped.
  for (;;) {
    if (feasible(p, where)) {
      ++best.tried;
      Prediction pr = predict(p, where);
      if (pr.total < best.predicted.total) {
        best.predicted = std::move(pr);
        best.where = where;
      }
    }
    std::size_t i = 0;
    while (i < n && ++where[i] == m) where[i++] = 0;
    if (i == n) break;
  }
  if (n == 0) best.predicted = predict(p, where);
  if (best.where.size() != n) throw std::invalid_argument("placement: no placement keeps every fixed stage on its site");
  return best;
}

Plan plan_dp(const Problem& p) {
  check(p);
  const Contiguous c(p);
  const std::size_t n = c.n, m = c.m;
  // Link j's cost and whether it is used, for each cut k.
  std::vector<std::vector<double>> link_cost(m > 0 ? m - 1 : 0, std::vector<double>(n + 1));
  std::vector<std::vector<double>> link_sum(link_cost.size(), std::vector<double>(n + 1));
  for (std::size_t k = 0; k <= n; ++k) {
    const auto t = c.crossing(k);
    for (std::size_t j = 0; j + 1 < m; ++j) {
      link_cost[j][k] = c.link(j, t);
      link_sum[j][k] = link_cost[j][k] + (t.bytes > 0 || t.items > 0 ? p.sites.links[j].latency : 0.0);
    }
  }
  std::vector<double> candidates;
  for (std::size_t j = 0; j < m; ++j)
    for (std::size_t a = 0; a <= n; ++a)
      for (std::size_t b = a; b <= n; ++b) candidates.push_back(c.site(j, a, b));
  for (const auto& row : link_cost) candidates.insert(candidates.end(), row.begin(), row.end());
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  Plan best;
  best.method = "min-max DP";
  best.predicted.total = inf;
  const double items = static_cast<double>(std::max<std::uint64_t>(p.items, 1));
  // f[j][k]: the least Σ with sites 0..j holding stages [0, k), each site
  // and link at most B; from[j][k] the k' where site j's run starts.
  std::vector<std::vector<double>> f(m, std::vector<double>(n + 1));
  std::vector<std::vector<std::size_t>> from(m, std::vector<std::size_t>(n + 1));
  for (const double B : candidates) {
    ++best.tried;
    for (std::size_t j = 0; j < m; ++j)
      for (std::size_t k = 0; k <= n; ++k) {
        f[j][k] = inf;
        // The link after site j (none after the last) carries the cut at k.
        double after = 0;
        if (j + 1 < m) {
          if (link_cost[j][k] > B) continue;
          after = link_sum[j][k];
        } else if (k != n) {
          continue;  // the last site ends the order
        }
        for (std::size_t a = k + 1; a-- > 0;) {
          // Stages [a, k) on site j: a fixed one elsewhere ends the run.
          if (a < k && !p.fixed.empty() && p.fixed[a] && *p.fixed[a] != j) break;
          const double here = c.site(j, a, k);
          if (here > B) continue;
          const double before = j == 0 ? (a == 0 ? 0.0 : inf) : f[j - 1][a];
          if (before + here + after < f[j][k]) {
            f[j][k] = before + here + after;
            from[j][k] = a;
          }
        }
      }
    const double sum = f[m - 1][n];
    if (sum == inf || (items - 1) * B + sum >= best.predicted.total) continue;
    Placement where(n, 0);
    std::size_t k = n;
    for (std::size_t j = m; j-- > 0;) {
      const std::size_t a = from[j][k];
      for (std::size_t i = a; i < k; ++i) where[i] = j;
      k = a;
    }
    // The full model: the placement's own bottleneck may be below B, and a
    // host shared by several sites (which no per-site bound sees) above it.
    Prediction pr = predict(p, where);
    if (pr.total < best.predicted.total) {
      best.where = std::move(where);
      best.predicted = std::move(pr);
    }
  }
  if (best.where.size() != n) throw std::invalid_argument("placement: no placement keeps every fixed stage on its site");
  return best;
}

Plan plan(const Problem& p, std::uint64_t exhaustive_limit) {
  if (assignments(p.sites.size(), p.stages.size()) <= exhaustive_limit) return plan_exhaustive(p);
  return plan_dp(p);
}

}  // namespace flowd::placement

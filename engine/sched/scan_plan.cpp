#include "sched/scan_plan.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace flowd::sched {

std::uint32_t ceil_log2(std::size_t n) noexcept {
  std::uint32_t k = 0;
  while ((std::size_t{1} << k) < n)
    ++k;
  return k;
}

namespace {

using Ref = ScanPlan::Ref;

class Builder {
public:
  explicit Builder(std::size_t n) {
    if (n >= std::numeric_limits<Ref>::max() / 8)
      throw std::invalid_argument("scan of " + std::to_string(n) + " elements: too many");
    plan_.n = n;
    rounds_.assign(n, 0);
  }
  Ref combine(Ref left, Ref right) {
    const std::uint32_t round = std::max(rounds_[left], rounds_[right]) + 1;
    plan_.steps.push_back({left, right, round});
    rounds_.push_back(round);
    plan_.depth = std::max(plan_.depth, round);
    return static_cast<Ref>(plan_.n + plan_.steps.size() - 1);
  }
  // Drops the steps no result depends on (Blelloch's padding slots compute
  // exclusive prefixes past the end), renumbering the rest in order.
  ScanPlan finish(std::vector<Ref> result) {
    const std::size_t n = plan_.n;
    std::vector<bool> used(plan_.steps.size(), false);
    for (Ref r : result)
      if (r >= n) used[r - n] = true;
    for (std::size_t s = plan_.steps.size(); s-- > 0;)
      if (used[s])
        for (Ref r : {plan_.steps[s].left, plan_.steps[s].right})
          if (r >= n) used[r - n] = true;
    std::vector<Ref> renamed(plan_.steps.size());
    std::vector<ScanPlan::Step> kept;
    plan_.depth = 0;
    auto rename = [&](Ref r) { return r < n ? r : renamed[r - n]; };
    for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
      if (!used[s]) continue;
      auto step = plan_.steps[s];
      step.left = rename(step.left);
      step.right = rename(step.right);
      renamed[s] = static_cast<Ref>(n + kept.size());
      kept.push_back(step);
      plan_.depth = std::max(plan_.depth, step.round);
    }
    plan_.steps = std::move(kept);
    for (Ref& r : result)
      r = rename(r);
    plan_.result = std::move(result);
    return std::move(plan_);
  }

private:
  ScanPlan plan_;
  std::vector<std::uint32_t> rounds_;  // per ref
};

std::vector<Ref> inputs(std::size_t n) {
  std::vector<Ref> r(n);
  for (std::size_t i = 0; i < n; ++i)
    r[i] = static_cast<Ref>(i);
  return r;
}

ScanPlan sequential(std::size_t n) {
  Builder b(n);
  auto y = inputs(n);
  for (std::size_t i = 1; i < n; ++i)
    y[i] = b.combine(y[i - 1], y[i]);
  return b.finish(std::move(y));
}

// Hillis–Steele: in round k every element at i ≥ 2^k takes the value 2^k to
// its left. Each element's value is a new ref, so rounds need no barrier.
ScanPlan dissemination(std::size_t n) {
  Builder b(n);
  auto y = inputs(n);
  for (std::size_t d = 1; d < n; d *= 2) {
    auto next = y;
    for (std::size_t i = d; i < n; ++i)
      next[i] = b.combine(y[i - d], y[i]);
    y = std::move(next);
  }
  return b.finish(std::move(y));
}

// Blelloch's work-efficient scan on m = 2^⌈log n⌉ slots, slots ≥ n and the
// down-sweep's identity being absent (a combine with an absent operand is the
// other operand, no work). The down-sweep gives the exclusive scan e; the
// inclusive one is e shifted left, its last element being the up-sweep's
// total, so no combine is spent on the conversion.
ScanPlan blelloch(std::size_t n) {
  Builder b(n);
  std::size_t m = 1;
  while (m < n)
    m *= 2;
  std::vector<std::optional<Ref>> a(m);
  for (std::size_t i = 0; i < n; ++i)
    a[i] = static_cast<Ref>(i);
  auto op = [&b](const std::optional<Ref>& l, const std::optional<Ref>& r) -> std::optional<Ref> {
    if (!l) return r;
    if (!r) return l;
    return b.combine(*l, *r);
  };
  for (std::size_t d = 1; d < m; d *= 2)
    for (std::size_t i = 2 * d - 1; i < m; i += 2 * d)
      a[i] = op(a[i - d], a[i]);
  const std::optional<Ref> total = a[m - 1];
  a[m - 1].reset();
  for (std::size_t d = m / 2; d >= 1; d /= 2)
    for (std::size_t i = 2 * d - 1; i < m; i += 2 * d) {
      const std::optional<Ref> left_sum = a[i - d];
      a[i - d] = a[i];            // the parent's prefix
      a[i] = op(a[i], left_sum);  // … then the left subtree's elements
    }
  std::vector<Ref> y(n);
  for (std::size_t i = 0; i + 1 < n; ++i)
    y[i] = *a[i + 1];
  if (n) y[n - 1] = *total;
  return b.finish(std::move(y));
}

// Ladner and Fischer's P_k. P_0(n): P_1 on the left half (a power of two),
// P_0 on the rest, then the left half's total applied to every element of the
// rest in one round. P_k(n), k ≥ 1: combine adjacent pairs, P_{k−1} on the
// pairs, then one combine for each element left between two pair prefixes.
std::vector<Ref> ladner_fischer(Builder& b, int k, const std::vector<Ref>& x) {
  const std::size_t n = x.size();
  if (n <= 1) return x;
  if (k == 0) {
    const std::size_t h = std::size_t{1} << (ceil_log2(n) - 1);
    auto left = ladner_fischer(b, 1, {x.begin(), x.begin() + static_cast<std::ptrdiff_t>(h)});
    auto right = ladner_fischer(b, 0, {x.begin() + static_cast<std::ptrdiff_t>(h), x.end()});
    for (Ref r : right)
      left.push_back(b.combine(left[h - 1], r));
    return left;
  }
  std::vector<Ref> pairs;
  for (std::size_t i = 0; i + 1 < n; i += 2)
    pairs.push_back(b.combine(x[i], x[i + 1]));
  if (n % 2) pairs.push_back(x[n - 1]);  // the odd last element joins the pairs' scan as it is
  const auto q = ladner_fischer(b, k - 1, pairs);
  std::vector<Ref> y(n);
  y[0] = x[0];
  for (std::size_t i = 1; i < n; ++i) {
    if (i % 2)
      y[i] = q[i / 2];
    else if (n % 2 && i == n - 1)
      y[i] = q.back();
    else
      y[i] = b.combine(q[i / 2 - 1], x[i]);
  }
  return y;
}

}  // namespace

ScanPlan make_scan_plan(ScanStrategy strategy, std::size_t n) {
  switch (strategy) {
    case ScanStrategy::sequential: return sequential(n);
    case ScanStrategy::dissemination: return dissemination(n);
    case ScanStrategy::blelloch: return blelloch(n);
    case ScanStrategy::ladner_fischer: {
      Builder b(n);
      return b.finish(ladner_fischer(b, 0, inputs(n)));
    }
    case ScanStrategy::work_stealing:
    case ScanStrategy::static_hierarchical: break;
  }
  throw std::invalid_argument("scan strategy '" + std::string(name_of(strategy)) + "' has no static plan");
}

}  // namespace flowd::sched

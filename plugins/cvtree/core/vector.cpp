#include "vector.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace flowd::cvtree {

namespace {

constexpr std::array<std::uint64_t, max_k + 1> powers_of_20 = [] {
  std::array<std::uint64_t, max_k + 1> p{};
  p[0] = 1;
  for (std::size_t i = 1; i < p.size(); ++i) p[i] = p[i - 1] * alphabet;
  return p;
}();

// Bits needed for the keys of m-mers.
int key_bits(int m) {
  int bits = 0;
  for (std::uint64_t top = powers_of_20[static_cast<std::size_t>(m)] - 1; top; top >>= 1) ++bits;
  return bits;
}

// LSD radix sort of `v` by key(v[i]) < 2^bits, 11 bits a pass: a proteome's
// few million k-mers sort in a few passes over memory, where a comparison
// sort would take ten times longer.
template <class T, class Key>
void radix_sort(std::vector<T>& v, int bits, Key key) {
  constexpr int digit = 11;
  constexpr std::size_t buckets = std::size_t{1} << digit;
  std::vector<T> tmp(v.size());
  std::vector<std::size_t> count(buckets);
  for (int shift = 0; shift < bits; shift += digit) {
    std::fill(count.begin(), count.end(), 0);
    for (const T& x : v) ++count[(key(x) >> shift) & (buckets - 1)];
    std::size_t sum = 0;
    for (auto& c : count) {
      const std::size_t here = c;
      c = sum;
      sum += here;
    }
    for (const T& x : v) tmp[count[(key(x) >> shift) & (buckets - 1)]++] = x;
    v.swap(tmp);
  }
}

// The distinct m-mers of a proteome (ascending) with their counts, and the
// number of m-mers counted.
struct Counts {
  std::vector<std::uint64_t> codes;
  std::vector<std::uint32_t> counts;
  std::uint64_t total = 0;
};

Counts count_mers(const Proteome& p, int m) {
  const std::uint64_t keep = powers_of_20[static_cast<std::size_t>(m - 1)];
  std::vector<std::uint64_t> all;
  all.reserve(p.residues.size());
  const auto* r = p.residues.data();
  for (std::size_t q = 0; q < p.proteins(); ++q) {
    const std::size_t s = p.starts[q], e = p.starts[q + 1];
    if (e - s < static_cast<std::size_t>(m)) continue;
    std::uint64_t code = 0;
    for (std::size_t i = s; i < s + static_cast<std::size_t>(m) - 1; ++i) code = code * alphabet + r[i];
    for (std::size_t i = s + static_cast<std::size_t>(m) - 1; i < e; ++i) {
      code = (code % keep) * alphabet + r[i];
      all.push_back(code);
    }
  }
  Counts c;
  c.total = all.size();
  radix_sort(all, key_bits(m), [](std::uint64_t x) { return x; });
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i + 1;
    while (j < all.size() && all[j] == all[i]) ++j;
    c.codes.push_back(all[i]);
    c.counts.push_back(static_cast<std::uint32_t>(j - i));
    i = j;
  }
  return c;
}

struct Expected {
  std::uint64_t key;
  double f0;
};

// Neumaier's compensated sum: a vector of millions of entries sums to its
// rounding error of a few ulps, not n of them, whatever the order, so the
// CPU and the GPU (whose merge path adds in another order) agree to ~1e-15.
class Sum {
public:
  void add(double x) noexcept {
    const double t = sum_ + x;
    comp_ += std::abs(sum_) >= std::abs(x) ? (sum_ - t) + x : (x - t) + sum_;
    sum_ = t;
  }
  double value() const noexcept { return sum_ + comp_; }

private:
  double sum_ = 0.0, comp_ = 0.0;
};

}  // namespace

CompositionVector composition_vector(const Proteome& p, int k) {
  if (k < min_k || k > max_k)
    throw std::invalid_argument("k = " + std::to_string(k) + " is outside [" + std::to_string(min_k) + ", " +
                                std::to_string(max_k) + "]");
  const Counts c0 = count_mers(p, k), c1 = count_mers(p, k - 1), c2 = count_mers(p, k - 2);
  if (c0.total == 0)
    throw std::invalid_argument("no " + std::to_string(k) + "-mers: every protein is shorter than " +
                                std::to_string(k) + " residues");
  const double n0 = static_cast<double>(c0.total), n1 = static_cast<double>(c1.total),
               n2 = static_cast<double>(c2.total);
  const std::uint64_t p_mid = powers_of_20[static_cast<std::size_t>(k - 2)];  // a (k−2)-mer's range
  const std::uint64_t p_top = powers_of_20[static_cast<std::size_t>(k - 1)];

  // Each (k−1)-mer is a right extension m·y of its first k−2 residues m
  // (c1 is sorted by m·y, so grouped by m) and a left extension x·m of its
  // last k−2 (grouped by m after sorting on m).
  struct Left {
    std::uint64_t mid;
    std::uint32_t x, count;
  };
  std::vector<Left> left(c1.codes.size());
  for (std::size_t i = 0; i < c1.codes.size(); ++i)
    left[i] = {c1.codes[i] % p_mid, static_cast<std::uint32_t>(c1.codes[i] / p_mid), c1.counts[i]};
  radix_sort(left, key_bits(k - 2), [](const Left& l) { return l.mid; });

  // f0 for every α = x·m·y with both (k−1)-mers seen, m walking c2.
  std::vector<Expected> expected;
  std::size_t li = 0, ri = 0;
  for (std::size_t mi = 0; mi < c2.codes.size(); ++mi) {
    const std::uint64_t m = c2.codes[mi];
    while (li < left.size() && left[li].mid < m) ++li;
    while (ri < c1.codes.size() && c1.codes[ri] / alphabet < m) ++ri;
    std::size_t le = li, re = ri;
    while (le < left.size() && left[le].mid == m) ++le;
    while (re < c1.codes.size() && c1.codes[re] / alphabet == m) ++re;
    const double fm = static_cast<double>(c2.counts[mi]) / n2;
    for (std::size_t a = li; a < le; ++a) {
      const double fx = static_cast<double>(left[a].count) / n1;
      for (std::size_t b = ri; b < re; ++b) {
        const double fy = static_cast<double>(c1.counts[b]) / n1;
        expected.push_back({left[a].x * p_top + c1.codes[b], fx * fy / fm});
      }
    }
    li = le;
    ri = re;
  }
  radix_sort(expected, key_bits(k), [](const Expected& e) { return e.key; });

  CompositionVector v;
  v.k = k;
  v.keys.resize(expected.size());
  v.values.resize(expected.size());
  std::size_t seen = 0;
  Sum norm2;
  for (std::size_t i = 0, j = 0; i < expected.size(); ++i) {
    while (j < c0.codes.size() && c0.codes[j] < expected[i].key) ++j;
    const double f = j < c0.codes.size() && c0.codes[j] == expected[i].key
                         ? (++seen, static_cast<double>(c0.counts[j]) / n0)
                         : 0.0;
    const double a = (f - expected[i].f0) / expected[i].f0;
    v.keys[i] = expected[i].key;
    v.values[i] = a;
    norm2.add(a * a);
  }
  // Every k-mer seen has both of its (k−1)-mers seen, so f0 ≠ 0 for it.
  if (seen != c0.codes.size())
    throw std::logic_error("composition vector: " + std::to_string(c0.codes.size() - seen) +
                           " k-mers seen without their expectation");
  if (norm2.value() > 0.0) {
    const double inv = 1.0 / std::sqrt(norm2.value());
    for (double& a : v.values) a *= inv;
  }
  return v;
}

double cosine(std::span<const double> keys_a, std::span<const double> values_a, std::span<const double> keys_b,
              std::span<const double> values_b) {
  if (keys_a.size() != values_a.size() || keys_b.size() != values_b.size())
    throw std::invalid_argument("cosine: keys and values differ in length");
  Sum sum;
  std::size_t i = 0, j = 0;
  const std::size_t na = keys_a.size(), nb = keys_b.size();
  while (i < na && j < nb) {
    const double x = keys_a[i], y = keys_b[j];
    if (x < y) {
      ++i;
    } else if (y < x) {
      ++j;
    } else {
      sum.add(values_a[i] * values_b[j]);
      ++i;
      ++j;
    }
  }
  return sum.value();
}

}  // namespace flowd::cvtree

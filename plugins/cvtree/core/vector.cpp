#include "vector.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace flowd::cvtree {

namespace {

constexpr std::array<std::uint64_t, max_k + 1> powers_of_20 = [] {
  std::array<std::uint64_t, max_k + 1> p{};
  p[0] = 1;
  for (std::size_t i = 1; i < p.size(); ++i)
    p[i] = p[i - 1] * alphabet;
  return p;
}();

constexpr std::uint64_t letters_mask = (std::uint64_t{1} << alphabet) - 1;

// Bits needed for the keys of m-mers.
int key_bits(int m) {
  int bits = 0;
  for (std::uint64_t top = powers_of_20[static_cast<std::size_t>(m)] - 1; top; top >>= 1)
    ++bits;
  return bits;
}

// LSD radix sort of `v` by key(v[i]) < 2^bits, 11 bits a pass, stable: a
// proteome's few million k-mers sort in a few passes over memory, where a
// comparison sort would take ten times longer.
template <class T, class Key>
void radix_sort(std::vector<T>& v, int bits, Key key) {
  constexpr int digit = 11;
  constexpr std::size_t buckets = std::size_t{1} << digit;
  std::vector<T> tmp(v.size());
  std::vector<std::size_t> count(buckets);
  for (int shift = 0; shift < bits; shift += digit) {
    std::fill(count.begin(), count.end(), 0);
    for (const T& x : v)
      ++count[(key(x) >> shift) & (buckets - 1)];
    std::size_t sum = 0;
    for (auto& c : count) {
      const std::size_t here = c;
      c = sum;
      sum += here;
    }
    for (const T& x : v)
      tmp[count[(key(x) >> shift) & (buckets - 1)]++] = x;
    v.swap(tmp);
  }
}

// The distinct m-mers of a proteome with their counts, ascending by
// `order(code)` (< 2^bits, held as Code), and the number of m-mers counted.
template <class Code>
struct Counts {
  std::vector<Code> codes;
  std::vector<std::uint32_t> counts;
  std::uint64_t total = 0;
};

template <class Code, class Order>
Counts<Code> count_mers(const Proteome& p, int m, int bits, Order order) {
  const std::uint64_t keep = powers_of_20[static_cast<std::size_t>(m - 1)];
  std::vector<Code> all;
  all.reserve(p.residues.size());
  const auto* r = p.residues.data();
  for (std::size_t q = 0; q < p.proteins(); ++q) {
    const std::size_t s = p.starts[q], e = p.starts[q + 1];
    if (e - s < static_cast<std::size_t>(m)) continue;
    std::uint64_t code = 0;
    for (std::size_t i = s; i < s + static_cast<std::size_t>(m) - 1; ++i)
      code = code * alphabet + r[i];
    for (std::size_t i = s + static_cast<std::size_t>(m) - 1; i < e; ++i) {
      code = (code % keep) * alphabet + r[i];
      all.push_back(static_cast<Code>(order(code)));
    }
  }
  Counts<Code> c;
  c.total = all.size();
  radix_sort(all, bits, [](Code x) { return x; });
  std::size_t distinct = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    distinct += i == 0 || all[i] != all[i - 1];
  c.codes.reserve(distinct);
  c.counts.reserve(distinct);
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i + 1;
    while (j < all.size() && all[j] == all[i])
      ++j;
    c.codes.push_back(all[i]);
    c.counts.push_back(static_cast<std::uint32_t>(j - i));
    i = j;
  }
  return c;
}

template <class Code>
Counts<Code> count_mers(const Proteome& p, int m) {
  return count_mers<Code>(p, m, key_bits(m), [](std::uint64_t code) { return code; });
}

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

std::uint64_t left_letters(std::uint64_t mask) noexcept { return mask & letters_mask; }
std::uint64_t right_letters(std::uint64_t mask) noexcept { return mask >> 32; }

// Whether the k-mer with ends `e` around a middle of masks `mask` is expected.
bool expected(std::uint64_t mask, std::uint16_t e) noexcept {
  return (left_letters(mask) >> (e >> 5) & right_letters(mask) >> (e & 31) & 1) != 0;
}

}  // namespace

VectorView view_of(const CompositionVector& v) noexcept {
  return {v.middles, v.masks, v.starts, v.ends, v.values, v.unseen};
}

namespace {

// The vector, with the k-mers' codes held as Code: 32 bits where they fit
// (k ≤ 7), which halves the memory of the counting.
template <class Code>
CompositionVector build(const Proteome& p, int k) {
  const std::uint64_t p_mid = powers_of_20[static_cast<std::size_t>(k - 2)];  // a middle's range
  const std::uint64_t p_top = powers_of_20[static_cast<std::size_t>(k - 1)];
  // The k-mers x·m·y ordered by (m, x, y): grouped by middle as the vector
  // stores them.
  const Counts<Code> c0 = count_mers<Code>(p, k, key_bits(k - 2) + 10, [&](std::uint64_t a) {
    const std::uint64_t rest = a % p_top;
    return (rest / alphabet) << 10 | end_pair(static_cast<unsigned>(a / p_top), static_cast<unsigned>(rest % alphabet));
  });
  const Counts<Code> c1 = count_mers<Code>(p, k - 1), c2 = count_mers<Code>(p, k - 2);
  if (c0.total == 0)
    throw std::invalid_argument("no " + std::to_string(k) + "-mers: every protein is shorter than " +
                                std::to_string(k) + " residues");
  const double n0 = static_cast<double>(c0.total), n1 = static_cast<double>(c1.total),
               n2 = static_cast<double>(c2.total);

  // Each (k−1)-mer is a right extension m·y of its first k−2 residues m
  // (c1 is sorted by m·y, so grouped by m) and a left extension x·m of its
  // last k−2 (grouped by m after sorting on m).
  struct Left {
    Code mid;
    std::uint32_t x, count;
  };
  std::vector<Left> left(c1.codes.size());
  for (std::size_t i = 0; i < c1.codes.size(); ++i)
    left[i] = {static_cast<Code>(c1.codes[i] % p_mid), static_cast<std::uint32_t>(c1.codes[i] / p_mid), c1.counts[i]};
  radix_sort(left, key_bits(k - 2), [](const Left& l) { return l.mid; });

  CompositionVector v;
  v.k = k;
  v.ends.reserve(c0.codes.size());
  v.values.reserve(c0.codes.size());
  Sum norm2;
  std::uint64_t expected_total = 0;
  std::array<double, alphabet> f_left{}, f_right{};
  std::size_t li = 0, ri = 0, si = 0;
  for (std::size_t mi = 0; mi < c2.codes.size(); ++mi) {
    const std::uint64_t m = c2.codes[mi];
    while (li < left.size() && left[li].mid < m)
      ++li;
    while (ri < c1.codes.size() && c1.codes[ri] / alphabet < m)
      ++ri;
    std::uint64_t lmask = 0, rmask = 0;
    for (; li < left.size() && left[li].mid == m; ++li) {
      lmask |= std::uint64_t{1} << left[li].x;
      f_left[left[li].x] = static_cast<double>(left[li].count) / n1;
    }
    for (; ri < c1.codes.size() && c1.codes[ri] / alphabet == m; ++ri) {
      const auto y = static_cast<unsigned>(c1.codes[ri] % alphabet);
      rmask |= std::uint64_t{1} << y;
      f_right[y] = static_cast<double>(c1.counts[ri]) / n1;
    }
    if (lmask == 0 || rmask == 0) continue;  // no k-mer expected around m
    v.middles.push_back(m);
    v.masks.push_back(lmask | rmask << 32);
    v.starts.push_back(static_cast<std::uint32_t>(v.ends.size()));
    expected_total +=
        static_cast<std::uint64_t>(std::popcount(lmask)) * static_cast<std::uint64_t>(std::popcount(rmask));
    const double fm = static_cast<double>(c2.counts[mi]) / n2;
    for (; si < c0.codes.size() && c0.codes[si] >> 10 == m; ++si) {
      const auto e = static_cast<std::uint16_t>(c0.codes[si] & 1023);
      // Both (k−1)-mers of a seen k-mer were seen, so its f0 ≠ 0.
      const double f0 = f_left[e >> 5] * f_right[e & 31] / fm;
      const double a = (static_cast<double>(c0.counts[si]) / n0 - f0) / f0;
      v.ends.push_back(e);
      v.values.push_back(a);
      norm2.add(a * a);
    }
  }
  v.starts.push_back(static_cast<std::uint32_t>(v.ends.size()));
  if (si != c0.codes.size() || v.ends.size() > std::uint64_t{UINT32_MAX})
    throw std::logic_error("composition vector: " + std::to_string(c0.codes.size() - si) +
                           " k-mers seen without their expectation");
  // Each expected k-mer never seen adds (−1)².
  norm2.add(static_cast<double>(expected_total - v.ends.size()));
  const double inv = norm2.value() > 0.0 ? 1.0 / std::sqrt(norm2.value()) : 1.0;
  for (double& a : v.values)
    a *= inv;
  v.unseen = -inv;
  return v;
}

}  // namespace

CompositionVector composition_vector(const Proteome& p, int k) {
  if (k < min_k || k > max_k)
    throw std::invalid_argument("k = " + std::to_string(k) + " is outside [" + std::to_string(min_k) + ", " +
                                std::to_string(max_k) + "]");
  // The codes ordered by middle take key_bits(k − 2) + 10 bits: 32 at k = 7.
  if (key_bits(k - 2) + 10 <= 32) return build<std::uint32_t>(p, k);
  return build<std::uint64_t>(p, k);
}

std::uint64_t expected_count(const VectorView& v) noexcept {
  std::uint64_t n = 0;
  for (const std::uint64_t mask : v.masks)
    n += static_cast<std::uint64_t>(std::popcount(left_letters(mask))) *
         static_cast<std::uint64_t>(std::popcount(right_letters(mask)));
  return n;
}

std::vector<std::pair<std::uint64_t, double>> entries(const CompositionVector& v) {
  const std::uint64_t p_top = powers_of_20[static_cast<std::size_t>(v.k - 1)];
  std::vector<std::pair<std::uint64_t, double>> out;
  out.reserve(expected_count(view_of(v)));
  for (std::size_t i = 0; i < v.middles.size(); ++i) {
    std::size_t s = v.starts[i];
    for (unsigned x = 0; x < alphabet; ++x) {
      if (!(left_letters(v.masks[i]) >> x & 1)) continue;
      for (unsigned y = 0; y < alphabet; ++y) {
        if (!(right_letters(v.masks[i]) >> y & 1)) continue;
        const bool seen = s < v.starts[i + 1] && v.ends[s] == end_pair(x, y);
        out.emplace_back(x * p_top + v.middles[i] * alphabet + y, seen ? v.values[s++] : v.unseen);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

double cosine(const VectorView& a, const VectorView& b) {
  if (a.middles.size() != a.masks.size() || a.starts.size() != a.middles.size() + 1 ||
      b.middles.size() != b.masks.size() || b.starts.size() != b.middles.size() + 1 ||
      a.ends.size() != a.values.size() || b.ends.size() != b.values.size())
    throw std::invalid_argument("cosine: a vector's arrays differ in length");
  Sum sum;
  std::uint64_t both_unseen = 0;
  const std::size_t na = a.middles.size(), nb = b.middles.size();
  for (std::size_t i = 0, j = 0; i < na && j < nb;) {
    if (a.middles[i] < b.middles[j]) {
      ++i;
      continue;
    }
    if (b.middles[j] < a.middles[i]) {
      ++j;
      continue;
    }
    const std::uint64_t ma = a.masks[i], mb = b.masks[j], shared = ma & mb;
    // |E_A ∩ E_B| around this middle; the seen k-mers of either that the
    // other expects are taken out of it below, leaving those both expect
    // and neither saw.
    std::uint64_t common = static_cast<std::uint64_t>(std::popcount(left_letters(shared))) *
                           static_cast<std::uint64_t>(std::popcount(right_letters(shared)));
    if (common != 0) {
      std::size_t p = a.starts[i], q = b.starts[j];
      const std::size_t pe = a.starts[i + 1], qe = b.starts[j + 1];
      while (p < pe || q < qe) {
        const std::uint16_t ea = p < pe ? a.ends[p] : 0xffff, eb = q < qe ? b.ends[q] : 0xffff;
        if (ea < eb) {
          if (expected(mb, ea)) {
            sum.add(a.values[p] * b.unseen);
            --common;
          }
          ++p;
        } else if (eb < ea) {
          if (expected(ma, eb)) {
            sum.add(a.unseen * b.values[q]);
            --common;
          }
          ++q;
        } else {
          sum.add(a.values[p] * b.values[q]);
          --common;
          ++p;
          ++q;
        }
      }
      both_unseen += common;
    }
    ++i;
    ++j;
  }
  sum.add(a.unseen * b.unseen * static_cast<double>(both_unseen));
  return sum.value();
}

}  // namespace flowd::cvtree

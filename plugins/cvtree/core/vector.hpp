#pragma once
// The composition vector of a proteome (Qi, Wang & Hao 2004, as CVTree
// computes it; docs/plugins/cvtree.md):
//   f_m(α) = count(α) / (number of m-mers), m = k, k−1, k−2, counted within
//            proteins (a k-mer never spans two);
//   f0(a1..ak) = f(a1..ak−1) · f(a2..ak) / f(a2..ak−1), the Markov expectation;
//   a(α) = (f(α) − f0(α)) / f0(α) for every α with f0(α) ≠ 0 (so a k-mer
//          expected but never seen has a = −1);
// normalised to unit length.
//
// Stored by middle, and the unseen entries implicitly. α = x·m·y is expected
// exactly when both x·m and m·y were seen, so the expected k-mers around a
// middle m are the product of two sets of at most 20 letters, kept as two
// 20-bit masks; every expected k-mer never seen has the same value −1/|a|.
// Only the k-mers seen carry a value. On generated proteomes of bacterial
// size 83–84 % of the expected k-mers at k = 6 are never seen, so this holds
// a vector in about a tenth of the memory of one entry per expected k-mer,
// and the cosine walks only the seen ones (docs/plugins/cvtree.md, "How a vector is stored").
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "proteome.hpp"

namespace flowd::cvtree {

inline constexpr int min_k = 3;
inline constexpr int max_k = 12;

// The ends (x, y) of a k-mer x·m·y as one number, x << 5 | y: ascending
// order is (x, y) order, and either letter is a shift away.
inline constexpr std::uint16_t end_pair(unsigned x, unsigned y) noexcept {
  return static_cast<std::uint16_t>(x << 5 | y);
}

struct CompositionVector {
  int k = 0;
  // The middles m ((k−2)-mers as base-20 numbers, first letter most
  // significant), ascending: those with at least one expected k-mer.
  std::vector<std::uint64_t> middles;
  // Per middle: bit x set when x·m was seen (bits 0..19), bit 32 + y when
  // m·y was seen. The expected k-mers around m are every such x with every
  // such y.
  std::vector<std::uint64_t> masks;
  // The seen k-mers, grouped by middle (middle i's are [starts[i],
  // starts[i + 1])) and ascending by end_pair within a middle.
  std::vector<std::uint32_t> starts;
  std::vector<std::uint16_t> ends;
  std::vector<double> values;  // a(α) / |a| of each seen k-mer
  double unseen = 0.0;         // −1 / |a|: every expected k-mer never seen
};

// A vector's arrays wherever they are (a CompositionVector, or an item's
// bytes: ops/vectors.hpp).
struct VectorView {
  std::span<const std::uint64_t> middles, masks;
  std::span<const std::uint32_t> starts;  // middles.size() + 1
  std::span<const std::uint16_t> ends;
  std::span<const double> values;
  double unseen = 0.0;
};
VectorView view_of(const CompositionVector& v) noexcept;

// Throws std::invalid_argument for k outside [min_k, max_k] or a proteome
// with no k-mer (every protein is shorter than k).
CompositionVector composition_vector(const Proteome& p, int k);

// How many k-mers are expected (f0 ≠ 0): the length of the vector written
// out in full.
std::uint64_t expected_count(const VectorView& v) noexcept;

// Every entry, ascending by α (the k-mer as a base-20 number, a1 most
// significant), the unseen ones included: the vector as the formula writes
// it, for tests and small inputs (|expected| entries).
std::vector<std::pair<std::uint64_t, double>> entries(const CompositionVector& v);

// C = Σ over the k-mers expected in both of a(α)·b(α), a compensated sum in
// double (the cosine of two unit vectors; the distance is (1 − C) / 2). Both
// vectors must be of the same k.
double cosine(const VectorView& a, const VectorView& b);

}  // namespace flowd::cvtree

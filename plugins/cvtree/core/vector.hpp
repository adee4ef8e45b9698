#pragma once
// The composition vector of a proteome (Qi, Wang & Hao 2004, as CVTree
// computes it; docs/plugins/cvtree.md):
//   f_m(α) = count(α) / (number of m-mers), m = k, k−1, k−2, counted within
//            proteins (a k-mer never spans two);
//   f0(a1..ak) = f(a1..ak−1) · f(a2..ak) / f(a2..ak−1), the Markov expectation;
//   a(α) = (f(α) − f0(α)) / f0(α) for every α with f0(α) ≠ 0 (so a k-mer
//          expected but never seen has a = −1);
// normalised to unit length and stored sparse, sorted by key.
#include <cstdint>
#include <span>
#include <vector>

#include "proteome.hpp"

namespace flowd::cvtree {

inline constexpr int min_k = 3;
// Keys travel as doubles in flowd items (an f64 array): 20^12 < 2^53, so
// every key of k <= 12 is exact.
inline constexpr int max_k = 12;

struct CompositionVector {
  int k = 0;
  // α as a base-20 number of residue codes, a1 most significant; ascending.
  std::vector<std::uint64_t> keys;
  std::vector<double> values;  // a(α) / |a|
};

// Throws std::invalid_argument for k outside [min_k, max_k] or a proteome
// with no k-mer (every protein shorter than k).
CompositionVector composition_vector(const Proteome& p, int k);

// C = Σ over keys in both of a_i · b_i, a compensated sum in double (the
// cosine of two unit vectors; the distance is (1 − C) / 2). Keys are
// ascending and unique in each; as exact integers in doubles.
double cosine(std::span<const double> keys_a, std::span<const double> values_a, std::span<const double> keys_b,
              std::span<const double> values_b);

}  // namespace flowd::cvtree

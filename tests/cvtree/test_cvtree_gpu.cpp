// The merge-path cosine on the GPU (plugins/cvtree/core/gpu) beside the CPU's
// compensated merge (core/vector.hpp): equal to 1e-12 for vectors of 0 to
// 2·10^6 entries, any overlap, cut anywhere by the merge path (sizes that
// are not multiples of the grid, ties at the cuts). Every test skips,
// showing why, without a CUDA GPU.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cvtree_gpu.hpp"
#include "vector.hpp"

using namespace flowd::cvtree;

namespace {

#define REQUIRE_GPU()                                                   \
  do {                                                                  \
    std::string why;                                                    \
    if (gpu::device_count(&why) == 0) GTEST_SKIP() << "no CUDA GPU: " << why; \
  } while (0)

struct Sparse {
  std::vector<double> keys, values;
};

// `n` keys drawn from [0, range) (sorted, unique), unit length.
Sparse random_sparse(std::mt19937_64& rng, std::size_t n, std::uint64_t range) {
  std::uniform_int_distribution<std::uint64_t> key(0, range - 1);
  std::vector<std::uint64_t> k(n);
  for (auto& x : k) x = key(rng);
  std::sort(k.begin(), k.end());
  k.erase(std::unique(k.begin(), k.end()), k.end());
  std::normal_distribution<double> value(0.0, 1.0);
  Sparse s;
  double norm = 0;
  for (auto x : k) {
    s.keys.push_back(static_cast<double>(x));
    s.values.push_back(value(rng));
    norm += s.values.back() * s.values.back();
  }
  for (double& v : s.values) v /= std::sqrt(norm);
  return s;
}

double on_gpu(const Sparse& a, const Sparse& b, gpu::Scratch& scratch) {
  const gpu::DeviceDoubles ka(a.keys.data(), a.keys.size()), va(a.values.data(), a.values.size()),
      kb(b.keys.data(), b.keys.size()), vb(b.values.data(), b.values.size());
  return gpu::cosine(ka.data(), va.data(), ka.size(), kb.data(), vb.data(), kb.size(), scratch, nullptr);
}

double on_cpu(const Sparse& a, const Sparse& b) { return cosine(a.keys, a.values, b.keys, b.values); }

}  // namespace

TEST(CvtreeGpu, CosineEqualsTheCpuForAnySizeAndOverlap) {
  REQUIRE_GPU();
  gpu::Scratch scratch;
  std::mt19937_64 rng(7);
  // Sizes around the grid's 262 144 threads, and ranges from dense (most
  // keys shared) to sparse (few shared).
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{262143},
                        std::size_t{262145}, std::size_t{2'000'000}})
    for (std::uint64_t range : {std::uint64_t{2} * n + 2, std::uint64_t{20} * n + 20, std::uint64_t{3'200'000}}) {
      const Sparse a = random_sparse(rng, n, range), b = random_sparse(rng, n / 2 + 1, range);
      SCOPED_TRACE(std::to_string(a.keys.size()) + " x " + std::to_string(b.keys.size()) + " keys in " +
                   std::to_string(range));
      EXPECT_NEAR(on_gpu(a, b, scratch), on_cpu(a, b), 1e-12);
      EXPECT_NEAR(on_gpu(b, a, scratch), on_cpu(a, b), 1e-12);
      EXPECT_NEAR(on_gpu(a, a, scratch), 1.0, 1e-12) << "a unit vector with itself";
    }
}

TEST(CvtreeGpu, EmptyAndDisjointVectors) {
  REQUIRE_GPU();
  gpu::Scratch scratch;
  const Sparse none, low{{0, 1, 2}, {0.6, 0.0, 0.8}}, high{{3, 4}, {1.0, 0.0}};
  EXPECT_EQ(on_gpu(none, low, scratch), 0.0);
  EXPECT_EQ(on_gpu(low, none, scratch), 0.0);
  EXPECT_EQ(on_gpu(low, high, scratch), 0.0);
  EXPECT_EQ(on_gpu(high, low, scratch), 0.0);
  EXPECT_NEAR(on_gpu(low, low, scratch), 1.0, 1e-15);
}

// Composition vectors of two related proteomes at k = 5 and 6, as the
// operator compares them.
TEST(CvtreeGpu, CompositionVectorsOfRelatedProteomes) {
  REQUIRE_GPU();
  gpu::Scratch scratch;
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> aa(0, 19), len(80, 400), mutate(0, 9);
  std::string one, two;
  for (int q = 0; q < 400; ++q) {
    std::string seq;
    for (int i = len(rng); i > 0; --i) seq += amino_acids[static_cast<std::size_t>(aa(rng))];
    one += ">a" + std::to_string(q) + "\n" + seq + "\n";
    for (char& c : seq)
      if (mutate(rng) == 0) c = amino_acids[static_cast<std::size_t>(aa(rng))];
    two += ">b" + std::to_string(q) + "\n" + seq + "\n";
  }
  for (int k : {5, 6}) {
    const CompositionVector x = composition_vector(parse_fasta(one, "one"), k);
    const CompositionVector y = composition_vector(parse_fasta(two, "two"), k);
    const Sparse a{{x.keys.begin(), x.keys.end()}, x.values}, b{{y.keys.begin(), y.keys.end()}, y.values};
    const double cpu = on_cpu(a, b), g = on_gpu(a, b, scratch);
    EXPECT_NEAR(g, cpu, 1e-12) << "k = " << k;
    EXPECT_GT(cpu, 0.05) << "related proteomes share structure";
  }
}

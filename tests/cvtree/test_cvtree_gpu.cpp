// The cosine on the GPU (plugins/cvtree/core/gpu), walked by middle (the merge
// path) and by k-mer, beside the CPU's compensated walk (core/vector.hpp):
// equal to 1e-12, and to each other, for vectors of 0 to
// 3·10^5 middles, sparse and dense masks, any overlap, cut anywhere by the
// merge path (sizes that are not multiples of the grid, ties at the cuts),
// and for real composition vectors. Every test skips, showing why, without
// a CUDA GPU.
#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cvtree_gpu.hpp"
#include "packed.hpp"
#include "vector.hpp"

using namespace flowd::cvtree;

namespace {

#define REQUIRE_GPU()                                                         \
  do {                                                                        \
    std::string why;                                                          \
    if (gpu::device_count(&why) == 0) GTEST_SKIP() << "no CUDA GPU: " << why; \
  } while (0)

// A vector of `n` middles drawn from [0, range), each with `letters` of the
// 20 letters (on average) on either side and each expected k-mer seen with
// probability `seen`; unit length. Not a proteome's, but any vector the
// layout can hold.
CompositionVector random_vector(std::mt19937_64& rng, std::size_t n, std::uint64_t range, double letters, double seen) {
  std::uniform_int_distribution<std::uint64_t> middle(0, range - 1);
  std::bernoulli_distribution letter(letters / 20.0), is_seen(seen);
  std::normal_distribution<double> value(0.0, 1.0);
  std::vector<std::uint64_t> m(n);
  for (auto& x : m)
    x = middle(rng);
  std::sort(m.begin(), m.end());
  m.erase(std::unique(m.begin(), m.end()), m.end());
  CompositionVector v;
  v.k = 5;
  double norm2 = 0;
  std::uint64_t expected = 0;
  for (const std::uint64_t x : m) {
    std::uint64_t left = 0, right = 0;
    for (unsigned l = 0; l < 20; ++l) {
      if (letter(rng)) left |= std::uint64_t{1} << l;
      if (letter(rng)) right |= std::uint64_t{1} << l;
    }
    if (left == 0) left = 1;
    if (right == 0) right = std::uint64_t{1} << 19;
    v.middles.push_back(x);
    v.masks.push_back(left | right << 32);
    v.starts.push_back(static_cast<std::uint32_t>(v.ends.size()));
    expected += static_cast<std::uint64_t>(std::popcount(left) * std::popcount(right));
    for (unsigned a = 0; a < 20; ++a)
      for (unsigned b = 0; b < 20; ++b)
        if ((left >> a & 1) && (right >> b & 1) && is_seen(rng)) {
          v.ends.push_back(end_pair(a, b));
          v.values.push_back(value(rng));
          norm2 += v.values.back() * v.values.back();
        }
  }
  v.starts.push_back(static_cast<std::uint32_t>(v.ends.size()));
  norm2 += static_cast<double>(expected - v.ends.size());
  const double inv = norm2 > 0 ? 1.0 / std::sqrt(norm2) : 1.0;
  for (double& x : v.values)
    x *= inv;
  v.unseen = -inv;
  return v;
}

// A vector's bytes in device memory, as the engine's device cache holds them.
struct OnDevice {
  explicit OnDevice(const CompositionVector& v) {
    std::vector<double> host((packed_size(v) + 7) / 8);
    const std::span<std::byte> b(reinterpret_cast<std::byte*>(host.data()), packed_size(v));
    pack(v, b);
    bytes = std::make_unique<gpu::DeviceBytes>(b.data(), b.size());
    vector = gpu::device_vector(bytes->data(), v.middles.size(), v.ends.size());
  }
  std::unique_ptr<gpu::DeviceBytes> bytes;
  gpu::DeviceVector vector;
};

// Both walks must give the CPU's sum; they are checked against each other
// here and each against the CPU by the callers.
double on_gpu(const CompositionVector& a, const CompositionVector& b, gpu::Scratch& scratch) {
  const OnDevice da(a), db(b);
  const double by_middle = gpu::cosine(da.vector, db.vector, scratch, nullptr, gpu::Walk::by_middle);
  const double by_kmer = gpu::cosine(da.vector, db.vector, scratch, nullptr, gpu::Walk::by_kmer);
  EXPECT_NEAR(by_middle, by_kmer, 1e-12) << "the walk by middle against the walk by k-mer";
  return by_kmer;
}

double on_cpu(const CompositionVector& a, const CompositionVector& b) { return cosine(view_of(a), view_of(b)); }

}  // namespace

TEST(CvtreeGpu, CosineEqualsTheCpuForAnySizeAndOverlap) {
  REQUIRE_GPU();
  gpu::Scratch scratch;
  std::mt19937_64 rng(7);
  // Sizes around the grid's 262 144 threads; ranges from dense (most
  // middles shared) to sparse (few shared); few and many letters.
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{262143}, std::size_t{262145},
                        std::size_t{300'000}})
    for (std::uint64_t range : {std::uint64_t{2} * n + 2, std::uint64_t{20} * n + 20, std::uint64_t{3'200'000}})
      for (double letters : {2.0, 12.0}) {
        if (n > 1000 && letters > 2.0) continue;  // the big ones sparse: memcheck runs these too
        const CompositionVector a = random_vector(rng, n, range, letters, 0.3),
                                b = random_vector(rng, n / 2 + 1, range, letters, 0.2);
        SCOPED_TRACE(std::to_string(a.middles.size()) + " x " + std::to_string(b.middles.size()) + " middles in " +
                     std::to_string(range) + ", " + std::to_string(letters) + " letters");
        EXPECT_NEAR(on_gpu(a, b, scratch), on_cpu(a, b), 1e-12);
        EXPECT_NEAR(on_gpu(b, a, scratch), on_cpu(a, b), 1e-12);
        EXPECT_NEAR(on_gpu(a, a, scratch), 1.0, 1e-12) << "a unit vector with itself";
      }
}

TEST(CvtreeGpu, EmptyAndDisjointVectors) {
  REQUIRE_GPU();
  gpu::Scratch scratch;
  CompositionVector none;
  none.k = 5;
  none.starts = {0};
  none.unseen = -1.0;
  std::mt19937_64 rng(9);
  CompositionVector low = random_vector(rng, 50, 100, 6, 0.5), high = random_vector(rng, 50, 100, 6, 0.5);
  for (auto& m : high.middles)
    m += 1000;  // no middle in common
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
    for (int i = len(rng); i > 0; --i)
      seq += amino_acids[static_cast<std::size_t>(aa(rng))];
    one += ">a" + std::to_string(q) + "\n" + seq + "\n";
    for (char& c : seq)
      if (mutate(rng) == 0) c = amino_acids[static_cast<std::size_t>(aa(rng))];
    two += ">b" + std::to_string(q) + "\n" + seq + "\n";
  }
  for (int k : {5, 6}) {
    const CompositionVector x = composition_vector(parse_fasta(one, "one"), k);
    const CompositionVector y = composition_vector(parse_fasta(two, "two"), k);
    const double cpu = on_cpu(x, y), g = on_gpu(x, y, scratch);
    EXPECT_NEAR(g, cpu, 1e-12) << "k = " << k;
    EXPECT_GT(cpu, 0.05) << "related proteomes share structure";
  }
}

// The CVTree core (plugins/cvtree/core): reading proteomes as CVTree reads
// them (the letter mapping, trailing stops, bad input named), composition
// vectors by hand on a tiny proteome and against a dense reference of the
// formula written here, and the cosine against the dense one, to 1e-12.
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "packed.hpp"
#include "proteome.hpp"
#include "vector.hpp"

using namespace flowd::cvtree;

namespace {

std::uint64_t key_of(const std::string& kmer) {
  std::uint64_t k = 0;
  for (char c : kmer) k = k * alphabet + residue_code(c);
  return k;
}

// The formula, densely: counts over all 20^m m-mers for m = k, k-1, k-2,
// then a(α) wherever f0(α) ≠ 0, normalised. Index: the key.
std::map<std::uint64_t, double> dense_vector(const Proteome& p, int k) {
  auto count = [&](int m) {
    std::vector<double> c(static_cast<std::size_t>(std::pow(20.0, m)), 0.0);
    double total = 0;
    for (std::size_t q = 0; q < p.proteins(); ++q)
      for (std::size_t i = p.starts[q]; i + static_cast<std::size_t>(m) <= p.starts[q + 1]; ++i) {
        std::size_t key = 0;
        for (int j = 0; j < m; ++j) key = key * 20 + p.residues[i + static_cast<std::size_t>(j)];
        c[key] += 1;
        total += 1;
      }
    for (double& x : c) x /= total;
    return c;
  };
  const auto f = count(k), f1 = count(k - 1), f2 = count(k - 2);
  const std::size_t top = static_cast<std::size_t>(std::pow(20.0, k - 1)), mid = static_cast<std::size_t>(std::pow(20.0, k - 2));
  std::map<std::uint64_t, double> a;
  double norm = 0;
  for (std::size_t alpha = 0; alpha < f.size(); ++alpha) {
    const std::size_t prefix = alpha / 20, suffix = alpha % top, middle = (alpha / 20) % mid;
    if (f1[prefix] == 0 || f1[suffix] == 0 || f2[middle] == 0) continue;
    const double f0 = f1[prefix] * f1[suffix] / f2[middle];
    const double v = (f[alpha] - f0) / f0;
    a[alpha] = v;
    norm += v * v;
  }
  for (auto& [key, v] : a) v /= std::sqrt(norm);
  return a;
}

Proteome random_proteome(std::uint64_t seed, int proteins, int mean_length, int alphabet_used = 20) {
  std::mt19937_64 rng(seed);
  std::string fasta;
  std::uniform_int_distribution<int> len(mean_length / 2, mean_length * 3 / 2);
  std::uniform_int_distribution<int> aa(0, alphabet_used - 1);
  for (int q = 0; q < proteins; ++q) {
    fasta += ">p" + std::to_string(q) + " random\n";
    const int n = len(rng);
    for (int i = 0; i < n; ++i) fasta += amino_acids[static_cast<std::size_t>(aa(rng))];
    fasta += "\n";
  }
  return parse_fasta(fasta, "random");
}

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::path(FLOWD_TEST_TMP) / "cvtree-core";
  std::filesystem::create_directories(dir);
  return dir / name;
}

std::string error_of(const std::string& fasta) {
  try {
    parse_fasta(fasta, "'x.faa'");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(CvtreeProteome, MapsLettersAsCvtreeAndDropsATrailingStop) {
  const Proteome p = parse_fasta(">one\nbzux\njw*\n>two desc\r\nMK-\n\n>empty\n>three\nAcD\n", "t");
  ASSERT_EQ(p.proteins(), 4u);
  // b z u x j w -> D E C G A W; the trailing '*' and '-' dropped.
  std::vector<std::uint8_t> want;
  for (char c : std::string("DECGAWMKACD")) want.push_back(static_cast<std::uint8_t>(amino_acids.find(c)));
  EXPECT_EQ(p.residues, want);
  EXPECT_EQ(p.starts, (std::vector<std::size_t>{0, 6, 8, 8, 11}));
}

TEST(CvtreeProteome, BadInputNamesTheFileAndLine) {
  EXPECT_EQ(error_of(""), "'x.faa': no residues (an empty file)");
  EXPECT_EQ(error_of(">a\n>b\n"), "'x.faa': no residues (headers only)");
  EXPECT_EQ(error_of("MKV\n"), "'x.faa' line 1: sequence before the first header line ('>')");
  EXPECT_EQ(error_of(">a\nMK3V\n"), "'x.faa' line 2: '3' is not a residue");
  EXPECT_EQ(error_of(">a\nMK*\nV\n"), "'x.faa' line 2: '*' or '-' inside a protein (only a trailing one is dropped)");
}

TEST(CvtreeProteome, ReadsGzippedAndPlainFilesAlike) {
  const std::string fasta = ">a\nMKVLAAGIVGLLLAC\n>b\nMSTNPKPQRKTKRNTNRRPQDVKFPGG*\n";
  const auto plain = scratch("plain.faa"), gz = scratch("zipped.faa.gz");
  std::ofstream(plain) << fasta;
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, fasta.data(), static_cast<unsigned>(fasta.size()));
  gzclose(f);
  const Proteome a = read_proteome(plain), b = read_proteome(gz);
  EXPECT_EQ(a.residues, b.residues);
  EXPECT_EQ(a.starts, b.starts);
  try {
    read_proteome(scratch("missing.faa"));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("missing.faa"), std::string::npos) << e.what();
  }
}

// Issue 38: a .faa.gz cut short (a failed copy) used to be read as the
// sequence before the cut, and its distances came out near 0.5.
TEST(CvtreeProteome, ATruncatedOrCorruptGzipFileIsAnErrorNamingIt) {
  std::string fasta;
  for (int i = 0; i < 4000; ++i) fasta += ">p" + std::to_string(i) + "\nMKVLAAGIVGLLLACMSTNPKPQRKTKRNTNRRPQDVKFPGG\n";
  const auto whole = scratch("whole.faa.gz");
  gzFile f = gzopen(whole.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, fasta.data(), static_cast<unsigned>(fasta.size()));
  gzclose(f);
  std::ifstream in(whole, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(read_proteome(whole).starts.size(), 4001u);
  auto error_reading = [&](const std::string& name, const std::string& content) {
    const auto file = scratch(name);
    std::ofstream(file, std::ios::binary) << content;
    try {
      read_proteome(file);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Cut in the middle, and cut only in the 8-byte trailer (CRC and length).
  for (const std::size_t cut : {std::size_t{1000}, bytes.size() - 4}) {
    const std::string e = error_reading("cut.faa.gz", bytes.substr(0, cut));
    EXPECT_NE(e.find("cut.faa.gz"), std::string::npos) << e;
    EXPECT_NE(e.find("truncated gzip file"), std::string::npos) << e;
  }
  std::string flipped = bytes;
  for (std::size_t i = bytes.size() / 2; i < bytes.size() / 2 + 32; ++i) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
  const std::string e = error_reading("flipped.faa.gz", flipped);
  EXPECT_NE(e.find("flipped.faa.gz': cannot read"), std::string::npos) << e;
}

// ACDA at k = 3, by hand: 1-mers A 2/4, C 1/4, D 1/4; 2-mers AC, CD, DA 1/3
// each; 3-mers ACD, CDA 1/2 each. f0(ACD) = f0(CDA) = (1/3)(1/3)/(1/4) =
// 4/9, so a = (1/2 - 4/9)/(4/9) = 1/8; DAC is expected, f0 = (1/3)(1/3)/(2/4)
// = 2/9, and never seen: a = -1. Normalised by sqrt(1/64 + 1/64 + 1).
TEST(CvtreeVector, ATinyProteomeByHand) {
  const CompositionVector v = composition_vector(parse_fasta(">p\nACDA\n", "t"), 3);
  const auto e = entries(v);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].first, key_of("ACD"));
  EXPECT_EQ(e[1].first, key_of("CDA"));
  EXPECT_EQ(e[2].first, key_of("DAC"));
  const double norm = std::sqrt(1.0 / 64 + 1.0 / 64 + 1.0);
  EXPECT_NEAR(e[0].second, 0.125 / norm, 1e-15);
  EXPECT_NEAR(e[1].second, 0.125 / norm, 1e-15);
  EXPECT_NEAR(e[2].second, -1.0 / norm, 1e-15);
  // As stored: middles C, D (ACD, CDA seen) and A (DAC expected, unseen).
  EXPECT_EQ(v.middles, (std::vector<std::uint64_t>{key_of("A"), key_of("C"), key_of("D")}));
  EXPECT_EQ(v.ends.size(), 2u);
  EXPECT_EQ(expected_count(view_of(v)), 3u);
  EXPECT_NEAR(v.unseen, -1.0 / norm, 1e-15);
}

TEST(CvtreeVector, KmersNeverCrossProteins) {
  // AC|DA has no 3-mer: were the proteins joined, ACD and CDA would count.
  try {
    composition_vector(parse_fasta(">a\nAC\n>b\nDA\n", "t"), 3);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "no 3-mers: every protein is shorter than 3 residues");
  }
  EXPECT_THROW(composition_vector(parse_fasta(">a\nACDEFGHIKLMNPQ\n", "t"), 2), std::invalid_argument);
  EXPECT_THROW(composition_vector(parse_fasta(">a\nACDEFGHIKLMNPQ\n", "t"), 13), std::invalid_argument);
}

TEST(CvtreeVector, EqualsTheDenseFormulaAndSoDoesTheCosine) {
  for (int k : {3, 4, 5}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    // A skewed alphabet on one proteome: many expected k-mers never seen.
    const Proteome p = random_proteome(11, 300, 120), q = random_proteome(12, 200, 150, 14);
    const CompositionVector vp = composition_vector(p, k), vq = composition_vector(q, k);
    for (const auto* pair : {&vp, &vq}) {
      const auto& v = *pair;
      const auto ref = dense_vector(pair == &vp ? p : q, k);
      const auto e = entries(v);
      ASSERT_EQ(e.size(), ref.size());
      ASSERT_EQ(expected_count(view_of(v)), ref.size());
      std::size_t i = 0;
      for (const auto& [key, value] : ref) {
        ASSERT_EQ(e[i].first, key);
        ASSERT_NEAR(e[i].second, value, 1e-12) << key;
        ++i;
      }
    }
    const auto rp = dense_vector(p, k), rq = dense_vector(q, k);
    double want = 0;
    for (const auto& [key, value] : rp)
      if (auto it = rq.find(key); it != rq.end()) want += value * it->second;
    EXPECT_NEAR(cosine(view_of(vp), view_of(vq)), want, 1e-12);
    EXPECT_NEAR(cosine(view_of(vq), view_of(vp)), want, 1e-12);
    EXPECT_NEAR(cosine(view_of(vp), view_of(vp)), 1.0, 1e-12) << "unit length";
  }
}

// The bytes an item carries (core/packed.hpp): the same vector back, and
// bytes that do not fit refused with the reason.
TEST(CvtreeVector, PacksToBytesAndBack) {
  const CompositionVector v = composition_vector(random_proteome(5, 100, 90), 5);
  std::vector<double> storage((packed_size(v) + 7) / 8);
  const std::span<std::byte> bytes(reinterpret_cast<std::byte*>(storage.data()), packed_size(v));
  pack(v, bytes);
  const VectorView u = unpack(bytes, 5, v.middles.size(), v.ends.size(), true);
  EXPECT_TRUE(std::ranges::equal(u.middles, v.middles));
  EXPECT_TRUE(std::ranges::equal(u.masks, v.masks));
  EXPECT_TRUE(std::ranges::equal(u.starts, v.starts));
  EXPECT_TRUE(std::ranges::equal(u.ends, v.ends));
  EXPECT_TRUE(std::ranges::equal(u.values, v.values));
  EXPECT_EQ(u.unseen, v.unseen);
  EXPECT_EQ(cosine(u, view_of(v)), cosine(view_of(v), view_of(v)));

  const auto refused = [&](std::span<const std::byte> b, int k, std::size_t middles, std::size_t seen) {
    try {
      unpack(b, k, middles, seen, true);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(refused(bytes, 6, v.middles.size(), v.ends.size()).find("header says k = 5"), std::string::npos);
  EXPECT_NE(refused(bytes.first(bytes.size() - 8), 5, v.middles.size(), v.ends.size()).find("do not hold"),
            std::string::npos);
  // Two middles swapped: refused when checked in full.
  std::swap(storage[layout::offsets(v.middles.size(), v.ends.size()).middles / 8],
            storage[layout::offsets(v.middles.size(), v.ends.size()).middles / 8 + 1]);
  EXPECT_NE(refused(bytes, 5, v.middles.size(), v.ends.size()).find("not sorted by middle"), std::string::npos);
}

// Middles only one proteome has, letters only one uses, and a proteome with
// itself: the cross terms (seen against unseen) and the count of k-mers
// neither saw, beside the dense formula.
TEST(CvtreeVector, CosineOfDisjointAndIdenticalProteomes) {
  const Proteome p = random_proteome(21, 50, 60, 8), q = random_proteome(22, 50, 60, 20);
  for (int k : {3, 4}) {
    const CompositionVector vp = composition_vector(p, k), vq = composition_vector(q, k);
    const auto rp = dense_vector(p, k), rq = dense_vector(q, k);
    double want = 0;
    for (const auto& [key, value] : rp)
      if (auto it = rq.find(key); it != rq.end()) want += value * it->second;
    EXPECT_NEAR(cosine(view_of(vp), view_of(vq)), want, 1e-12) << "k = " << k;
    EXPECT_NEAR(cosine(view_of(vq), view_of(vq)), 1.0, 1e-12);
  }
}

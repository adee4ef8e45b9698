// workflows/cvtree.json as users run it (--set input=... output=... k=...),
// on proteomes generated along a known tree (tools/cvtree): the distances
// are the core's formula to the last digit printed, the neighbour-joining
// tree has the true topology, a small cache and worker processes give the
// same matrices, and bad input (an empty or header-only file) fails naming
// the file, with nothing written.
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include <gtest/gtest.h>

#include "cvtree/generate.hpp"
#include "proteome.hpp"
#include "runtime/workers.hpp"
#include "support/cli.hpp"
#include "tree.hpp"
#include "vector.hpp"

using namespace flowd;
namespace fs = std::filesystem;

namespace {

// 8 proteomes of about 800 proteins along a random tree, as files.
struct DataSet {
  fs::path dir;
  std::string truth;
  std::vector<cvtree::synth::Proteome> proteomes;
};

DataSet make_data(const fs::path& root, std::uint64_t seed = 4) {
  cvtree::synth::Params p;
  p.proteomes = 8;
  p.proteins = 800;
  p.seed = seed;
  auto set = cvtree::synth::generate(p);
  DataSet d{root / "proteomes", set.newick, std::move(set.proteomes)};
  fs::create_directories(d.dir);
  for (const auto& pr : d.proteomes) std::ofstream(d.dir / (pr.name + ".faa")) << pr.fasta;
  return d;
}

runtime::RunReport run_cvtree(const std::vector<std::string>& sets, int gpus = 0) {
  return test::run_shipped("cvtree.json", sets, gpus);
}

using test::why;

struct Phylip {
  std::vector<std::string> names;
  std::vector<std::vector<double>> d;
};

Phylip read_phylip(const fs::path& file) {
  std::ifstream in(file);
  Phylip p;
  std::size_t n = 0;
  in >> n;
  for (std::size_t i = 0; i < n; ++i) {
    std::string name;
    in >> name;
    p.names.push_back(name);
    p.d.emplace_back(n);
    for (double& x : p.d.back()) in >> x;
  }
  return p;
}

}  // namespace

TEST(CvtreeWorkflows, DistancesAreTheFormulaAndTheTreeIsTheTrueOne) {
  const auto dir = test::scratch();
  const DataSet d = make_data(dir);
  const auto out = dir / "out";
  const auto r = run_cvtree({"input=" + d.dir.string(), "output=" + out.string(), "k=[5, 6]"});
  ASSERT_EQ(r.status, runtime::RunStatus::succeeded) << why(r);
  for (int k : {5, 6}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    const Phylip m = read_phylip(out / ("distances_k" + std::to_string(k) + ".phylip"));
    ASSERT_EQ(m.names.size(), 8u);
    // The direct computation: the core's vectors and cosine of the same files.
    std::vector<cvtree::CompositionVector> vs;
    for (const auto& name : m.names)
      vs.push_back(cvtree::composition_vector(cvtree::read_proteome(d.dir / (name + ".faa")), k));
    for (std::size_t i = 0; i < 8; ++i)
      for (std::size_t j = 0; j < 8; ++j) {
        EXPECT_EQ(m.d[i][j], m.d[j][i]);
        if (i == j) {
          EXPECT_EQ(m.d[i][j], 0.0);
          continue;
        }
        const double want = (1.0 - cvtree::cosine(cvtree::view_of(vs[i]), cvtree::view_of(vs[j]))) / 2.0;
        EXPECT_EQ(m.d[i][j], want) << m.names[i] << " " << m.names[j] << ": %.17g round-trips";
        EXPECT_GT(m.d[i][j], 0.0);
        EXPECT_LT(m.d[i][j], 1.0);
      }
    const std::string newick = test::slurp(out / ("tree_k" + std::to_string(k) + ".nwk"));
    EXPECT_EQ(cvtree::robinson_foulds(cvtree::parse_newick(newick), cvtree::parse_newick(d.truth)), 0u)
        << "NJ: " << newick << "\ntruth: " << d.truth;
  }
  EXPECT_TRUE(fs::exists(out / "cvtree.h5"));
}

TEST(CvtreeWorkflows, ASmallCacheAndWorkerProcessesGiveTheSameMatrix) {
  const auto dir = test::scratch();
  const DataSet d = make_data(dir, 9);
  const auto one = run_cvtree({"input=" + d.dir.string(), "output=" + (dir / "all").string()});
  ASSERT_EQ(one.status, runtime::RunStatus::succeeded) << why(one);
  const auto small = run_cvtree({"input=" + d.dir.string(), "output=" + (dir / "small").string(), "cache_items=5"});
  ASSERT_EQ(small.status, runtime::RunStatus::succeeded) << why(small);
  EXPECT_EQ(test::slurp(dir / "all" / "distances_k5.phylip"), test::slurp(dir / "small" / "distances_k5.phylip"));
  const std::string wf = (fs::path(FLOWD_SOURCE_DIR) / "workflows" / "cvtree.json").string();
  const auto two = test::flowd_cmd(dir, {wf, "--workers", "2", "--worker-cpus", "1", "--no-progress", "--set",
                                         "input=" + d.dir.string(), "--set", "output=" + (dir / "two").string()});
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(test::slurp(dir / "all" / "distances_k5.phylip"), test::slurp(dir / "two" / "distances_k5.phylip"));
  EXPECT_EQ(test::slurp(dir / "all" / "tree_k5.nwk"), test::slurp(dir / "two" / "tree_k5.nwk"));
}

// cvtree.compare's GPU variant (merge path over vectors in the GPU's cache)
// through the engine, beside the CPU run: every distance within 1e-12.
TEST(CvtreeWorkflows, TheGpuGivesTheDistancesOfTheCpu) {
  try {
    (void)runtime::make_workers(1, runtime::GpuSpec{runtime::GpuSpec::Mode::count, 1, 1.0}, 12e9);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no CUDA GPU for the all-pairs GPU lane: " << e.what();
  }
  const auto dir = test::scratch();
  const DataSet d = make_data(dir, 6);
  const auto cpu = run_cvtree({"input=" + d.dir.string(), "output=" + (dir / "cpu").string(), "k=[5, 6]"});
  ASSERT_EQ(cpu.status, runtime::RunStatus::succeeded) << why(cpu);
  const auto gpu = run_cvtree({"input=" + d.dir.string(), "output=" + (dir / "gpu").string(), "k=[5, 6]"}, 1);
  ASSERT_EQ(gpu.status, runtime::RunStatus::succeeded) << why(gpu);
  std::uint64_t gpu_pairs = 0;
  for (const auto& lane : gpu.config.at("allpairs").at(0).at("lanes"))
    if (lane.at("name").get<std::string>().starts_with("gpu")) gpu_pairs += lane.at("pairs").get<std::uint64_t>();
  EXPECT_GT(gpu_pairs, 0u);
  double worst = 0;
  for (int k : {5, 6}) {
    const auto name = "distances_k" + std::to_string(k) + ".phylip";
    const Phylip a = read_phylip(dir / "cpu" / name), b = read_phylip(dir / "gpu" / name);
    ASSERT_EQ(a.names, b.names);
    for (std::size_t i = 0; i < a.d.size(); ++i)
      for (std::size_t j = 0; j < a.d.size(); ++j) {
        EXPECT_NEAR(b.d[i][j], a.d[i][j], 1e-12) << k << " " << a.names[i] << " " << a.names[j];
        worst = std::max(worst, std::abs(b.d[i][j] - a.d[i][j]));
      }
  }
  std::cout << "GPU against CPU: distances differ by at most " << worst << " (" << gpu_pairs
            << " of the pairs on the GPU)\n";
}

TEST(CvtreeWorkflows, AnEmptyOrHeaderOnlyFileFailsNamingItAndWritesNothing) {
  const auto dir = test::scratch();
  const DataSet d = make_data(dir, 2);
  for (const auto& [name, text] : {std::pair<std::string, std::string>{"empty.faa", ""},
                                   std::pair<std::string, std::string>{"headers.faa", ">a\n>b protein\n"},
                                   std::pair<std::string, std::string>{"digits.faa", ">a\nMKV\nMK7L\n"}}) {
    SCOPED_TRACE(name);
    std::ofstream(d.dir / name) << text;
    const auto out = dir / ("out-" + name);
    const auto r = run_cvtree({"input=" + d.dir.string(), "output=" + out.string()});
    EXPECT_NE(r.status, runtime::RunStatus::succeeded);
    EXPECT_NE(why(r).find(name), std::string::npos) << why(r);
    EXPECT_FALSE(fs::exists(out / "distances_k5.phylip"));
    EXPECT_FALSE(fs::exists(out / "cvtree.h5"));
    fs::remove(d.dir / name);
  }
}

TEST(CvtreeWorkflows, BadKIsRefusedBeforeAnyWork) {
  const auto dir = test::scratch();
  for (const char* k : {"k=2", "k=[5, 5]", "k=[]", "k=\"five\"", "k=[5, [6]]"}) {
    SCOPED_TRACE(k);
    try {
      (void)run_cvtree({"input=" + dir.string(), "output=" + (dir / "out").string(), k});
      ADD_FAILURE() << "accepted";
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("parameter 'k'") != std::string::npos || what.find("/vars/k") != std::string::npos)
          << what;
    }
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
}

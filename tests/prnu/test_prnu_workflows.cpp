// The PRNU workflows as users run them (workflows/prnu-identify.json and
// prnu-allpairs.json with --set overrides) on cameras generated here: every
// photo is attributed to its own camera, the all-pairs scores do not depend
// on the cache size, and bad input (a truncated JPEG, images of mixed sizes,
// an empty camera folder) fails naming the file, with nothing written.
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "prnu/generate.hpp"
#include "runtime/workers.hpp"
#include "support/cli.hpp"

using namespace flowd;
namespace fs = std::filesystem;

namespace {

// 2 cameras of one model, 320x256 sensors: 4 flat-fields (PNG) and 4 JPEG
// photos each, one of them portrait.
struct DataSet {
  fs::path flats, photos;
};

DataSet make_data(const fs::path& dir) {
  prnu::Params p;
  p.cameras = 2;
  p.width = 320;
  p.height = 256;
  p.flatfields = 4;
  p.images = 4;
  p.seed = 5;
  p.sigma_min = p.sigma_max = 0.015;
  DataSet d{dir / "flats", dir / "photos"};
  fs::create_directories(d.flats);
  fs::create_directories(d.photos);
  for (int c = 0; c < p.cameras; ++c) {
    const auto cam = prnu::make_camera(p, c);
    for (const auto& item : prnu::plan(p, c)) {
      auto shot = item.shot;
      if (!item.flatfield) shot.rotation = item.index == 1 ? 90 : 0;
      const auto bytes = prnu::shoot(cam, shot);
      const fs::path file = (item.flatfield ? d.flats : d.photos) / fs::path(item.file).filename();
      std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                  static_cast<std::streamsize>(bytes.size()));
    }
  }
  return d;
}

runtime::RunReport run_file(const char* workflow, const std::vector<std::string>& sets, int gpus = 0) {
  return test::run_shipped(workflow, sets, gpus);
}

using test::why;

// CSV rows as {first column, second column} -> the rest of the line.
std::map<std::pair<std::string, std::string>, std::string> rows(const fs::path& csv) {
  std::map<std::pair<std::string, std::string>, std::string> m;
  const auto lines = test::lines(csv);
  for (std::size_t k = 1; k < lines.size(); ++k) {
    std::stringstream ss(lines[k]);
    std::string a, b, rest;
    std::getline(ss, a, ',');
    std::getline(ss, b, ',');
    std::getline(ss, rest);
    m[{a, b}] = rest;
  }
  return m;
}

}  // namespace

TEST(PrnuWorkflows, IdentifyAttributesEveryPhotoToItsCamera) {
  const auto dir = test::scratch();
  const DataSet d = make_data(dir);
  const auto out = dir / "out";
  const auto r = run_file("prnu-identify.json", {"flatfields=" + d.flats.string(), "images=" + d.photos.string(),
                                                 "output=" + out.string(), "crop=256"});
  ASSERT_EQ(r.status, runtime::RunStatus::succeeded) << why(r);
  const auto lines = test::lines(out / "scores.csv");
  ASSERT_EQ(lines.size(), 1u + 2 * 8);
  EXPECT_EQ(lines[0], "fingerprint,image,ncc,pce");
  // The best-scoring fingerprint of each photo (by PCE) is its camera's.
  std::map<std::string, std::pair<double, std::string>> best;
  for (const auto& [ab, rest] : rows(out / "scores.csv")) {
    const double pce = std::stod(rest.substr(rest.find(',') + 1));
    auto& b = best[ab.second];
    if (b.second.empty() || pce > b.first) b = {pce, ab.first};
  }
  ASSERT_EQ(best.size(), 8u);
  for (const auto& [photo, b] : best) EXPECT_EQ(photo.substr(0, photo.rfind('_')), b.second) << photo;
  EXPECT_TRUE(fs::exists(out / "scores.h5"));
  // The plot a person reads first (issue 38: no tick values): ink below the
  // x axis and left of the y axis where the values 0.0 ... 1.0 are, and in
  // the title line.
  const cv::Mat roc = cv::imread((out / "roc.png").string(), cv::IMREAD_GRAYSCALE);
  ASSERT_EQ(roc.size(), cv::Size(640, 640));
  auto ink = [&](cv::Rect where) { return cv::countNonZero(roc(where) < 100); };
  EXPECT_GT(ink({60, 592, 560, 18}), 50) << "x-axis values";
  EXPECT_GT(ink({30, 40, 34, 560}), 50) << "y-axis values";
  EXPECT_GT(ink({60, 10, 400, 28}), 50) << "the title";
}

TEST(PrnuWorkflows, AllPairsScoresDoNotDependOnTheCacheSize) {
  const auto dir = test::scratch();
  const DataSet d = make_data(dir);
  for (const char* cache : {"0", "5"}) {
    const auto r = run_file("prnu-allpairs.json", {"images=" + d.photos.string(), "output=" + (dir / cache).string(),
                                                   "crop=256", std::string("cache_items=") + cache});
    ASSERT_EQ(r.status, runtime::RunStatus::succeeded) << why(r);
  }
  const auto all = rows(dir / "0" / "scores.csv"), small = rows(dir / "5" / "scores.csv");
  EXPECT_EQ(all.size(), 8u * 7u / 2u);
  EXPECT_EQ(all, small);
  EXPECT_TRUE(fs::exists(dir / "0" / "heatmap.png"));
}

// The GPU variant of prnu.compare (ops/compare_gpu.cpp) beside the CPU one,
// through the engine: the NFI residuals of a GPU lane's own loads on cuFFT,
// its pairs' NCC and PCE on the GPU from its device cache. Tolerances: NCC
// within 1e-6, PCE within 1e-4 relative (absolute below 1); measured on an
// H200: 6e-9 and 8e-7 here, 6e-9 and 5.5e-6 over the 44 850 pairs of 300
// photos (docs/benchmarks.md §13.5).
TEST(PrnuWorkflows, AllPairsOnTheGpuGivesTheScoresOfTheCpu) {
  try {
    (void)runtime::make_workers(1, runtime::GpuSpec{runtime::GpuSpec::Mode::count, 1, 1.0}, 12e9);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no CUDA GPU for the all-pairs GPU lane: " << e.what();
  }
  const auto dir = test::scratch();
  const DataSet d = make_data(dir);
  const std::vector<std::string> common = {"images=" + d.photos.string(), "crop=256", "method=nfi",
                                           "load_ahead=false"};
  auto with = [&](const std::string& out) {
    auto v = common;
    v.push_back("output=" + (dir / out).string());
    return v;
  };
  const auto cpu = run_file("prnu-allpairs.json", with("cpu"));
  ASSERT_EQ(cpu.status, runtime::RunStatus::succeeded) << why(cpu);
  const auto gpu = run_file("prnu-allpairs.json", with("gpu"), 1);
  ASSERT_EQ(gpu.status, runtime::RunStatus::succeeded) << why(gpu);
  std::uint64_t gpu_pairs = 0;
  for (const auto& lane : gpu.config.at("allpairs").at(0).at("lanes"))
    if (lane.at("name").get<std::string>().starts_with("gpu")) gpu_pairs += lane.at("pairs").get<std::uint64_t>();
  EXPECT_GT(gpu_pairs, 0u) << gpu.config.at("allpairs").dump();
  EXPECT_GT(gpu.config.at("allpairs").at(0).at("device_cache").at("loads").get<std::uint64_t>(), 0u);
  const auto want = rows(dir / "cpu" / "scores.csv"), got = rows(dir / "gpu" / "scores.csv");
  ASSERT_EQ(want.size(), 8u * 7u / 2u);
  ASSERT_EQ(got.size(), want.size());
  double worst_ncc = 0, worst_pce = 0;
  for (const auto& [ab, rest] : want) {
    const auto& other = got.at(ab);
    const double ncc_c = std::stod(rest), pce_c = std::stod(rest.substr(rest.find(',') + 1));
    const double ncc_g = std::stod(other), pce_g = std::stod(other.substr(other.find(',') + 1));
    worst_ncc = std::max(worst_ncc, std::abs(ncc_g - ncc_c));
    worst_pce = std::max(worst_pce, std::abs(pce_g - pce_c) / std::max(1.0, std::abs(pce_c)));
    EXPECT_NEAR(ncc_g, ncc_c, 1e-6) << ab.first << "," << ab.second;
    EXPECT_NEAR(pce_g, pce_c, 1e-4 * std::max(1.0, std::abs(pce_c))) << ab.first << "," << ab.second;
  }
  std::cout << "GPU against CPU over " << want.size() << " pairs: NCC differs by at most " << worst_ncc
            << ", PCE by at most " << worst_pce << " (relative)\n";
}

// As a cluster user runs it: fingerprints on two worker processes, the
// all-pairs stage in the coordinator; the scores are those of one process.
TEST(PrnuWorkflows, AClusterRunGivesTheScoresOfOneProcess) {
  const auto dir = test::scratch();
  const DataSet d = make_data(dir);
  const std::string wf = (fs::path(FLOWD_SOURCE_DIR) / "workflows" / "prnu-identify.json").string();
  const std::vector<std::string> sets = {"--set", "flatfields=" + d.flats.string(), "--set",
                                         "images=" + d.photos.string(), "--set", "crop=256", "--no-progress"};
  auto one = std::vector<std::string>{wf, "--cpu", "2", "--set", "output=" + (dir / "one").string()};
  auto two = std::vector<std::string>{wf, "--workers", "2", "--worker-cpus", "1", "--set",
                                      "output=" + (dir / "two").string()};
  one.insert(one.end(), sets.begin(), sets.end());
  two.insert(two.end(), sets.begin(), sets.end());
  const auto a = test::flowd_cmd(dir, one);
  ASSERT_EQ(a.code, 0) << a.err;
  const auto b = test::flowd_cmd(dir, two);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(rows(dir / "one" / "scores.csv"), rows(dir / "two" / "scores.csv"));
  EXPECT_EQ(rows(dir / "two" / "scores.csv").size(), 16u);
}

TEST(PrnuWorkflows, ATruncatedJpegFailsNamingTheFileAndWritesNothing) {
  const auto dir = test::scratch();
  const DataSet d = make_data(dir);
  const fs::path victim = d.photos / "camB_02.jpg";
  fs::resize_file(victim, fs::file_size(victim) / 2);
  const auto out = dir / "out";
  const auto r = run_file("prnu-identify.json", {"flatfields=" + d.flats.string(), "images=" + d.photos.string(),
                                                 "output=" + out.string(), "crop=256"});
  ASSERT_NE(r.status, runtime::RunStatus::succeeded);
  EXPECT_NE(why(r).find("camB_02.jpg"), std::string::npos) << why(r);
  EXPECT_NE(why(r).find("truncated JPEG"), std::string::npos) << why(r);
  EXPECT_FALSE(fs::exists(out / "scores.csv"));
  EXPECT_FALSE(fs::exists(out / "scores.h5"));
}

TEST(PrnuWorkflows, MixedSizesInACameraAndAnEmptyFolderFailNamingThem) {
  const auto dir = test::scratch();
  const DataSet d = make_data(dir);
  // One flat-field of camA at another size: with crop 0 sizes must agree.
  prnu::Params p;
  p.width = 288;
  p.height = 256;
  prnu::Shot flat;
  flat.scene = prnu::Scene::flat;
  flat.seed = 9;
  const auto bytes = prnu::shoot(prnu::make_camera(p, 0), flat);
  std::ofstream(d.flats / "camA_09.png", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  auto r = run_file("prnu-identify.json", {"flatfields=" + d.flats.string(), "images=" + d.photos.string(),
                                           "output=" + (dir / "out").string(), "crop=0"});
  ASSERT_NE(r.status, runtime::RunStatus::succeeded);
  EXPECT_NE(why(r).find("camA_09.png"), std::string::npos) << why(r);
  EXPECT_NE(why(r).find("288x256"), std::string::npos) << why(r);

  fs::create_directories(dir / "empty");
  r = run_file("prnu-identify.json", {"flatfields=" + (dir / "empty").string(), "images=" + d.photos.string(),
                                      "output=" + (dir / "out2").string()});
  ASSERT_NE(r.status, runtime::RunStatus::succeeded);
  EXPECT_NE(why(r).find("empty"), std::string::npos) << why(r);
  EXPECT_FALSE(fs::exists(dir / "out2" / "scores.csv"));
}

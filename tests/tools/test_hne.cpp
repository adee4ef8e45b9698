// The synthetic H&E generator: determinism, sizes, and whether the truth and
// the pixels agree the way a segmentation method relies on.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "hne/generate.hpp"

namespace fs = std::filesystem;
using flowd::hne::generate;
using flowd::hne::Params;

namespace {

Params small(int w = 384, int h = 256) {
  Params p;
  p.width = w;
  p.height = h;
  return p;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0.0;
}

int max_label(const cv::Mat& labels) {
  double hi = 0;
  cv::minMaxLoc(labels, nullptr, &hi);
  return static_cast<int>(hi);
}

// Haematoxylin optical density by Ruifrok-Johnston colour deconvolution
// with the textbook vectors (not the per-image ones the generator drew).
cv::Mat haematoxylin_od(const cv::Mat& rgb) {
  const cv::Vec3d h = cv::normalize(cv::Vec3d(0.65, 0.70, 0.29));
  const cv::Vec3d e = cv::normalize(cv::Vec3d(0.07, 0.99, 0.11));
  const cv::Vec3d r = cv::normalize(h.cross(e));
  const cv::Matx33d m(h[0], e[0], r[0], h[1], e[1], r[1], h[2], e[2], r[2]);
  const cv::Matx33d inv = m.inv();
  cv::Mat out(rgb.size(), CV_64F);
  for (int y = 0; y < rgb.rows; ++y)
    for (int x = 0; x < rgb.cols; ++x) {
      const cv::Vec3b px = rgb.at<cv::Vec3b>(y, x);
      cv::Vec3d od;
      for (int c = 0; c < 3; ++c)
        od[c] = -std::log10((px[c] + 1.0) / 256.0);
      out.at<double>(y, x) = (inv * od)[0];
    }
  return out;
}

struct CliRun {
  int rc;
  std::string out;
};

fs::path scratch() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path p = fs::path(FLOWD_TEST_TMP) / "tools" / info->test_suite_name() / info->name();
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

CliRun synth(const std::string& args, const fs::path& dir) {
  const auto log = dir / "synth.log";
  const std::string cmd = std::string(FLOWD_HNE_SYNTH) + " " + args + " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

}  // namespace

TEST(Hne, SameParametersGiveTheSameBytes) {
  const Params p = small();
  const auto a = generate(p, 0), b = generate(p, 0);
  EXPECT_TRUE(same(a.rgb, b.rgb));
  EXPECT_TRUE(same(a.labels, b.labels));
  Params q = p;
  q.seed = 2;
  EXPECT_FALSE(same(a.rgb, generate(q, 0).rgb));
  EXPECT_FALSE(same(a.rgb, generate(p, 1).rgb));
}

TEST(Hne, SizesAndTypes) {
  for (auto [w, h] : {std::pair{333, 171}, std::pair{1, 1}, std::pair{4096, 48}}) {
    const auto s = generate(small(w, h));
    ASSERT_EQ(s.rgb.type(), CV_8UC3) << w << "x" << h;
    ASSERT_EQ(s.labels.type(), CV_32S);
    EXPECT_EQ(s.rgb.cols, w);
    EXPECT_EQ(s.rgb.rows, h);
    EXPECT_EQ(s.labels.size(), s.rgb.size());
  }
}

TEST(Hne, LabelsAreConsecutive) {
  const auto s = generate(small(512, 512));
  const int n = max_label(s.labels);
  ASSERT_GT(n, 20);
  std::vector<int> area(static_cast<std::size_t>(n) + 1, 0);
  for (auto it = s.labels.begin<int>(); it != s.labels.end<int>(); ++it) {
    ASSERT_GE(*it, 0);
    ++area[static_cast<std::size_t>(*it)];
  }
  for (int i = 1; i <= n; ++i)
    EXPECT_GT(area[static_cast<std::size_t>(i)], 0) << "label " << i;
}

TEST(Hne, NucleiCarryTheHaematoxylin) {
  Params p = small(768, 768);
  p.background = 0.0;
  p.rbc = 0.0;
  const auto s = generate(p);
  const cv::Mat od = haematoxylin_od(s.rgb);
  const cv::Mat nuclei = s.labels > 0;
  const double in = cv::mean(od, nuclei)[0];
  const double out = cv::mean(od, ~nuclei)[0];
  std::printf("haematoxylin OD: nuclei %.3f, elsewhere %.3f\n", in, out);
  EXPECT_GT(in, 0.25);
  EXPECT_GT(in, 2.5 * out);
  // Purple-blue nuclei, pink surroundings.
  const cv::Scalar nuc = cv::mean(s.rgb, nuclei), rest = cv::mean(s.rgb, ~nuclei);
  EXPECT_GT(nuc[2], nuc[1]) << "nuclei: more blue than green";
  EXPECT_GT(rest[0], rest[1]) << "stroma: more red than green";
  EXPECT_LT(nuc[0] + nuc[1] + nuc[2], rest[0] + rest[1] + rest[2]);
}

TEST(Hne, NothingDarkWithoutNucleiOrRedCells) {
  Params p = small(512, 512);
  p.density = 0.0;
  p.rbc = 0.0;
  const auto s = generate(p);
  EXPECT_EQ(max_label(s.labels), 0);
  double hi = 0;
  cv::minMaxLoc(haematoxylin_od(s.rgb), nullptr, &hi);
  EXPECT_LT(hi, 0.3);
}

TEST(Hne, AllGlassIsBrightAndEmpty) {
  Params p = small(256, 256);
  p.background = 1.0;
  const auto s = generate(p);
  EXPECT_EQ(max_label(s.labels), 0);
  const cv::Scalar m = cv::mean(s.rgb);
  for (int c = 0; c < 3; ++c)
    EXPECT_GT(m[c], 215.0);
}

TEST(Hne, CountsScaleWithDensity) {
  Params p = small(1024, 1024);
  p.background = 0.0;
  int n[3];
  const double d[3] = {0.25, 0.5, 1.0};
  for (int i = 0; i < 3; ++i) {
    p.density = d[i];
    n[i] = max_label(generate(p).labels);
  }
  std::printf("nuclei at density 0.25/0.5/1: %d %d %d\n", n[0], n[1], n[2]);
  EXPECT_NEAR(static_cast<double>(n[1]) / n[0], 2.0, 0.4);
  EXPECT_NEAR(static_cast<double>(n[2]) / n[1], 2.0, 0.5);
  // A 256 um square of tumour tissue at density 1: a few hundred nuclei.
  EXPECT_GT(n[2], 150);
  EXPECT_LT(n[2], 1200);
}

TEST(Hne, DiametersScaleWithResolution) {
  // The same physical field at 40x and 20x: nuclei twice as wide at 40x.
  auto mean_diameter_um = [](double mpp, int side) {
    Params p = small(side, side);
    p.mpp = mpp;
    p.background = 0.0;
    const auto s = generate(p);
    const int n = max_label(s.labels);
    const double area_px = cv::countNonZero(s.labels > 0) / static_cast<double>(n);
    return 2.0 * std::sqrt(area_px / 3.14159265358979) * mpp;
  };
  const double d40 = mean_diameter_um(0.25, 1024), d20 = mean_diameter_um(0.5, 512);
  std::printf("mean equivalent diameter: %.2f um at 40x, %.2f um at 20x\n", d40, d20);
  EXPECT_NEAR(d40 / d20, 1.0, 0.15);
  for (double d : {d40, d20}) {
    EXPECT_GT(d, 5.0);
    EXPECT_LT(d, 10.0);
  }
}

TEST(Hne, InvalidParametersNameThemselves) {
  Params p = small();
  p.mpp = 0.0;
  try {
    generate(p);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mpp"), std::string::npos) << e.what();
  }
  p = small();
  p.width = 0;
  EXPECT_THROW(generate(p), std::invalid_argument);
  p = small();
  p.cluster = 1.5;
  EXPECT_THROW(generate(p), std::invalid_argument);
  EXPECT_THROW(generate(small(), -1), std::invalid_argument);
}

// The largest size the issue names (its speed is in docs/benchmarks.md).
TEST(Hne, A4096SquareImageIsFullOfNuclei) {
  Params p;
  p.width = p.height = 4096;
  const auto s = generate(p);
  EXPECT_EQ(s.rgb.size(), cv::Size(4096, 4096));
  EXPECT_EQ(s.labels.size(), cv::Size(4096, 4096));
  EXPECT_GT(max_label(s.labels), 3000);
}

TEST(HneCli, WritesImagesAndSixteenBitTruth) {
  const auto dir = scratch();
  const CliRun r = synth("--out " + dir.string() + " --count 2 --size 160x96 --seed 3 --mpp 0.5", dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  for (int i = 0; i < 2; ++i) {
    const std::string name = "hne-" + std::to_string(i) + ".png";
    const cv::Mat img = cv::imread((dir / "images" / name).string(), cv::IMREAD_UNCHANGED);
    const cv::Mat truth = cv::imread((dir / "truth" / name).string(), cv::IMREAD_UNCHANGED);
    ASSERT_EQ(img.type(), CV_8UC3) << name;
    ASSERT_EQ(truth.type(), CV_16U) << name;
    EXPECT_EQ(img.size(), cv::Size(160, 96));
    Params p = small(160, 96);
    p.seed = 3;
    p.mpp = 0.5;
    const auto s = generate(p, i);
    cv::Mat rgb, labels;
    cv::cvtColor(img, rgb, cv::COLOR_BGR2RGB);
    truth.convertTo(labels, CV_32S);
    EXPECT_TRUE(same(rgb, s.rgb)) << "the file holds what generate() gives";
    EXPECT_TRUE(same(labels, s.labels));
  }
  // Nothing but the images and the log: no temporary files left behind.
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    files += e.is_regular_file();
  EXPECT_EQ(files, 5);
}

TEST(HneCli, BadArgumentsFailClearly) {
  const auto dir = scratch();
  CliRun r = synth("--out " + dir.string() + " --size 100by100", dir);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--size must be WIDTHxHEIGHT"), std::string::npos) << r.out;
  r = synth("--out " + dir.string() + " --mpp 0", dir);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("mpp must be in"), std::string::npos) << r.out;
  r = synth("--size 10x10", dir);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--out is required"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "images"));
}

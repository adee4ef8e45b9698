// The TEM series generator (tools/tem) and flowd-tem-synth.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include <gtest/gtest.h>

#include "deformations.hpp"
#include "tem/generate.hpp"

namespace fs = std::filesystem;
namespace tem = flowd::tem;

namespace {

tem::Params small() {
  tem::Params p;
  p.frames = 6;
  p.width = 96;
  p.height = 80;
  p.seed = 9;
  return p;
}

std::string slurp(const fs::path& f) {
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(const std::string& args, const fs::path& log) {
  return WEXITSTATUS(std::system((std::string(FLOWD_TEM_SYNTH) + " " + args + " >" + log.string() + " 2>&1").c_str()));
}

}  // namespace

TEST(Tem, DeterministicInParamsAndIndex) {
  const tem::Params p = small();
  const cv::Mat a = tem::generate(p, 3), b = tem::generate(p, 3);
  ASSERT_EQ(a.type(), CV_16UC1);
  ASSERT_EQ(a.size(), cv::Size(96, 80));
  EXPECT_EQ(cv::norm(a, b, cv::NORM_INF), 0.0);
  EXPECT_GT(cv::norm(a, tem::generate(p, 4), cv::NORM_INF), 0.0);
  tem::Params other = p;
  other.seed = 10;
  EXPECT_GT(cv::norm(a, tem::generate(other, 3), cv::NORM_INF), 0.0);
}

TEST(Tem, DoseIsTheMeanCount) {
  tem::Params p = small();
  p.width = p.height = 256;
  p.dose = 4.0;
  const double mean = cv::mean(tem::generate(p, 0))[0];
  EXPECT_NEAR(mean, 4.0, 0.4);
}

TEST(Tem, TruthStartsAtTheIdentityAndDrifts) {
  tem::Params p = small();
  p.frames = 64;
  const auto t = tem::truth(p);
  ASSERT_EQ(t.size(), 64u);
  EXPECT_EQ(t[0].tx, 0.0);
  EXPECT_EQ(t[0].ty, 0.0);
  EXPECT_EQ(t[0].angle, 0.0);
  double path = 0.0;
  for (std::size_t k = 1; k < t.size(); ++k)
    path += std::hypot(t[k].tx - t[k - 1].tx, t[k].ty - t[k - 1].ty);
  EXPECT_NEAR(path / 63.0, p.drift, 0.25);                        // about `drift` pixels per frame
  EXPECT_GT(std::hypot(t.back().tx, t.back().ty), 2 * p.period);  // several periods in all
  // A series that is one frame longer has the same first motions.
  tem::Params longer = p;
  longer.frames = 65;
  EXPECT_EQ(tem::truth(longer)[63].tx, t[63].tx);
}

TEST(Tem, FrameNamesSortInFrameOrder) {
  tem::Params p = small();
  EXPECT_EQ(tem::frame_name(p, 4), "frame_004");
  p.frames = 12000;
  EXPECT_EQ(tem::frame_name(p, 42), "frame_00042");
}

TEST(Tem, BadParametersAreNamed) {
  tem::Params p = small();
  p.period = 1.0;
  try {
    tem::validate(p);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "flowd::tem: period must be in [3, 100] pixels, got 1.000000");
  }
  EXPECT_THROW(tem::generate(small(), 6), std::out_of_range);
}

TEST(TemSynth, WritesFramesAndTruth) {
  const fs::path out = fs::path(FLOWD_TEST_TMP) / "tem_synth";
  fs::remove_all(out);
  ASSERT_EQ(run("--frames 3 --width 96 --height 80 --seed 9 --out " + out.string(), out.string() + ".log"), 0)
      << slurp(out.string() + ".log");
  for (const char* f : {"frame_000.tif", "frame_001.tif", "frame_002.tif", "truth.csv", "tem.json"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const cv::Mat frame = cv::imread((out / "frame_001.tif").string(), cv::IMREAD_UNCHANGED);
  tem::Params p = small();
  p.frames = 3;
  EXPECT_EQ(cv::norm(frame, tem::generate(p, 1), cv::NORM_INF), 0.0);
  const auto rows = flowd::registration::parse_deformations(slurp(out / "truth.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].frame, "frame_002");
  EXPECT_NEAR(rows[2].phi.tx, tem::truth(p)[2].tx, 1e-6);
  EXPECT_NEAR(rows[2].phi.degrees(), tem::truth(p)[2].angle, 1e-9);

  const fs::path f32 = fs::path(FLOWD_TEST_TMP) / "tem_synth_f32";
  fs::remove_all(f32);
  ASSERT_EQ(run("--frames 1 --size 64 --format f32 --out " + f32.string(), f32.string() + ".log"), 0);
  EXPECT_EQ(cv::imread((f32 / "frame_000.tif").string(), cv::IMREAD_UNCHANGED).type(), CV_32FC1);
}

TEST(TemSynth, BadArgumentsExitOne) {
  const fs::path log = fs::path(FLOWD_TEST_TMP) / "tem_synth_bad.log";
  EXPECT_EQ(run("--frames 3", log), 1);
  EXPECT_NE(slurp(log).find("--out is required"), std::string::npos);
  EXPECT_EQ(run("--out /tmp/x --period 1", log), 1);
  EXPECT_NE(slurp(log).find("period must be in [3, 100] pixels"), std::string::npos);
  EXPECT_EQ(run("--out /tmp/x --format png", log), 1);
  EXPECT_NE(slurp(log).find("--format must be u16 or f32, got 'png'"), std::string::npos);
}

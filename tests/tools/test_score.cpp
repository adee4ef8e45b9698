// flowd_score against hand-computed cases, and the flowd-score CLI.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "score/score.hpp"

namespace fs = std::filesystem;
using flowd::score::score;
using flowd::score::Scores;

namespace {

fs::path scratch() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path p = fs::path(FLOWD_TEST_TMP) / "tools" / info->test_suite_name() / info->name();
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

cv::Mat blank(int w = 64, int h = 48) { return cv::Mat::zeros(h, w, CV_32S); }

void box(cv::Mat& m, int x, int y, int w, int h, int label) { m(cv::Rect(x, y, w, h)).setTo(label); }

struct CliRun {
  int rc;
  std::string out;
};

CliRun run(const std::string& args) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = fs::path(FLOWD_TEST_TMP) / "tools" / info->test_suite_name();
  fs::create_directories(dir);
  const auto log = dir / (std::string(info->name()) + ".log");
  const std::string cmd = std::string(FLOWD_SCORE) + " " + args + " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

}  // namespace

TEST(Score, PerfectPredictionScoresOne) {
  cv::Mat t = blank();
  cv::circle(t, {15, 15}, 8, cv::Scalar(1), cv::FILLED);
  cv::circle(t, {40, 20}, 6, cv::Scalar(2), cv::FILLED);
  box(t, 50, 35, 10, 10, 3);
  const Scores s = score(t, t);
  EXPECT_EQ(s.n_pred, 3);
  EXPECT_EQ(s.n_truth, 3);
  EXPECT_EQ(s.n_matched, 3);
  for (double v : {s.dice, s.precision, s.recall, s.f1, s.aji}) EXPECT_DOUBLE_EQ(v, 1.0);
}

TEST(Score, RelabellingAPerfectPredictionChangesNothing) {
  cv::Mat t = blank(), p = blank();
  box(t, 0, 0, 10, 10, 1);
  box(t, 20, 0, 10, 10, 2);
  box(p, 0, 0, 10, 10, 2000000000);  // far beyond the image size: the hash-map path
  box(p, 20, 0, 10, 10, 7);
  const Scores s = score(p, t);
  EXPECT_EQ(s.n_matched, 2);
  EXPECT_DOUBLE_EQ(s.aji, 1.0);
  EXPECT_DOUBLE_EQ(s.f1, 1.0);
}

TEST(Score, EmptyPredictionScoresZero) {
  cv::Mat t = blank();
  box(t, 5, 5, 10, 10, 1);
  const Scores s = score(blank(), t);
  EXPECT_EQ(s.n_pred, 0);
  EXPECT_EQ(s.n_truth, 1);
  EXPECT_EQ(s.n_matched, 0);
  for (double v : {s.dice, s.precision, s.recall, s.f1, s.aji}) EXPECT_DOUBLE_EQ(v, 0.0);
}

TEST(Score, BothEmptyIsPerfect) {
  const Scores s = score(blank(), blank());
  for (double v : {s.dice, s.precision, s.recall, s.f1, s.aji}) EXPECT_DOUBLE_EQ(v, 1.0);
}

TEST(Score, SplitNucleusHalvesTieAtIouOneHalf) {
  // Truth: one 20x10 box. Prediction: its two 10x10 halves, IoU exactly 0.5
  // each; only one may match.
  cv::Mat t = blank(), p = blank();
  box(t, 0, 0, 20, 10, 1);
  box(p, 0, 0, 10, 10, 1);
  box(p, 10, 0, 10, 10, 2);
  const Scores s = score(p, t);
  EXPECT_EQ(s.n_pred, 2);
  EXPECT_EQ(s.n_matched, 1);
  EXPECT_DOUBLE_EQ(s.precision, 0.5);
  EXPECT_DOUBLE_EQ(s.recall, 1.0);
  EXPECT_DOUBLE_EQ(s.f1, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.dice, 1.0);
  // The truth takes half 1 (tie -> smaller label): C = 100, U = 200; half 2
  // is unused and adds its 100 pixels.
  EXPECT_DOUBLE_EQ(s.aji, 100.0 / 300.0);
}

TEST(Score, UnevenSplitMatchesTheLargerPart) {
  cv::Mat t = blank(), p = blank();
  box(t, 0, 0, 20, 10, 1);
  box(p, 0, 0, 12, 10, 1);  // IoU 120/200
  box(p, 12, 0, 8, 10, 2);  // IoU 80/200
  const Scores s = score(p, t);
  EXPECT_EQ(s.n_matched, 1);
  EXPECT_DOUBLE_EQ(s.aji, 120.0 / (200.0 + 80.0));
}

TEST(Score, MergedNucleiMatchOnce) {
  cv::Mat t = blank(), p = blank();
  box(t, 0, 0, 10, 10, 1);
  box(t, 10, 0, 10, 10, 2);
  box(p, 0, 0, 20, 10, 5);
  const Scores s = score(p, t);
  EXPECT_EQ(s.n_matched, 1);
  EXPECT_DOUBLE_EQ(s.precision, 1.0);
  EXPECT_DOUBLE_EQ(s.recall, 0.5);
  EXPECT_DOUBLE_EQ(s.f1, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.dice, 1.0);
  // Both truths take the merged prediction (AJI lets them): C = 100 + 100,
  // U = 200 + 200.
  EXPECT_DOUBLE_EQ(s.aji, 0.5);
}

TEST(Score, ShiftedBoxHasTheExpectedIou) {
  cv::Mat t = blank(), p = blank();
  box(t, 10, 10, 10, 10, 1);
  box(p, 15, 10, 10, 10, 1);  // overlap 50, union 150
  Scores s = score(p, t);
  EXPECT_EQ(s.n_matched, 0);
  EXPECT_DOUBLE_EQ(s.dice, 0.5);
  EXPECT_DOUBLE_EQ(s.aji, 1.0 / 3.0);
  p = blank();
  box(p, 12, 10, 10, 10, 1);  // overlap 80, union 120
  s = score(p, t);
  EXPECT_EQ(s.n_matched, 1);
  EXPECT_DOUBLE_EQ(s.aji, 80.0 / 120.0);
}

TEST(Score, ShiftedDiscAgreesWithCountedPixels) {
  cv::Mat t = blank(100, 100), p = blank(100, 100);
  cv::circle(t, {50, 50}, 20, cv::Scalar(1), cv::FILLED);
  cv::circle(p, {57, 50}, 20, cv::Scalar(1), cv::FILLED);
  const int inter = cv::countNonZero((t > 0) & (p > 0));
  const int uni = cv::countNonZero((t > 0) | (p > 0));
  const Scores s = score(p, t);
  EXPECT_DOUBLE_EQ(s.aji, static_cast<double>(inter) / uni);
  EXPECT_EQ(s.n_matched, 2 * inter >= uni ? 1 : 0);
  EXPECT_NEAR(static_cast<double>(inter) / uni, 0.64, 0.03);  // two r=20 circles 7 apart
}

TEST(Score, AjiOfAHandExample) {
  // A (100 px) predicted by P1 (A plus 20 px); B (100 px) hit only by the
  // small P2 (16 px inside B); P3 (25 px) is a false positive.
  cv::Mat t = blank(), p = blank();
  box(t, 0, 0, 10, 10, 1);
  box(t, 20, 0, 10, 10, 2);
  box(p, 0, 0, 10, 12, 1);
  box(p, 23, 3, 4, 4, 2);
  box(p, 40, 30, 5, 5, 3);
  const Scores s = score(p, t);
  // C = 100 + 16; U = 120 + 100 + 25.
  EXPECT_DOUBLE_EQ(s.aji, 116.0 / 245.0);
  EXPECT_EQ(s.n_matched, 1);
  EXPECT_DOUBLE_EQ(s.precision, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.recall, 0.5);
  EXPECT_DOUBLE_EQ(s.f1, 0.4);
  EXPECT_DOUBLE_EQ(s.dice, 2.0 * 116.0 / (161.0 + 200.0));
}

TEST(Score, TruthWithoutOverlapAddsItsAreaOnly) {
  cv::Mat t = blank(), p = blank();
  box(t, 0, 0, 10, 10, 1);
  box(t, 30, 30, 5, 5, 2);  // nothing predicted here
  box(p, 0, 0, 10, 10, 1);
  EXPECT_DOUBLE_EQ(score(p, t).aji, 100.0 / 125.0);
}

TEST(Score, EveryLabelTypeGivesTheSameScores) {
  cv::Mat t = blank(), p = blank();
  box(t, 0, 0, 10, 10, 1);
  box(t, 10, 0, 10, 10, 2);
  box(p, 2, 0, 14, 10, 3);
  const Scores ref = score(p, t);
  for (int type : {CV_16U, CV_8U}) {
    cv::Mat p2, t2;
    p.convertTo(p2, type);
    t.convertTo(t2, type);
    const Scores s = score(p2, t2);
    EXPECT_DOUBLE_EQ(s.aji, ref.aji);
    EXPECT_DOUBLE_EQ(s.dice, ref.dice);
    EXPECT_EQ(s.n_matched, ref.n_matched);
  }
}

TEST(Score, SizeMismatchNamesBothSizes) {
  try {
    score(cv::Mat::zeros(10, 20, CV_32S), cv::Mat::zeros(20, 10, CV_32S));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("20x10"), std::string::npos) << what;
    EXPECT_NE(what.find("10x20"), std::string::npos) << what;
  }
}

TEST(Score, RejectsNonLabelImages) {
  EXPECT_THROW(score(cv::Mat::zeros(8, 8, CV_8UC3), cv::Mat::zeros(8, 8, CV_32S)), std::invalid_argument);
  EXPECT_THROW(score(cv::Mat::zeros(8, 8, CV_32F), cv::Mat::zeros(8, 8, CV_32S)), std::invalid_argument);
  cv::Mat neg = cv::Mat::zeros(8, 8, CV_32S);
  neg.at<int>(2, 2) = -1;
  EXPECT_THROW(score(neg, cv::Mat::zeros(8, 8, CV_32S)), std::invalid_argument);
}

TEST(Score, PooledCountsAddUp) {
  cv::Mat t = blank(), p = blank();
  box(t, 0, 0, 10, 10, 1);
  box(p, 0, 0, 10, 10, 1);
  auto c = flowd::score::count(p, t);
  c += flowd::score::count(blank(), t);  // a second image with nothing found
  const Scores s = flowd::score::scores_of(c);
  EXPECT_EQ(s.n_truth, 2);
  EXPECT_EQ(s.n_matched, 1);
  EXPECT_DOUBLE_EQ(s.aji, 0.5);
  EXPECT_DOUBLE_EQ(s.dice, 200.0 / 300.0);
}

TEST(Score, LargeImageWithThousandsOfObjects) {
  // 4096^2 with 9801 boxes; the prediction shifts each by 3 pixels.
  cv::Mat t = cv::Mat::zeros(4096, 4096, CV_32S), p = cv::Mat::zeros(4096, 4096, CV_32S);
  int label = 0;
  for (int y = 0; y + 40 <= 4096; y += 41)
    for (int x = 0; x + 40 <= 4096; x += 41) {
      ++label;
      box(t, x, y, 32, 32, label);
      box(p, x + 3, y, 32, 32, label);
    }
  const Scores s = score(p, t);
  EXPECT_EQ(s.n_matched, label);
  EXPECT_DOUBLE_EQ(s.aji, (29.0 * 32.0) / (35.0 * 32.0));
}

TEST(ScoreCli, ScoresPairedFilesAndWritesJson) {
  const auto dir = scratch();
  fs::create_directories(dir / "pred");
  fs::create_directories(dir / "truth");
  cv::Mat t = cv::Mat::zeros(40, 60, CV_16U), p = cv::Mat::zeros(40, 60, CV_16U);
  t(cv::Rect(0, 0, 10, 10)).setTo(1);
  t(cv::Rect(20, 0, 10, 10)).setTo(2);
  p(cv::Rect(0, 0, 10, 10)).setTo(1);
  ASSERT_TRUE(cv::imwrite((dir / "truth/a.png").string(), t));
  ASSERT_TRUE(cv::imwrite((dir / "pred/a.png").string(), p));
  cv::Mat p8;
  t.convertTo(p8, CV_8U);
  ASSERT_TRUE(cv::imwrite((dir / "truth/b.png").string(), t));
  ASSERT_TRUE(cv::imwrite((dir / "pred/b.tif").string(), p8));
  const auto json = dir / "scores.json";
  const CliRun r = run("--pred " + (dir / "pred").string() + " --truth " + (dir / "truth").string() + " --json " +
                    json.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("pooled"), std::string::npos) << r.out;
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc["images"].size(), 2u);
  EXPECT_EQ(doc["images"][0]["image"], "a");
  EXPECT_DOUBLE_EQ(doc["images"][0]["aji"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(doc["images"][1]["aji"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(doc["mean"]["aji"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(doc["pooled"]["aji"].get<double>(), 300.0 / 400.0);
  EXPECT_EQ(doc["pooled"]["n_matched"], 3);
}

TEST(ScoreCli, ErrorsNameTheFile) {
  const auto dir = scratch();
  fs::create_directories(dir / "pred");
  fs::create_directories(dir / "truth");
  const cv::Mat t = cv::Mat::zeros(10, 10, CV_16U);
  ASSERT_TRUE(cv::imwrite((dir / "truth/a.png").string(), t));
  const std::string args = "--pred " + (dir / "pred").string() + " --truth " + (dir / "truth").string();
  CliRun r = run(args);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("truth/a.png' has no prediction"), std::string::npos) << r.out;

  ASSERT_TRUE(cv::imwrite((dir / "pred/a.png").string(), cv::Mat::zeros(10, 12, CV_16U)));
  r = run(args);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("pred/a.png' is 12x10"), std::string::npos) << r.out;

  ASSERT_TRUE(cv::imwrite((dir / "pred/a.png").string(), cv::Mat::zeros(10, 10, CV_8UC3)));
  r = run(args);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("pred/a.png' is not a label image"), std::string::npos) << r.out;

  ASSERT_TRUE(cv::imwrite((dir / "pred/a.png").string(), t));
  ASSERT_TRUE(cv::imwrite((dir / "pred/extra.png").string(), t));
  r = run(args);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("extra.png' has no truth"), std::string::npos) << r.out;

  EXPECT_EQ(run("--pred " + (dir / "pred").string()).rc, 1);
}

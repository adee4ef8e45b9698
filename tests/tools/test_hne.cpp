// The synthetic H&E generator: determinism, sizes, and whether the truth and
// the pixels agree the way a segmentation method relies on.
#include <algorithm>
#include <array>
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

#include "hne/conditions.hpp"
#include "hne/generate.hpp"

namespace fs = std::filesystem;
using flowd::hne::generate;
using flowd::hne::Params;
using flowd::hne::Tissue;

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

// Mean haematoxylin OD of each nucleus (index label - 1).
std::vector<double> nucleus_od(const cv::Mat& od, const cv::Mat& labels, int n) {
  std::vector<double> sum(static_cast<std::size_t>(n), 0.0), count(static_cast<std::size_t>(n), 0.0);
  for (int y = 0; y < labels.rows; ++y)
    for (int x = 0; x < labels.cols; ++x)
      if (const int l = labels.at<int>(y, x); l > 0) {
        sum[static_cast<std::size_t>(l - 1)] += od.at<double>(y, x);
        count[static_cast<std::size_t>(l - 1)] += 1.0;
      }
  for (std::size_t i = 0; i < sum.size(); ++i)
    sum[i] /= std::max(1.0, count[i]);
  return sum;
}

double percentile(const cv::Mat& values, const cv::Mat& mask, double q) {
  std::vector<double> v;
  for (int y = 0; y < values.rows; ++y)
    for (int x = 0; x < values.cols; ++x)
      if (mask.at<std::uint8_t>(y, x)) v.push_back(values.at<double>(y, x));
  if (v.empty()) return 0.0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
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

// ---- The conditions of real tiles (issue 13) -------------------------------

TEST(Hne, NewParametersAreValidatedByName) {
  struct Case {
    const char* name;
    void (*set)(Params&);
  };
  const Case cases[] = {
      {"neuropil_share", [](Params& p) { p.neuropil_share = 1.5; }},
      {"pale", [](Params& p) { p.pale = -0.1; }},
      {"overlap", [](Params& p) { p.overlap = 2.0; }},
      {"stain_jitter", [](Params& p) { p.stain_jitter = 4.5; }},
      {"scanner", [](Params& p) { p.scanner = -1.0; }},
      {"jpeg", [](Params& p) { p.jpeg = 101; }},
      {"jpeg", [](Params& p) { p.jpeg = -1; }},
      {"tissue", [](Params& p) { p.tissue = static_cast<Tissue>(7); }},
  };
  for (const Case& c : cases) {
    Params p = small(64, 64);
    c.set(p);
    try {
      flowd::hne::validate(p);
      ADD_FAILURE() << c.name << ": no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(c.name) + " must be"), std::string::npos) << e.what();
    }
    EXPECT_THROW(generate(p), std::invalid_argument) << c.name;
  }
  try {
    flowd::hne::tissue_from_name("cortex");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tissue must be one of stroma, neuropil, mixed, got 'cortex'"),
              std::string::npos)
        << e.what();
  }
  for (Tissue t : {Tissue::stroma, Tissue::neuropil, Tissue::mixed})
    EXPECT_EQ(flowd::hne::tissue_from_name(flowd::hne::name_of(t)), t);
}

TEST(Hne, EveryConditionGeneratesConsistentTruth) {
  const auto& all = flowd::hne::conditions();
  ASSERT_GE(all.size(), 10u);
  for (const auto& c : all) {
    Params p = small(256, 256);
    p.seed = 5;
    flowd::hne::apply_condition(c.name, p);
    EXPECT_NO_THROW(flowd::hne::validate(p)) << c.name;
    const auto s = generate(p);
    const int n = max_label(s.labels);
    EXPECT_GT(n, 5) << c.name;
    ASSERT_EQ(s.nuclei.size(), static_cast<std::size_t>(n)) << c.name;
    ASSERT_EQ(s.depth.type(), CV_8U);
    std::vector<int> area(static_cast<std::size_t>(n) + 1, 0);
    for (int y = 0; y < s.labels.rows; ++y)
      for (int x = 0; x < s.labels.cols; ++x) {
        const int l = s.labels.at<int>(y, x);
        ASSERT_GE(l, 0);
        ++area[static_cast<std::size_t>(l)];
        // A labelled pixel lies inside at least one outline, and only there.
        ASSERT_EQ(l > 0, s.depth.at<std::uint8_t>(y, x) > 0) << c.name << " at " << x << "," << y;
      }
    for (int i = 1; i <= n; ++i)
      EXPECT_GT(area[static_cast<std::size_t>(i)], 0) << c.name << " label " << i;
    for (const auto& info : s.nuclei)
      EXPECT_LE(info.front_of, n);
    // Deterministic in (Params, index), and the seed matters.
    const auto again = generate(p);
    EXPECT_TRUE(same(s.rgb, again.rgb)) << c.name;
    EXPECT_TRUE(same(s.labels, again.labels)) << c.name;
    Params q = p;
    q.seed = 6;
    EXPECT_FALSE(same(s.rgb, generate(q).rgb)) << c.name;
  }
  Params p;
  EXPECT_THROW(flowd::hne::apply_condition("glioma", p), std::invalid_argument);
}

TEST(Hne, ConditionsKeepSizeAndSeed) {
  Params p = small(200, 100);
  p.seed = 77;
  flowd::hne::apply_condition("20x", p);
  EXPECT_EQ(p.width, 200);
  EXPECT_EQ(p.height, 100);
  EXPECT_EQ(p.seed, 77u);
  EXPECT_EQ(p.mpp, 0.5);
  flowd::hne::apply_condition("hard", p);
  EXPECT_EQ(p.tissue, Tissue::mixed);
  EXPECT_GT(p.neuropil_share, 0.5);
  EXPECT_GT(p.overlap, 0.0);
  EXPECT_GT(p.jpeg, 0);
}

// Overlapping nuclei: the absorbance adds in the image, and the truth gives
// the shared pixels to the nucleus in front.
TEST(Hne, OverlapTheFrontNucleusOwnsTheSharedPixels) {
  Params p = small(512, 512);
  p.background = 0.0;
  p.density = 2.0;
  p.cluster = 0.6;
  p.overlap = 0.5;
  const auto s = generate(p);
  const int n = max_label(s.labels);
  int pairs = 0;
  for (const auto& info : s.nuclei)
    pairs += info.front_of > 0;
  ASSERT_GT(pairs, 10) << "overlapping pairs";
  // A pixel of a back nucleus B under two or more outlines next to a pixel of
  // the nucleus F in front of B would be F's if the overlap were F's.
  long long shared = 0, taken_by_back = 0;
  for (int y = 1; y + 1 < s.labels.rows; ++y)
    for (int x = 1; x + 1 < s.labels.cols; ++x) {
      if (s.depth.at<std::uint8_t>(y, x) < 2) continue;
      ++shared;
      const int b = s.labels.at<int>(y, x);
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int f = s.labels.at<int>(y + dy, x + dx);
          if (f > 0 && f != b && s.nuclei[static_cast<std::size_t>(f - 1)].front_of == b) {
            ++taken_by_back;
            dx = dy = 2;  // count the pixel once
          }
        }
    }
  std::printf(
      "%d nuclei, %d in front of another; %lld pixels under 2+ outlines, %lld of them a back nucleus's next "
      "to its front one\n",
      n, pairs, shared, taken_by_back);
  ASSERT_GT(shared, 500);
  EXPECT_LT(static_cast<double>(taken_by_back), 0.01 * static_cast<double>(shared));
  // Beer-Lambert: where two nuclei overlap the haematoxylin adds up.
  const cv::Mat od = haematoxylin_od(s.rgb);
  const double one = cv::mean(od, s.depth == 1)[0], two = cv::mean(od, s.depth >= 2)[0];
  std::printf("haematoxylin OD under one outline %.3f, under two or more %.3f\n", one, two);
  EXPECT_GT(two, 1.4 * one);
}

TEST(Hne, JpegChangesThePixelsAndNothingElse) {
  Params p = small(256, 256);
  const auto plain = generate(p);
  Params zero = p;
  zero.jpeg = 0;
  EXPECT_TRUE(same(plain.rgb, generate(zero).rgb)) << "jpeg = 0 is no compression";
  for (int q : {90, 70}) {
    Params j = p;
    j.jpeg = q;
    const auto s = generate(j);
    EXPECT_TRUE(same(plain.labels, s.labels)) << q;
    const double diff = cv::norm(plain.rgb, s.rgb, cv::NORM_L1) / static_cast<double>(plain.rgb.total() * 3);
    std::printf("jpeg %d: mean absolute change %.2f grey levels\n", q, diff);
    EXPECT_GT(diff, 0.5) << q;
    EXPECT_LT(diff, 8.0) << q;
  }
}

// Neuropil: haematoxylin-tinted, textured background between the same
// nuclei (the layout does not depend on the tissue parameter), reaching a
// sizeable part of a pale nucleus's haematoxylin in places.
TEST(Hne, NeuropilRaisesTheBackgroundHaematoxylin) {
  Params p = small(512, 512);
  p.background = 0.0;
  p.rbc = 0.0;
  p.seed = 4;
  p.pale = 0.6;
  const auto stroma = generate(p);
  p.tissue = Tissue::neuropil;
  const auto neuropil = generate(p);
  ASSERT_TRUE(same(stroma.labels, neuropil.labels)) << "same nuclei, other background";
  const cv::Mat bg = stroma.labels == 0;
  cv::Mat away;  // background pixels at least 3 px from any nucleus (no blur spill)
  cv::erode(bg, away, cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(7, 7)));
  const cv::Mat od_s = haematoxylin_od(stroma.rgb), od_n = haematoxylin_od(neuropil.rgb);
  const double mean_s = cv::mean(od_s, away)[0], mean_n = cv::mean(od_n, away)[0];
  const double p95_n = percentile(od_n, away, 0.95), p99_n = percentile(od_n, away, 0.99);
  const int n = max_label(stroma.labels);
  const auto per = nucleus_od(od_n, neuropil.labels, n);
  double pale = 0;
  int pales = 0;
  for (int i = 0; i < n; ++i)
    if (neuropil.nuclei[static_cast<std::size_t>(i)].pale) {
      pale += per[static_cast<std::size_t>(i)];
      ++pales;
    }
  ASSERT_GT(pales, 3);
  pale /= pales;
  cv::Scalar m_s, sd_s, m_n, sd_n;
  cv::Mat hp_s, hp_n;  // fine texture: the image minus its 2 um blur
  cv::GaussianBlur(od_s, hp_s, cv::Size(), 8.0);
  cv::GaussianBlur(od_n, hp_n, cv::Size(), 8.0);
  cv::meanStdDev(od_s - hp_s, m_s, sd_s, away);
  cv::meanStdDev(od_n - hp_n, m_n, sd_n, away);
  std::printf(
      "background haematoxylin OD: stroma %.3f, neuropil %.3f (95th percentile %.3f, 99th %.3f); pale nuclei "
      "%.3f; fine texture sd %.3f vs %.3f\n",
      mean_s, mean_n, p95_n, p99_n, pale, sd_s[0], sd_n[0]);
  EXPECT_GT(mean_n, mean_s + 0.05);
  EXPECT_GT(p95_n, 0.3 * pale);
  EXPECT_LT(p95_n, 0.65 * pale);
  EXPECT_LT(mean_n, 0.4 * pale);
  EXPECT_GT(sd_n[0], 1.25 * sd_s[0]);
  // Purple-grey, not pink: less red over green than stroma.
  const cv::Scalar cs = cv::mean(stroma.rgb, away), cn = cv::mean(neuropil.rgb, away);
  EXPECT_LT(cn[0] - cn[1], cs[0] - cs[1]);
}

TEST(Hne, MixedSpansStromaToNeuropil) {
  Params p = small(256, 256);
  const auto stroma = generate(p);
  p.tissue = Tissue::neuropil;
  const auto neuropil = generate(p);
  p.tissue = Tissue::mixed;
  p.neuropil_share = 0.0;
  EXPECT_TRUE(same(generate(p).rgb, stroma.rgb));
  p.neuropil_share = 1.0;
  EXPECT_TRUE(same(generate(p).rgb, neuropil.rgb));
  p.neuropil_share = 0.5;
  const auto mixed = generate(p);
  EXPECT_FALSE(same(mixed.rgb, stroma.rgb));
  EXPECT_FALSE(same(mixed.rgb, neuropil.rgb));
}

TEST(Hne, PaleNucleiAreLighterThanDarkOnes) {
  Params p = small(768, 768);
  p.pale = 0.6;
  p.background = 0.0;
  const auto s = generate(p);
  const int n = max_label(s.labels);
  const auto per = nucleus_od(haematoxylin_od(s.rgb), s.labels, n);
  double pale = 0, dark = 0;
  int np = 0, nd = 0;
  for (int i = 0; i < n; ++i) {
    const auto& info = s.nuclei[static_cast<std::size_t>(i)];
    if (info.kind != flowd::hne::Kind::tumour) continue;
    (info.pale ? pale : dark) += per[static_cast<std::size_t>(i)];
    ++(info.pale ? np : nd);
  }
  ASSERT_GT(np, 20);
  ASSERT_GT(nd, 10);
  std::printf("tumour nuclei: %d pale (mean OD %.3f), %d dark (%.3f)\n", np, pale / np, nd, dark / nd);
  EXPECT_LT(pale / np, 0.85 * (dark / nd));
  EXPECT_NEAR(static_cast<double>(np) / (np + nd), 0.6, 0.12);
  p.pale = 0.0;
  for (const auto& info : generate(p).nuclei)
    EXPECT_FALSE(info.pale);
}

// Per-tile stain and scanner variation: the colour of the glass (white
// balance, exposure) and the hue of the nuclei (stain vectors, amounts)
// spread more from tile to tile.
TEST(Hne, StainJitterAndScannerWidenTheTileToTileSpread) {
  auto sd = [](const std::vector<double>& v) {
    double sum = 0, sum2 = 0;
    for (double x : v)
      sum += x;
    const double mean = sum / static_cast<double>(v.size());
    for (double x : v)
      sum2 += (x - mean) * (x - mean);
    return std::sqrt(sum2 / static_cast<double>(v.size()));
  };
  // (glass spread, nuclei hue spread) over 12 tiles: the standard
  // deviations of each channel's value, summed over the channels.
  auto spread = [&](Params p) {
    std::array<std::vector<double>, 3> glass, hue;
    for (int i = 0; i < 12; ++i) {
      p.background = 1.0;
      const cv::Scalar g = cv::mean(generate(p, i).rgb);
      for (std::size_t c = 0; c < 3; ++c)
        glass[c].push_back(std::log(g[static_cast<int>(c)] + 1.0));
      p.background = 0.0;
      const auto s = generate(p, i);
      if (cv::countNonZero(s.labels) < 200) continue;
      const cv::Scalar m = cv::mean(s.rgb, s.labels > 0);
      cv::Vec3d od;
      for (int c = 0; c < 3; ++c)
        od[c] = -std::log((m[c] + 1.0) / 256.0);
      od = cv::normalize(od);
      for (std::size_t c = 0; c < 3; ++c)
        hue[c].push_back(od[static_cast<int>(c)]);
    }
    double g = 0, h = 0;
    for (std::size_t c = 0; c < 3; ++c) {
      g += sd(glass[c]);
      h += sd(hue[c]);
    }
    return std::pair{g, h};
  };
  Params p = small(256, 256);
  const auto [glass1, hue1] = spread(p);
  p.stain_jitter = 2.5;
  p.scanner = 1.0;
  const auto [glass2, hue2] = spread(p);
  std::printf("tile-to-tile spread: glass %.4f -> %.4f, nuclei %.4f -> %.4f\n", glass1, glass2, hue1, hue2);
  EXPECT_GT(glass2, 1.5 * glass1);
  EXPECT_GT(hue2, 1.5 * hue1);
  p.stain_jitter = 0.0;
  p.scanner = 0.0;
  EXPECT_NO_THROW(generate(p));
}

TEST(HneCli, ConditionsAndNewOptions) {
  const auto dir = scratch();
  CliRun r = synth("--condition list", dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  for (const char* name :
       {"stroma", "neuropil", "mixed", "pale-dark", "crowded", "stain-variation", "blur", "jpeg", "20x", "hard"})
    EXPECT_NE(r.out.find(std::string(name) + " "), std::string::npos) << name << "\n" << r.out;
  // An explicit option overrides the preset, wherever it stands.
  r = synth("--mpp 0.25 --condition 20x --out " + (dir / "a").string() + " --size 96x64 --seed 3", dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  Params p = small(96, 64);
  p.seed = 3;
  flowd::hne::apply_condition("20x", p);
  p.mpp = 0.25;
  cv::Mat rgb;
  cv::cvtColor(cv::imread((dir / "a" / "images" / "hne-0.png").string()), rgb, cv::COLOR_BGR2RGB);
  EXPECT_TRUE(same(rgb, generate(p).rgb));
  r = synth("--condition neuropil --pale 0.9 --tissue mixed --jpeg 80 --out " + (dir / "b").string() +
                " --size 96x64 --seed 3",
            dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  p = small(96, 64);
  p.seed = 3;
  flowd::hne::apply_condition("neuropil", p);
  p.pale = 0.9;
  p.tissue = Tissue::mixed;
  p.jpeg = 80;
  cv::cvtColor(cv::imread((dir / "b" / "images" / "hne-0.png").string()), rgb, cv::COLOR_BGR2RGB);
  EXPECT_TRUE(same(rgb, generate(p).rgb)) << "the PNG keeps the JPEG artefacts";
}

TEST(HneCli, BadNewOptionsFailClearly) {
  const auto dir = scratch();
  const std::string out = " --out " + (dir / "x").string() + " --size 32x32";
  const std::pair<std::string, std::string> cases[] = {
      {"--pale 1.5", "pale must be in [0, 1], got 1.5"},
      {"--overlap -0.5", "overlap must be in [0, 1], got -0.5"},
      {"--stain-jitter 9", "stain_jitter must be in [0, 4], got 9"},
      {"--scanner 5", "scanner must be in [0, 4], got 5"},
      {"--neuropil-share 2", "neuropil_share must be in [0, 1], got 2"},
      {"--jpeg 101", "jpeg must be in [0, 100], got 101"},
      {"--tissue brain", "tissue must be one of stroma, neuropil, mixed, got 'brain'"},
      {"--condition glioma",
       "unknown condition 'glioma' (valid: stroma, neuropil, mixed, pale-dark, crowded, "
       "stain-variation, blur, jpeg, 20x, hard)"},
  };
  for (const auto& [args, message] : cases) {
    const CliRun r = synth(args + out, dir);
    EXPECT_EQ(r.rc, 1) << args;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists(dir / "x"));
}

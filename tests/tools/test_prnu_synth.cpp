// The PRNU camera simulator (tools/prnu) and flowd-prnu-synth: determinism,
// the layout and truth, and that the fingerprint is really in the pixels.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "prnu/generate.hpp"

namespace fs = std::filesystem;
namespace prnu = flowd::prnu;

namespace {

prnu::Params small(int w = 256, int h = 256) {
  prnu::Params p;
  p.width = w;
  p.height = h;
  p.cameras = 2;
  p.sigma_min = p.sigma_max = 0.01;
  return p;
}

std::string slurp(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(const std::string& args, const fs::path& log) {
  fs::create_directories(log.parent_path());
  return WEXITSTATUS(
      std::system((std::string(FLOWD_PRNU_SYNTH) + " " + args + " >" + log.string() + " 2>&1").c_str()));
}

cv::Mat grey(const cv::Mat& bgr) {
  cv::Mat f, g;
  bgr.convertTo(f, CV_32F);
  cv::cvtColor(f, g, cv::COLOR_BGR2GRAY);
  return g;
}

// The simplest PRNU estimate: the mean over frames of (I - lowpass I) /
// lowpass I, the method of the brief.
cv::Mat estimate(const std::vector<cv::Mat>& frames) {
  cv::Mat sum;
  for (const cv::Mat& bgr : frames) {
    const cv::Mat g = grey(bgr);
    cv::Mat low;
    cv::GaussianBlur(g, low, cv::Size(), 3.0, 3.0, cv::BORDER_REFLECT);
    cv::Mat r = (g - low) / low;
    if (sum.empty())
      sum = r;
    else
      sum += r;
  }
  return sum / static_cast<double>(frames.size());
}

// Normalised correlation over the interior (the lowpass is poor at borders).
double correlation(const cv::Mat& a, const cv::Mat& b) {
  const cv::Rect in(8, 8, a.cols - 16, a.rows - 16);
  cv::Mat x = a(in).clone(), y = b(in).clone();
  x -= cv::mean(x)[0];
  y -= cv::mean(y)[0];
  return x.dot(y) / std::sqrt(x.dot(x) * y.dot(y));
}

cv::Mat flat_frames_estimate(const prnu::Camera& cam, int n, int quality = 0) {
  std::vector<cv::Mat> frames;
  for (int k = 0; k < n; ++k)
    frames.push_back(prnu::render(cam, prnu::Scene::flat, 1000 + static_cast<std::uint64_t>(k), quality));
  return estimate(frames);
}

}  // namespace

TEST(PrnuSynth, DeterministicInParamsAndSeed) {
  const prnu::Params p = small(128, 96);
  const prnu::Camera a = prnu::make_camera(p, 1), b = prnu::make_camera(p, 1);
  EXPECT_EQ(cv::norm(a.prnu, b.prnu, cv::NORM_INF), 0.0);
  prnu::Shot s;
  s.seed = 42;
  s.quality = 90;
  EXPECT_EQ(prnu::shoot(a, s), prnu::shoot(b, s));
  prnu::Shot t = s;
  t.seed = 43;
  EXPECT_NE(prnu::shoot(a, s), prnu::shoot(a, t));
  prnu::Params q = p;
  q.seed = 2;
  EXPECT_GT(cv::norm(a.prnu, prnu::make_camera(q, 1).prnu, cv::NORM_INF), 0.0);
  // A camera does not depend on how many cameras or images the set has.
  q = p;
  q.cameras = 5;
  q.images = 3;
  EXPECT_EQ(cv::norm(a.prnu, prnu::make_camera(q, 1).prnu, cv::NORM_INF), 0.0);
}

TEST(PrnuSynth, CamerasModelsAndPatterns) {
  prnu::Params p = small(128, 96);
  p.models = 2;
  EXPECT_EQ(prnu::camera_name(0), "camA");
  EXPECT_EQ(prnu::camera_name(25), "camZ");
  EXPECT_EQ(prnu::camera_name(26), "camAA");
  EXPECT_EQ(prnu::sensor_size(p, 1), cv::Size(144, 112));
  const prnu::Camera a = prnu::make_camera(p, 0), b = prnu::make_camera(p, 1), c = prnu::make_camera(p, 2);
  EXPECT_EQ(a.model, 0);
  EXPECT_EQ(c.model, 1);
  EXPECT_EQ(c.name, "camC");
  EXPECT_EQ(c.size, cv::Size(144, 112));
  ASSERT_EQ(a.prnu.type(), CV_32FC1);
  cv::Scalar mean, sd;
  cv::meanStdDev(a.prnu, mean, sd);
  EXPECT_NEAR(mean[0], 0.0, 1e-6);
  EXPECT_NEAR(sd[0], 0.01, 1e-5);
  cv::meanStdDev(a.common, mean, sd);
  EXPECT_NEAR(sd[0], p.common, 1e-6);
  // The model's pattern is shared, the cameras' own K are not.
  EXPECT_EQ(cv::norm(a.common, b.common, cv::NORM_INF), 0.0);
  EXPECT_LT(std::abs(correlation(a.prnu, b.prnu)), 0.05);
  EXPECT_EQ(a.full_well, b.full_well);
  EXPECT_NE(a.full_well, c.full_well);
}

TEST(PrnuSynth, FlatFieldsCarryTheCamerasPrnu) {
  // sigma 0.01, 20 flat-fields of 256 x 256: the averaged residual must
  // find its own camera's K and not another camera's of the same model.
  const prnu::Params p = small();
  const prnu::Camera a = prnu::make_camera(p, 0), b = prnu::make_camera(p, 1);
  const cv::Mat est = flat_frames_estimate(a, 20);
  const cv::Mat ka = grey(prnu::visible_prnu(a)), kb = grey(prnu::visible_prnu(b));
  const double own = correlation(est, ka), other = correlation(est, kb);
  std::printf("flat-field estimate vs own K %.3f, other camera's K %.3f, raw K %.3f, model pattern %.3f\n", own, other,
              correlation(est, a.prnu), correlation(est, a.common));
  EXPECT_GT(own, 0.3);
  EXPECT_LT(std::abs(other), 0.05);
  // On the raw grid as well (demosaicing spreads K over neighbours).
  EXPECT_GT(correlation(est, a.prnu), 0.2);
  // The model's pattern is in the estimate too: the non-unique part that
  // makes cameras of one model look alike.
  EXPECT_GT(correlation(est, a.common), 0.02);
  // A weaker camera's fingerprint is weaker in the same frames.
  prnu::Params weak = p;
  weak.sigma_min = weak.sigma_max = 0.002;
  const prnu::Camera w = prnu::make_camera(weak, 0);
  EXPECT_LT(correlation(flat_frames_estimate(w, 20), grey(prnu::visible_prnu(w))), own - 0.1);
}

TEST(PrnuSynth, QueryImagesCarryItWeaker) {
  // A single JPEG of a natural scene: the residual correlates with I * K far
  // less than flat-fields do, but clearly above another camera's.
  const prnu::Params p = small(384, 384);
  const prnu::Camera a = prnu::make_camera(p, 0), b = prnu::make_camera(p, 1);
  double own = 0.0, other = 0.0;
  for (std::uint64_t k = 0; k < 4; ++k) {
    const cv::Mat img = prnu::render(a, prnu::Scene::natural, 7 + k, 92);
    const cv::Mat g = grey(img);
    cv::Mat low;
    cv::GaussianBlur(g, low, cv::Size(), 1.5, 1.5, cv::BORDER_REFLECT);
    const cv::Mat residual = g - low;
    own += correlation(residual, g.mul(grey(prnu::visible_prnu(a)))) / 4;
    other += correlation(residual, g.mul(grey(prnu::visible_prnu(b)))) / 4;
  }
  std::printf("query residual vs own I*K %.4f, other camera's %.4f\n", own, other);
  EXPECT_GT(own, 0.01);
  EXPECT_GT(own, 3.0 * std::abs(other) + 0.005);
}

TEST(PrnuSynth, ShotsTurnCropAndRejectBadInput) {
  const prnu::Params p = small(160, 96);
  const prnu::Camera a = prnu::make_camera(p, 0);
  prnu::Shot s;
  s.seed = 3;
  s.rotation = 90;
  s.quality = 80;
  EXPECT_EQ(prnu::scene_size(a, s), cv::Size(96, 160));
  EXPECT_EQ(prnu::render(a, s).size(), cv::Size(96, 160));
  s.rotation = 0;
  s.crop = cv::Rect(10, 5, 120, 80);
  s.crop_quality = 70;
  EXPECT_EQ(prnu::render(a, s).size(), cv::Size(120, 80));
  // The irradiance given is used as it is and left untouched.
  cv::Mat irr(96, 160, CV_32FC3, cv::Scalar::all(0.3));
  const cv::Mat before = irr.clone();
  s.crop = {};
  s.rotation = 180;
  EXPECT_EQ(prnu::render(a, s, irr).size(), cv::Size(160, 96));
  EXPECT_EQ(cv::norm(irr, before, cv::NORM_INF), 0.0);
  s.rotation = 45;
  EXPECT_THROW(prnu::shoot(a, s), std::invalid_argument);
  s.rotation = 0;
  s.crop = cv::Rect(100, 0, 100, 10);
  EXPECT_THROW(prnu::shoot(a, s), std::invalid_argument);
  s.crop = {};
  EXPECT_THROW(prnu::shoot(a, s, cv::Mat(10, 10, CV_32FC3)), std::invalid_argument);
  prnu::Params bad = p;
  bad.sigma_max = 0.001;  // below sigma_min
  try {
    prnu::validate(bad);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "flowd::prnu: sigma_max must be in [sigma_min, 0.2], got 0.001");
  }
  EXPECT_THROW(prnu::make_camera(p, 2), std::out_of_range);
}

TEST(PrnuSynth, PlanNamesAndShifts) {
  prnu::Params p = small(256, 192);
  p.flatfields = 3;
  p.images = 12;
  p.shifted = 2;
  p.portrait = 1.0;
  const auto items = prnu::plan(p, 1);
  ASSERT_EQ(items.size(), 17u);
  EXPECT_EQ(items[0].file, "flatfields/camB_00.png");
  EXPECT_TRUE(items[0].flatfield);
  EXPECT_EQ(items[0].shot.rotation, 0);
  EXPECT_EQ(items[3].file, "images/camB_00.jpg");
  EXPECT_EQ(items[16].file, "images/camB_13.jpg");
  for (std::size_t i = 3; i < 15; ++i)
    EXPECT_TRUE(items[i].shot.rotation == 90 || items[i].shot.rotation == 270) << i;
  for (std::size_t i = 15; i < 17; ++i) {
    const cv::Rect c = items[i].shot.crop;
    EXPECT_EQ(items[i].shot.rotation, 0);
    EXPECT_GT(c.x, 0);
    EXPECT_GT(c.y, 0);
    EXPECT_LE(c.x + c.width, 256);
    EXPECT_LE(c.y + c.height, 192);
    EXPECT_GE(items[i].shot.crop_quality, 75);
  }
}

TEST(PrnuSynthCli, WritesLayoutAndTruthDeterministically) {
  const fs::path out = fs::path(FLOWD_TEST_TMP) / "prnu_synth", again = fs::path(FLOWD_TEST_TMP) / "prnu_synth_2";
  fs::remove_all(out);
  fs::remove_all(again);
  const std::string args = "--cameras 2 --models 2 --flatfields 2 --images 3 --shift 1 --width 128 --height 96 "
                           "--portrait 0.5 --seed 5 --quality 80,90 --out ";
  ASSERT_EQ(run(args + out.string(), out.string() + ".log"), 0) << slurp(out.string() + ".log");
  ASSERT_EQ(run(args + again.string(), again.string() + ".log"), 0) << slurp(again.string() + ".log");
  const auto truth = nlohmann::json::parse(slurp(out / "truth.json"));
  ASSERT_EQ(truth["cameras"].size(), 4u);
  EXPECT_EQ(truth["cameras"][2]["name"], "camC");
  EXPECT_EQ(truth["cameras"][2]["model"], 1);
  EXPECT_EQ(truth["cameras"][2]["width"], 144);
  EXPECT_EQ(truth["models"].size(), 2u);
  EXPECT_EQ(truth["models"][1]["cameras"], nlohmann::json({"camC", "camD"}));
  ASSERT_EQ(truth["files"].size(), 4u * (2 + 3 + 1));
  prnu::Params p;
  p.cameras = 2;
  p.models = 2;
  p.width = 128;
  p.height = 96;
  p.seed = 5;
  p.flatfields = 2;
  p.images = 3;
  p.shifted = 1;
  p.portrait = 0.5;
  p.qualities = {80, 90};
  int portraits = 0, shifted = 0;
  for (const auto& f : truth["files"]) {
    const std::string file = f["file"], camera = f["camera"];
    const std::string stem = fs::path(file).stem().string();
    EXPECT_EQ(stem.substr(0, stem.rfind('_')), camera);
    ASSERT_TRUE(fs::exists(out / file)) << file;
    EXPECT_EQ(slurp(out / file), slurp(again / file)) << file;  // same seed, same bytes
    const cv::Mat img = cv::imread((out / file).string(), cv::IMREAD_COLOR);
    EXPECT_EQ(img.cols, f["width"].get<int>()) << file;
    EXPECT_EQ(img.rows, f["height"].get<int>()) << file;
    const bool flat = f["kind"] == "flatfield";
    EXPECT_EQ(file.rfind(flat ? "flatfields/" : "images/", 0), 0u) << file;
    if (flat)
      EXPECT_TRUE(f["quality"].is_null()) << file;
    else
      EXPECT_TRUE(f["quality"] == 80 || f["quality"] == 90) << file;
    if (f["rotation"] != 0) ++portraits;
    if (!f["shift"].is_null()) {
      ++shifted;
      EXPECT_EQ(f["shift"]["width"], f["width"]);
      EXPECT_GT(f["shift"]["x"].get<int>(), 0);
    }
  }
  EXPECT_GT(portraits, 0);
  EXPECT_EQ(shifted, 4);
  // The CLI writes what the library makes.
  const prnu::Camera c = prnu::make_camera(p, 2);
  const auto items = prnu::plan(p, 2);
  const std::string bytes = slurp(out / items[3].file);
  EXPECT_EQ(std::vector<std::uint8_t>(bytes.begin(), bytes.end()), prnu::shoot(c, items[3].shot));
  // Nothing partial is left beside the output.
  for (const auto& e : fs::directory_iterator(out.parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".prnu_synth.partial"), std::string::npos) << e.path();

  // Another seed, other pixels.
  const fs::path other = fs::path(FLOWD_TEST_TMP) / "prnu_synth_3";
  fs::remove_all(other);
  const std::string args3 = "--cameras 1 --flatfields 1 --images 0 --width 128 --height 96 --seed 6 --out ";
  ASSERT_EQ(run(args3 + other.string(), other.string() + ".log"), 0);
  EXPECT_NE(slurp(other / "flatfields/camA_00.png"), slurp(out / "flatfields/camA_00.png"));
}

TEST(PrnuSynthCli, PhotographsAsScenes) {
  const fs::path dir = fs::path(FLOWD_TEST_TMP) / "prnu_synth_photos", out = fs::path(FLOWD_TEST_TMP) / "prnu_synth_ph";
  fs::remove_all(dir);
  fs::remove_all(out);
  fs::create_directories(dir);
  cv::Mat photo(60, 80, CV_8UC3);
  cv::randu(photo, 0, 255);
  ASSERT_TRUE(cv::imwrite((dir / "a.png").string(), photo));
  std::ofstream(dir / "broken.jpg") << "not a jpeg";
  ASSERT_EQ(run("--cameras 1 --flatfields 0 --images 2 --width 96 --height 64 --scenes " + dir.string() + " --out " +
                    out.string(),
                out.string() + ".log"),
            0)
      << slurp(out.string() + ".log");
  EXPECT_NE(slurp(out.string() + ".log").find("leaving out"), std::string::npos);
  const auto truth = nlohmann::json::parse(slurp(out / "truth.json"));
  ASSERT_EQ(truth["files"].size(), 2u);
  EXPECT_EQ(truth["files"][0]["scene"], "photo:a.png");
}

TEST(PrnuSynthCli, BadArgumentsExitOne) {
  const fs::path log = fs::path(FLOWD_TEST_TMP) / "prnu_synth_bad.log";
  const std::string out = " --out " + (fs::path(FLOWD_TEST_TMP) / "prnu_synth_never").string();
  EXPECT_EQ(run("--cameras 3", log), 1);
  EXPECT_NE(slurp(log).find("--out is required"), std::string::npos);
  EXPECT_EQ(run("--quality 75,x" + out, log), 1);
  EXPECT_NE(slurp(log).find("--quality takes whole numbers separated by commas, got '75,x'"), std::string::npos);
  EXPECT_EQ(run("--quality 101" + out, log), 1);
  EXPECT_NE(slurp(log).find("quality must be in [1, 100], got 101"), std::string::npos);
  EXPECT_EQ(run("--portrait 1.5" + out, log), 1);
  EXPECT_NE(slurp(log).find("portrait must be in [0, 1], got 1.5"), std::string::npos);
  EXPECT_EQ(run("--width 10" + out, log), 1);
  EXPECT_NE(slurp(log).find("width must be in [64, 16384], got 10"), std::string::npos);
  EXPECT_EQ(run("--cameras two" + out, log), 1);
  EXPECT_EQ(run("--bogus 1" + out, log), 1);
  EXPECT_EQ(run("--scenes /nonexistent/folder" + out, log), 1);
  EXPECT_NE(slurp(log).find("is not a folder"), std::string::npos);
  const fs::path full = fs::path(FLOWD_TEST_TMP) / "prnu_synth_full";
  fs::create_directories(full);
  std::ofstream(full / "keep.txt") << "mine";
  EXPECT_EQ(run("--out " + full.string(), log), 1);
  EXPECT_NE(slurp(log).find("exists and is not empty"), std::string::npos);
  EXPECT_EQ(slurp(full / "keep.txt"), "mine");
  EXPECT_FALSE(fs::exists(fs::path(FLOWD_TEST_TMP) / "prnu_synth_never"));
}

// The learned method's network (plugins/nuclei/learned, issue 39): the
// shipped model loads and gives the training framework's probabilities on
// its manifest's check input; missing, corrupt and mismatched model files
// are refused naming the file; the nuclear map's mask, markers and surface
// fit together.
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include <gtest/gtest.h>

#include "model.hpp"
#include "nuclear_map.hpp"
#include "segment/segment.hpp"

namespace fs = std::filesystem;
using namespace flowd::nuclei;

namespace {

const fs::path shipped = fs::path(FLOWD_SOURCE_DIR) / "plugins" / "nuclei" / "model" / "nuclei-unet.onnx";

fs::path scratch(const std::string& name) {
  const fs::path d = fs::path(FLOWD_TEST_TMP) / "NuclearMapModel" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string error_of(const fs::path& onnx) {
  try {
    NuclearMapModel::load(onnx);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "no error";
}

// A copy of the shipped model and manifest in `dir`, the manifest edited.
fs::path copy_with(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  fs::copy_file(shipped, dir / "m.onnx");
  std::ifstream in(fs::path(shipped).replace_extension(".json"));
  nlohmann::json meta = nlohmann::json::parse(in);
  edit(meta);
  std::ofstream(dir / "m.json") << meta.dump();
  return dir / "m.onnx";
}

}  // namespace

TEST(NuclearMapModel, TheShippedModelGivesTheTrainingFrameworksProbabilities) {
  const auto m = NuclearMapModel::load(shipped);
  EXPECT_LT(m->check_error(), 1e-4) << "OpenCV's inference against torch's, on the manifest's check input";
  EXPECT_GT(m->canonical_mpp(), 0.1);
  const cv::Mat rgb(37, 53, CV_8UC3, cv::Scalar(200, 120, 160));  // any size: padded inside
  const auto p = m->probabilities(rgb);
  for (const auto& plane : p) ASSERT_EQ(plane.size(), rgb.size());
  cv::Mat sum = p[0] + p[1] + p[2];
  double lo = 0, hi = 0;
  cv::minMaxLoc(sum, &lo, &hi);
  EXPECT_NEAR(lo, 1.0, 1e-5);
  EXPECT_NEAR(hi, 1.0, 1e-5);
}

TEST(NuclearMapModel, MissingCorruptAndMismatchedModelsAreRefusedNamingTheFile) {
  const auto dir = scratch("refused");
  EXPECT_NE(error_of(dir / "none.onnx").find("nuclear map model '" + (dir / "none.onnx").string() + "': no such file"),
            std::string::npos);
  fs::copy_file(shipped, dir / "alone.onnx");
  EXPECT_NE(error_of(dir / "alone.onnx").find("its manifest '" + (dir / "alone.json").string() + "' is missing"),
            std::string::npos)
      << error_of(dir / "alone.onnx");
  // Cut in half: OpenCV cannot read it.
  {
    std::ifstream in(shipped, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "cut.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    fs::copy_file(fs::path(shipped).replace_extension(".json"), dir / "cut.json");
  }
  EXPECT_NE(error_of(dir / "cut.onnx").find("OpenCV cannot read it as an ONNX network"), std::string::npos)
      << error_of(dir / "cut.onnx");
  const auto wrong_format = copy_with(scratch("format"), [](nlohmann::json& m) { m["format"] = "something/2"; });
  EXPECT_NE(error_of(wrong_format).find("is not a flowd.nuclei.unet/1 manifest"), std::string::npos)
      << error_of(wrong_format);
  // A manifest of another network: the check fails.
  const auto other = copy_with(scratch("other"), [](nlohmann::json& m) {
    for (auto& p : m["check"]["probabilities"]) p = nlohmann::json::array({0.98, 0.01, 0.01});
  });
  EXPECT_NE(error_of(other).find("its outputs differ from those its manifest records"), std::string::npos)
      << error_of(other);
  const auto no_check = copy_with(scratch("nocheck"), [](nlohmann::json& m) { m.erase("check"); });
  EXPECT_NE(error_of(no_check).find("has no check"), std::string::npos) << error_of(no_check);
}

TEST(NuclearMap, MarkersLieInTheMaskAndEveryPartOfTheMaskHasOne) {
  const auto m = NuclearMapModel::load(shipped);
  // Dark purple disks on pink, like nuclei in H&E.
  cv::Mat rgb(160, 200, CV_8UC3, cv::Scalar(230, 180, 220));
  for (int i = 0; i < 12; ++i)
    cv::circle(rgb, {20 + (i % 4) * 50, 30 + (i / 4) * 50}, 9, cv::Scalar(90, 50, 140), cv::FILLED, cv::LINE_AA);
  const NuclearMap map = nuclear_map(*m, rgb, {.mpp = 0.5});
  EXPECT_EQ(map.mpp, 0.5);
  ASSERT_EQ(map.mask.size(), rgb.size());
  int parts = 0;
  const cv::Mat comps = label(map.mask, &parts);
  std::vector<int> has(static_cast<std::size_t>(parts) + 1, 0);
  for (int y = 0; y < rgb.rows; ++y)
    for (int x = 0; x < rgb.cols; ++x) {
      const int mk = map.markers.at<std::int32_t>(y, x);
      if (mk) {
        EXPECT_TRUE(map.mask.at<std::uint8_t>(y, x)) << y << "," << x;
        has[static_cast<std::size_t>(comps.at<std::int32_t>(y, x))] = 1;
      }
    }
  for (int c = 1; c <= parts; ++c) EXPECT_TRUE(has[static_cast<std::size_t>(c)]) << "part " << c;
}

// workflows/nuclei.json, the main job, through the flowd binary: its three
// outputs, consistent with each other and good against the generator's truth.
#include <hdf5.h>

#include <opencv2/imgcodecs.hpp>

#include "nuclei_support.hpp"
#include "score/score.hpp"
#include "support/cli.hpp"

using namespace flowd;
using namespace flowd::nucleitest;

namespace {

hsize_t rows_of(const std::filesystem::path& h5, const char* dataset) {
  const hid_t f = H5Fopen(h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return 0;
  hsize_t dims[1] = {0};
  const hid_t d = H5Dopen2(f, dataset, H5P_DEFAULT);
  if (d >= 0) {
    const hid_t s = H5Dget_space(d);
    H5Sget_simple_extent_dims(s, dims, nullptr);
    H5Sclose(s);
    H5Dclose(d);
  }
  H5Fclose(f);
  return dims[0];
}

}  // namespace

namespace {

// The main job on a generated image with `method`; returns the scores of
// its labels against the generator's truth.
score::Scores main_job(const std::string& method) {
  const auto dir = test::scratch() / method;
  std::filesystem::create_directories(dir);
  const std::string input = "synthetic:hne?width=1300&height=900&count=1&seed=3";
  const auto r = test::flowd_cmd(dir, {std::string(FLOWD_SOURCE_DIR) + "/workflows/nuclei.json", "--set",
                                       "input=" + input, "--set", "output=" + (dir / "out").string(), "--set",
                                       "method=" + method, "--cpu", "2", "--gpu", "none", "--no-progress",
                                       "--no-perf-model"});
  EXPECT_EQ(r.code, 0) << r.err;
  cv::Mat labels = cv::imread((dir / "out/labels/hne-0.png").string(), cv::IMREAD_UNCHANGED);
  const cv::Mat overlay = cv::imread((dir / "out/overlay/hne-0.png").string(), cv::IMREAD_COLOR);
  double objects = 0;
  if (!labels.empty()) cv::minMaxLoc(labels, nullptr, &objects);
  if (labels.type() != CV_16U || labels.size() != cv::Size(1300, 900) || overlay.size() != cv::Size(1300, 900) ||
      objects <= 50) {
    ADD_FAILURE() << method << ": labels " << labels.size() << " type " << labels.type() << ", overlay "
                  << overlay.size() << ", " << objects << " objects";
    return {};
  }
  // One feature row per nucleus of the label image: both use the same
  // centroid-in-core rule.
  EXPECT_EQ(rows_of(dir / "out/features.h5", "/nuclei/label"), static_cast<hsize_t>(objects));

  hne::Params p;
  p.width = 1300, p.height = 900, p.seed = 3;
  const hne::Sample truth = hne::generate(p);
  cv::Mat pred;
  labels.convertTo(pred, CV_32S);
  return score::score(pred, truth.labels);
}

}  // namespace

// The classical pipeline was tuned on this generator (issue 13) and is held
// to it; the learned default was trained on real tissue (issue 39), which the
// generator only resembles, and is held to what it reaches there: its
// quality is judged on real slides (nuclei_quality_gate, docs/benchmarks.md
// §19), not here.
TEST(NucleiMainJob, LabelsOverlayAndFeaturesOfAGeneratedImage) {
  const auto learned = main_job("learned");
  EXPECT_GE(learned.dice, 0.85);
  EXPECT_GE(learned.f1, 0.70);
  const auto classical = main_job("classical");
  EXPECT_GE(classical.dice, 0.85);
  EXPECT_GE(classical.f1, 0.85);
}

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

TEST(NucleiMainJob, LabelsOverlayAndFeaturesOfAGeneratedImage) {
  const auto dir = test::scratch();
  const std::string input = "synthetic:hne?width=1300&height=900&count=1&seed=3";
  const auto r = test::flowd_cmd(dir, {std::string(FLOWD_SOURCE_DIR) + "/workflows/nuclei.json", "--set",
                                       "input=" + input, "--set", "output=" + (dir / "out").string(), "--cpu", "2",
                                       "--gpu", "none", "--no-progress", "--no-perf-model"});
  ASSERT_EQ(r.code, 0) << r.err;
  cv::Mat labels = cv::imread((dir / "out/labels/hne-0.png").string(), cv::IMREAD_UNCHANGED);
  ASSERT_EQ(labels.type(), CV_16U);
  ASSERT_EQ(labels.size(), cv::Size(1300, 900));
  const cv::Mat overlay = cv::imread((dir / "out/overlay/hne-0.png").string(), cv::IMREAD_COLOR);
  ASSERT_EQ(overlay.size(), cv::Size(1300, 900));
  double objects = 0;
  cv::minMaxLoc(labels, nullptr, &objects);
  ASSERT_GT(objects, 50);
  // One feature row per nucleus of the label image: both use the same
  // centroid-in-core rule.
  EXPECT_EQ(rows_of(dir / "out/features.h5", "/nuclei/label"), static_cast<hsize_t>(objects));

  hne::Params p;
  p.width = 1300, p.height = 900, p.seed = 3;
  const hne::Sample truth = hne::generate(p);
  cv::Mat pred;
  labels.convertTo(pred, CV_32S);
  const auto sc = score::score(pred, truth.labels);
  EXPECT_GE(sc.dice, 0.85);
  EXPECT_GE(sc.f1, 0.85);
}

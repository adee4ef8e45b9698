// The virtual microscope (image.subsample + io.write_view,
// workflows/virtual-microscope.json): the stitched view equals the strided
// subsample of the whole image, computed here, for any tiling, halo, factor
// and region; a region outside the image or pieces that do not fill the
// view fail the run naming the item, with nothing written.
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "io_support.hpp"

using namespace flowd;
using runtime::RunStatus;
namespace fs = std::filesystem;

namespace {

runtime::RunReport run(const std::string& json) {
  auto g = test::graph(json);
  runtime::RunOptions o;
  o.cpu_workers = 2;
  runtime::Run r(g, std::move(o), test::quiet_log());
  return r.execute();
}

std::string view_workflow(const fs::path& image, int tile, int halo, int factor, const std::string& region,
                          const fs::path& out) {
  return R"({"version": 1, "stages": {
    "tiles": {"op": "io.read_tiles", "params": {"path": ")" + image.string() + R"(", "tile": )" + std::to_string(tile) +
         R"(, "halo": )" + std::to_string(halo) + R"(, "mode": "color"}},
    "sub": {"op": "image.subsample", "inputs": {"image": "tiles.tile"},
            "params": {"factor": )" + std::to_string(factor) + R"(, "region": )" + region + R"(}},
    "view": {"op": "io.write_view", "inputs": {"view": "sub.view"}, "params": {"dir": ")" + out.string() + R"("}}}})";
}

}  // namespace

TEST(VirtualMicroscope, TheStitchedViewIsTheSubsampledImageForAnyTiling) {
  const auto dir = test::scratch();
  // Noise, so that any misplaced pixel shows.
  cv::Mat rgb(301, 517, CV_8UC3);
  cv::randu(rgb, cv::Scalar::all(0), cv::Scalar::all(256));
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  ASSERT_TRUE(cv::imwrite((dir / "slide.png").string(), bgr));
  struct Case {
    int tile, halo, factor;
    std::vector<int> region;  // row, col, rows, cols; empty: whole
  };
  int n = 0;
  for (const Case& c : {Case{64, 0, 4, {}}, Case{100, 7, 3, {}}, Case{128, 16, 5, {13, 29, 250, 401}},
                        Case{1000, 0, 1, {0, 0, 301, 517}}, Case{37, 3, 7, {200, 500, 101, 17}}}) {
    SCOPED_TRACE("tile " + std::to_string(c.tile) + " halo " + std::to_string(c.halo) + " factor " +
                 std::to_string(c.factor));
    const auto out = dir / ("view" + std::to_string(n++));
    const std::string region = c.region.empty() ? "[]" : Json(c.region).dump();
    const auto r = run(view_workflow(dir / "slide.png", c.tile, c.halo, c.factor, region, out));
    ASSERT_EQ(r.status, RunStatus::succeeded) << r.error << (r.failures.empty() ? "" : r.failures[0].describe());
    const cv::Rect roi = c.region.empty() ? cv::Rect(0, 0, rgb.cols, rgb.rows)
                                          : cv::Rect(c.region[1], c.region[0], c.region[3], c.region[2]);
    cv::Mat want((roi.height + c.factor - 1) / c.factor, (roi.width + c.factor - 1) / c.factor, CV_8UC3);
    for (int y = 0; y < want.rows; ++y)
      for (int x = 0; x < want.cols; ++x)
        want.at<cv::Vec3b>(y, x) = bgr.at<cv::Vec3b>(roi.y + y * c.factor, roi.x + x * c.factor);
    const cv::Mat got = cv::imread((out / "slide.png").string(), cv::IMREAD_COLOR);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(cv::norm(got, want, cv::NORM_INF), 0.0);
  }
}

TEST(VirtualMicroscope, ARegionBeyondTheImageFailsNamingTheItemAndWritesNothing) {
  const auto dir = test::scratch();
  ASSERT_TRUE(cv::imwrite((dir / "slide.png").string(), cv::Mat(50, 80, CV_8UC3, cv::Scalar(9, 8, 7))));
  const auto r = run(view_workflow(dir / "slide.png", 32, 0, 2, "[10, 10, 50, 10]", dir / "out"));
  EXPECT_EQ(r.status, RunStatus::failed);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_NE(r.failures[0].describe().find("reaches beyond the image's 50 x 80 pixels"), std::string::npos)
      << r.failures[0].describe();
  EXPECT_FALSE(fs::exists(dir / "out" / "slide.png"));
  // Parameters checked when the workflow is built.
  EXPECT_THROW(test::graph(view_workflow(dir / "slide.png", 32, 0, 2, "[1, 2, 3]", dir / "out")), Error);
  EXPECT_THROW(test::graph(view_workflow(dir / "slide.png", 32, 0, 0, "[]", dir / "out")), Error);
}

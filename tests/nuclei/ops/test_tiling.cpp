// Seamless tiling: an image segmented as tiles with a halo and assembled by
// io.write_mosaic has every nucleus once - none lost on a tile border, none
// doubled.
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "nuclei_support.hpp"
#include "score/score.hpp"
#include "segment/pipeline.hpp"

using namespace flowd;
using namespace flowd::nucleitest;
using runtime::RunStatus;

namespace {

// Truth objects whose pixels lie in more than one tile core.
std::vector<int> crossing(const cv::Mat& truth, int tile) {
  std::map<int, std::pair<int, bool>> first;  // label -> (core index of its first pixel, crosses)
  for (int r = 0; r < truth.rows; ++r)
    for (int c = 0; c < truth.cols; ++c) {
      const int l = truth.at<int>(r, c);
      if (!l) continue;
      const int core = (r / tile) * 1000 + c / tile;
      auto [it, fresh] = first.emplace(l, std::make_pair(core, false));
      if (!fresh && it->second.first != core) it->second.second = true;
    }
  std::vector<int> out;
  for (const auto& [l, v] : first)
    if (v.second) out.push_back(l);
  return out;
}

// For truth object `l`: the predicted objects covering at least `share` of it.
std::vector<int> covering(const cv::Mat& truth, const cv::Mat& pred, int l, double share) {
  std::map<int, int> overlap;
  int area = 0;
  for (int r = 0; r < truth.rows; ++r)
    for (int c = 0; c < truth.cols; ++c)
      if (truth.at<int>(r, c) == l) {
        ++area;
        if (const int p = pred.at<int>(r, c)) ++overlap[p];
      }
  std::vector<int> out;
  for (const auto& [p, n] : overlap)
    if (n >= share * area) out.push_back(p);
  return out;
}

}  // namespace

TEST(NucleiTiling, NucleiOnTileBordersAreNeitherLostNorDoubled) {
  const int tile = 192;
  hne::Params hp;
  hp.width = 4 * tile + 37, hp.height = 3 * tile + 11, hp.seed = 5, hp.mpp = 0.25;
  const hne::Sample s = hne::generate(hp);
  const auto dir = test::scratch();
  cv::Mat bgr;
  cv::cvtColor(s.rgb, bgr, cv::COLOR_RGB2BGR);
  ASSERT_TRUE(cv::imwrite((dir / "slide.png").string(), bgr));
  const std::string json = R"({"version": 1, "stages": {
    "tiles": {"op": "io.read_tiles", "params": {"path": ")" + (dir / "slide.png").string() + R"(", "tile": )" +
                           std::to_string(tile) + R"(, "halo": 64}},
    "seg":   {"op": "nuclei.segment", "inputs": {"image": "tiles.tile"}, "params": {"mpp": 0.25}},
    "out":   {"op": "io.write_mosaic", "inputs": {"labels": "seg.labels"}, "params": {"labels_dir": ")" +
                           (dir / "labels").string() + R"("}}
  }})";
  runtime::RunOptions o;
  o.cpu_workers = 2;
  const auto report = test::run(json, o);
  ASSERT_EQ(report.status, RunStatus::succeeded) << report.error;
  cv::Mat mosaic = cv::imread((dir / "labels" / "slide.png").string(), cv::IMREAD_UNCHANGED);
  ASSERT_EQ(mosaic.type(), CV_16U);
  mosaic.convertTo(mosaic, CV_32S);

  const auto cross = crossing(s.labels, tile);
  ASSERT_GT(cross.size(), 20u) << "the test image should have many nuclei on tile borders";
  // The same segmentation of the whole image: what tiling must not change.
  nuclei::SegmentParams p;
  p.mpp = 0.25;
  const cv::Mat whole = nuclei::segment(s.rgb, p);
  int found = 0, found_whole = 0, doubled = 0, doubled_whole = 0;
  for (int l : cross) {
    found += !covering(s.labels, mosaic, l, 0.5).empty();
    found_whole += !covering(s.labels, whole, l, 0.5).empty();
    doubled += covering(s.labels, mosaic, l, 0.25).size() > 1;
    doubled_whole += covering(s.labels, whole, l, 0.25).size() > 1;
  }
  // A nucleus cut by a border would be found as two parts, each under half
  // of it; two tiles both keeping it would put two objects over it. Tiles
  // measure their own stain levels, so a tiled run may differ a little from
  // the whole image's, but not by losing or doubling border nuclei.
  EXPECT_LE(doubled, doubled_whole + 1) << doubled << " border nuclei doubled (whole image: " << doubled_whole << ")";
  EXPECT_GE(found, found_whole - 2) << found << " of " << cross.size() << " border nuclei found (whole image: "
                                    << found_whole << ")";
  EXPECT_GE(found, static_cast<int>(0.85 * static_cast<double>(cross.size())))
      << found << " of " << cross.size() << " nuclei on borders found";
  // And as well as on nuclei away from borders.
  const auto sc = score::score(mosaic, s.labels);
  EXPECT_GE(sc.f1, 0.8) << "tiled F1 " << sc.f1;
}

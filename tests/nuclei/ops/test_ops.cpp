// Each segmentation operator gives what its library function gives, and
// nuclei.segment's sub-tasks give exactly segment() - on CPU workers and with
// a simulated GPU taking part of the sub-tasks.
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "nuclei_support.hpp"
#include "segment/pipeline.hpp"
#include "segment/segment.hpp"

using namespace flowd;
using namespace flowd::nucleitest;
using runtime::RunStatus;

namespace {

struct Fixture {
  hne::Sample s = sample(320, 11);
  nuclei::SegmentParams p;
  nuclei::Derived d;
  nuclei::Stages st;
  Fixture() {
    p.mpp = 0.25;
    d = nuclei::derive(s.rgb, p);
    nuclei::segment(s.rgb, p, &st);
  }
};

const Fixture& fx() {
  static const Fixture f;
  return f;
}

cv::Mat run1(const std::string& op, const Json& params, std::vector<Item> inputs, std::size_t port = 0) {
  auto h = harness(op, params);
  for (auto& [p, item] : h.map(std::move(inputs)))
    if (p == port) return mat_of(item);
  ADD_FAILURE() << op << " emitted nothing on port " << port;
  return {};
}

bool identical(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

}  // namespace

TEST(NucleiOps, EachOperatorEqualsItsFunction) {
  const auto& f = fx();
  const Item rgb = mat_item("t", f.s.rgb);
  EXPECT_TRUE(identical(run1("nuclei.tissue", {{"level", f.d.tissue_level}}, {rgb}), f.st.tissue));
  EXPECT_TRUE(identical(run1("nuclei.rbc", {{"rg", f.p.rbc_rg}, {"rb", f.p.rbc_rb}, {"level", f.d.tissue_level}}, {rgb}),
                        f.st.rbc));
  EXPECT_TRUE(identical(run1("nuclei.deconvolve", {{"od_max", f.d.od_max}},
                             {rgb, mat_item("t", f.st.tissue), mat_item("t", f.st.rbc)}),
                        f.st.haem));
  EXPECT_TRUE(identical(run1("nuclei.open", {{"radius", f.d.open_radius}}, {mat_item("t", f.st.haem)}), f.st.opened));
  EXPECT_TRUE(identical(run1("nuclei.reconstruct", {{"threshold", -1}},
                             {mat_item("t", f.st.opened), mat_item("t", f.st.haem)}),
                        f.st.recon));
  EXPECT_TRUE(identical(run1("nuclei.reconstruct", {{"threshold", f.d.threshold}},
                             {mat_item("t", f.st.opened), mat_item("t", f.st.haem)}),
                        f.st.candidates));
  EXPECT_TRUE(identical(run1("nuclei.area_threshold", {{"min_area", f.d.min_area}}, {mat_item("t", f.st.candidates)}),
                        f.st.area));
  EXPECT_TRUE(identical(run1("nuclei.fill_holes", {{"max_hole_area", f.d.max_hole_area}}, {mat_item("t", f.st.area)}),
                        f.st.filled));
  EXPECT_TRUE(identical(run1("nuclei.prewatershed", {{"h", f.d.h}}, {mat_item("t", f.st.filled)}, 0), f.st.dist));
  EXPECT_TRUE(identical(run1("nuclei.prewatershed", {{"h", f.d.h}}, {mat_item("t", f.st.filled)}, 1), f.st.markers));
  EXPECT_TRUE(identical(run1("nuclei.watershed", Json::object(),
                             {mat_item("t", f.st.dist), mat_item("t", f.st.markers), mat_item("t", f.st.filled)}),
                        f.st.watershed));
  EXPECT_TRUE(identical(run1("nuclei.select",
                             {{"ring_radius", f.d.ring_radius},
                              {"min_contrast", f.d.min_contrast},
                              {"min_solidity", f.d.min_solidity},
                              {"min_ratio", f.d.min_ratio}},
                             {mat_item("t", f.st.watershed), mat_item("t", f.st.haem), mat_item("t", f.st.tissue),
                              mat_item("t", f.st.rbc)}),
                        f.st.selected));
  EXPECT_TRUE(
      identical(run1("nuclei.relabel", {{"min_area", f.d.min_area}}, {mat_item("t", f.st.selected)}), f.st.labels));
  EXPECT_TRUE(same_objects(run1("nuclei.label", Json::object(), {mat_item("t", f.st.filled)}),
                           nuclei::label(f.st.filled)));
}

TEST(NucleiOps, BadParametersAreRefusedAtTheirPointer) {
  const auto g = [](const std::string& params) {
    return R"({"version": 1, "stages": {
      "tiles": {"op": "io.read_tiles", "params": {"path": "synthetic:blobs?width=64&height=64&count=1", "tile": 64}},
      "seg": {"op": "nuclei.segment", "inputs": {"image": "tiles.tile"}, "params": )" + params + R"(}}})";
  };
  try {
    test::graph(g(R"({"mpp": -1})"));
    FAIL() << "accepted mpp -1";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/stages/seg/params/mpp"), std::string::npos) << e.what();
  }
}

namespace {

cv::Mat segment_in_a_run(const cv::Mat& rgb, const std::string& gpu) {
  const auto dir = test::scratch();
  const std::string json = R"({"version": 1, "stages": {
    "read": {"op": "io.read_images", "params": {"path": ")" + (dir / "in.png").string() + R"("}},
    "seg":  {"op": "nuclei.segment", "inputs": {"image": "read.image"}, "params": {"method": "classical", "mpp": 0.25}},
    "out":  {"op": "io.write_hdf5", "inputs": {"data": "seg.labels"}, "params": {"path": ")" + (dir / "out" / "l.h5").string() + R"("}}
  }})";
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  cv::imwrite((dir / "in.png").string(), bgr);
  runtime::RunOptions o;
  o.cpu_workers = 2;
  if (!gpu.empty()) o.gpus = runtime::GpuSpec::parse(gpu);
  const auto report = test::run(json, o);
  EXPECT_EQ(report.status, RunStatus::succeeded) << report.error;
  auto back = harness("io.read_hdf5", {{"path", (dir / "out" / "l.h5").string()}}).source();
  if (back.size() != 1) return {};
  return mat_of(back[0].second);
}

}  // namespace

TEST(NucleiSegment, SubTasksGiveWhatSegmentGives) {
  const auto& f = fx();
  EXPECT_TRUE(identical(segment_in_a_run(f.s.rgb, ""), f.st.labels));
}

TEST(NucleiSegment, ASimulatedGpuTakingSubTasksChangesNothing) {
  const auto& f = fx();
  EXPECT_TRUE(identical(segment_in_a_run(f.s.rgb, "sim:1"), f.st.labels));
}

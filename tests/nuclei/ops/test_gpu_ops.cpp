// The nuclei operators' GPU variants inside the engine (inputs uploaded by
// the engine, outputs allocated from its pool) against their CPU variants,
// and the main job on a GPU against the main job on CPUs. Skipped, with the
// reason, where no GPU is present.
#include <algorithm>

#include <opencv2/imgcodecs.hpp>

#include "gpu/gpu_support.hpp"
#include "nuclei_support.hpp"
#include "segment/pipeline.hpp"
#include "support/cli.hpp"

using namespace flowd;
using namespace flowd::nucleitest;

namespace {

// The emitted arrays in the order of their output ports (a variant may emit
// its outputs in any order: the engine routes them by port).
std::vector<Array> arrays(runtime::OperatorHarness::Emitted e) {
  std::stable_sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Array> out;
  for (auto& [port, item] : e) out.push_back(item.array());
  return out;
}

bool same(const Array& a, const Array& b, bool labels) {
  const cv::Mat x = as_mat(a), y = as_mat(b);
  if (labels) return same_objects(x, y);
  return x.size() == y.size() && x.type() == y.type() && cv::norm(x, y, cv::NORM_INF) == 0;
}

}  // namespace

TEST(NucleiGpuOps, EveryGpuVariantGivesWhatItsCpuVariantGives) {
  FLOWD_REQUIRE_GPU(g);
  auto dev = gputest::cuda_device(g);
  const hne::Sample s = sample(700, 21);
  nuclei::SegmentParams p;
  p.mpp = 0.25;
  const nuclei::Derived d = nuclei::derive(s.rgb, p);
  nuclei::Stages st;
  nuclei::segment(s.rgb, p, &st);
  const auto it = [](const cv::Mat& m) { return mat_item("t", m); };
  struct Case {
    std::string op;
    Json params;
    std::vector<Item> inputs;
    bool labels;
  };
  const std::vector<Case> cases = {
      {"nuclei.tissue", {{"level", d.tissue_level}}, {it(s.rgb)}, false},
      {"nuclei.rbc", {{"level", d.tissue_level}}, {it(s.rgb)}, false},
      {"nuclei.deconvolve", {{"od_max", d.od_max}}, {it(s.rgb), it(st.tissue), it(st.rbc)}, false},
      {"nuclei.open", {{"radius", d.open_radius}}, {it(st.haem)}, false},
      {"nuclei.reconstruct", {{"threshold", d.threshold}}, {it(st.opened), it(st.haem)}, false},
      {"nuclei.reconstruct", {{"threshold", -1}}, {it(st.opened), it(st.haem)}, false},
      {"nuclei.area_threshold", {{"min_area", d.min_area}}, {it(st.candidates)}, false},
      {"nuclei.fill_holes", {{"max_hole_area", d.max_hole_area}}, {it(st.area)}, false},
      {"nuclei.fill_holes", {{"max_hole_area", 0}}, {it(st.area)}, false},
      {"nuclei.prewatershed", {{"h", d.h}}, {it(st.filled)}, true},
      {"nuclei.watershed", Json::object(), {it(st.dist), it(st.markers), it(st.filled)}, true},
      {"nuclei.label", Json::object(), {it(st.filled)}, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op + " " + c.params.dump());
    auto h = harness(c.op, c.params);
    const auto cpu = arrays(h.map(c.inputs));
    const auto gpu = arrays(h.map_on(*dev, c.inputs));
    ASSERT_EQ(cpu.size(), gpu.size());
    for (std::size_t k = 0; k < cpu.size(); ++k)
      // prewatershed: the distance (port 0) is compared bit for bit.
      EXPECT_TRUE(same(cpu[k], gpu[k], c.labels && !(c.op == "nuclei.prewatershed" && k == 0))) << "output " << k;
  }
}

TEST(NucleiGpuOps, TheMainJobOnAGpuWritesWhatItWritesOnCpus) {
  FLOWD_REQUIRE_GPU(g);
  const auto dir = test::scratch();
  const auto run = [&](const std::string& gpu, const std::string& out) {
    return test::flowd_cmd(dir, {std::string(FLOWD_SOURCE_DIR) + "/workflows/nuclei.json", "--set",
                                 "input=synthetic:hne?width=1500&height=1200&count=1&seed=9", "--set",
                                 "output=" + (dir / out).string(), "--gpu", gpu, "--no-progress",
                                 "--no-perf-model", "--trace", (dir / (out + ".json")).string()});
  };
  const auto cpu = run("none", "cpu");
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  const auto gpu = run("all", "gpu");
  ASSERT_EQ(gpu.code, 0) << gpu.err;
  cv::Mat a = cv::imread((dir / "cpu/labels/hne-0.png").string(), cv::IMREAD_UNCHANGED);
  cv::Mat b = cv::imread((dir / "gpu/labels/hne-0.png").string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  a.convertTo(a, CV_32S);
  b.convertTo(b, CV_32S);
  EXPECT_TRUE(same_objects(a, b));
  // The GPU took part: some nuclei operations ran as their gpu variant.
  int gpu_spans = 0;
  // Parsed into a variable: a range-for over a member of a temporary would
  // iterate over a destroyed document (C++20), which is what hid every span.
  const Json trace = Json::parse(test::slurp(dir / "gpu.json"));
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("ph", "") == "X" && e.value("name", "").rfind("nuclei.", 0) == 0)
      gpu_spans += e.at("args").value("variant", "") == "gpu";
  EXPECT_GE(gpu_spans, 1) << "the GPU run's log:\n" << gpu.err;
}

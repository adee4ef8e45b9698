// The flowd binary with image.gaussian's GPU variant: the same workflow with
// --gpu 1 and --gpu none writes the same images, and the trace shows the blur
// running as a gpu variant. `flowd inspect` lists the variant iff flowd was
// built with CUDA (that one runs everywhere).
#include <fstream>
#include <set>

#include <opencv2/imgcodecs.hpp>

#include "flowd/opencv.hpp"

#include "gpu_support.hpp"
#include "support/cli.hpp"

namespace fs = std::filesystem;
using flowd::Json;
using flowd::test::flowd_cmd;
using flowd::test::scratch;
using flowd::test::slurp;

namespace {

// Relative paths of the files under `dir`.
std::set<std::string> files_under(const fs::path& dir) {
  std::set<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
  return out;
}

// A colour u8 branch of synthetic tissue images and a grey u16 branch of
// the test's own files (two of them smaller than the kernel).
const char* gaussian_workflow = R"({
  "version": 1,
  "vars": {"output": "out"},
  "stages": {
    "rgb":      {"op": "io.read_images", "params": {"path": "synthetic:blobs?width=301&height=203&count=6&seed=3"}},
    "blur_rgb": {"op": "image.gaussian", "inputs": {"image": "rgb.image"}, "params": {"sigma": 2.5}},
    "w_rgb":    {"op": "io.write_image", "inputs": {"image": "blur_rgb.image"}, "params": {"dir": "${output}/rgb"}},
    "g16":      {"op": "io.read_images", "params": {"path": "in16", "mode": "unchanged"}},
    "blur16":   {"op": "image.gaussian", "inputs": {"image": "g16.image"}, "params": {"sigma": 4}},
    "w16":      {"op": "io.write_image", "inputs": {"image": "blur16.image"}, "params": {"dir": "${output}/g16"}}
  }
})";

}  // namespace

TEST(GpuCli, InspectListsTheGpuVariantIffBuiltWithCuda) {
  const auto dir = scratch();
  const auto j = flowd_cmd(dir, {"inspect", "image.gaussian", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const auto variants = Json::parse(j.out).at("variants");
  EXPECT_EQ(variants, FLOWD_HAVE_CUDA ? Json({"cpu", "gpu"}) : Json({"cpu"})) << j.out;
  const auto t = flowd_cmd(dir, {"inspect", "image.gaussian"});
  ASSERT_EQ(t.code, 0) << t.err;
  const std::string line = FLOWD_HAVE_CUDA ? "Variants      cpu,gpu\n" : "Variants      cpu\n";
  EXPECT_NE(t.out.find(line), std::string::npos) << t.out;
}

TEST(GpuCli, GaussianWorkflowOnTheGpuWritesWhatTheCpuWritesAndIsTraced) {
  FLOWD_REQUIRE_GPU(g);
  const auto dir = scratch();
  std::ofstream(dir / "wf.json") << gaussian_workflow;
  fs::create_directories(dir / "in16");
  std::uint32_t seed = 40;
  for (const auto& [name, rows, cols] : {std::tuple{"a", 97, 131}, std::tuple{"b", 5, 3}, std::tuple{"c", 1, 40}}) {
    const flowd::Array a = flowd::gputest::random_array(flowd::DType::u16, {rows, cols}, seed++);
    ASSERT_TRUE(cv::imwrite((dir / "in16" / (std::string(name) + ".png")).string(), flowd::as_mat(a)));
  }
  // The GPU run: one CPU worker (sources, sinks) and the GPU; a model that
  // rates the blur 50x faster on the GPU, so CPU workers leave it to the GPU.
  std::ofstream(dir / "model.json")
      << R"({"format": 1, "operators": {"image.gaussian": {"hint": 50, "runs": []}}, "bandwidth": []})";
  const auto gpu = flowd_cmd(dir, {"wf.json", "--gpu", "1", "--cpu", "1", "--set", "output=out-gpu", "--trace",
                                   "trace.json", "--perf-model", "model.json", "--no-progress"});
  ASSERT_EQ(gpu.code, 0) << gpu.err;
  const auto cpu = flowd_cmd(dir, {"wf.json", "--gpu", "none", "--set", "output=out-cpu", "--no-perf-model", "--no-progress"});
  ASSERT_EQ(cpu.code, 0) << cpu.err;

  // The images (the run's manifests, .flowd-manifest.json, differ in times).
  const auto images = [](const fs::path& d) {
    std::vector<std::string> png;
    for (const auto& f : files_under(d))
      if (fs::path(f).extension() == ".png") png.push_back(f);
    return png;
  };
  const auto written = images(dir / "out-cpu");
  EXPECT_EQ(written.size(), 9u);
  EXPECT_EQ(images(dir / "out-gpu"), written);
  for (const auto& f : written) {
    const cv::Mat want = cv::imread((dir / "out-cpu" / f).string(), cv::IMREAD_UNCHANGED);
    const cv::Mat got = cv::imread((dir / "out-gpu" / f).string(), cv::IMREAD_UNCHANGED);
    ASSERT_FALSE(want.empty()) << f;
    ASSERT_EQ(got.type(), want.type()) << f;
    ASSERT_EQ(got.size(), want.size()) << f;
    EXPECT_EQ(cv::norm(got, want, cv::NORM_INF), 0) << f << " differs between the GPU and the CPU run";
  }

  // The trace: blur tasks ran as the gpu variant, after their inputs were uploaded.
  const Json trace = Json::parse(slurp(dir / "trace.json"));
  int gpu_blurs = 0, uploads = 0;
  std::set<std::string> variants;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    const Json& args = e.at("args");
    if (e.value("name", "") == "image.gaussian") {
      variants.insert(args.value("variant", ""));
      gpu_blurs += args.value("variant", "") == "gpu";
    }
    uploads += e.value("name", "") == "upload";
  }
  EXPECT_GE(gpu_blurs, 1) << "no image.gaussian span with variant gpu; variants seen: " << Json(variants).dump();
  EXPECT_GE(uploads, gpu_blurs > 0 ? 1 : 0);
}

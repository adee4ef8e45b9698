// The io operators inside real runs: threads, provenance, keep-going and
// transactional output.
#include <opencv2/imgcodecs.hpp>

#include "io_support.hpp"
#include "runtime/provenance.hpp"

using namespace flowd;
using namespace flowd::iotest;
using runtime::RunStatus;

namespace {

runtime::RunReport run(const std::string& json, bool keep_going = false) {
  auto g = test::graph(json);
  runtime::RunOptions o;
  o.cpu_workers = 2;
  o.keep_going = keep_going;
  o.provenance = runtime::make_provenance(g, {"flowd", "test.json"});
  runtime::Run r(g, std::move(o), test::quiet_log());
  return r.execute();
}

}  // namespace

TEST(IoWorkflow, TilesAndTheirPixelsIntoHdf5WithProvenance) {
  const auto dir = test::scratch();
  const auto h5 = dir / "tiles.h5";
  const std::string json = R"({"version": 1, "stages": {
    "tiles": {"op": "io.read_tiles", "params": {"path": "synthetic:blobs?width=600&height=500&count=2", "tile": 128, "halo": 8}},
    "store": {"op": "io.write_hdf5", "inputs": {"data": "tiles.tile"}, "params": {"path": ")" + h5.string() + R"("}}
  }})";
  const auto report = run(json);
  ASSERT_EQ(report.status, RunStatus::succeeded) << report.error;
  EXPECT_EQ(report.final.expected_items, 2u * 4u * 5u);
  H5 f = open_h5(h5);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(h5_string_attr(f, "/", "workflow_sha256")->size(), 64u);
  const Json params = Json::parse(*h5_string_attr(f, "/", "parameters"));
  EXPECT_EQ(params["tiles"]["params"]["tile"], 128);
  EXPECT_EQ(params["store"]["op"], "io.write_hdf5");
  EXPECT_TRUE(Json::parse(*h5_string_attr(f, "/", "plugins")).contains("io"));
  auto back = items_of(harness("io.read_hdf5", {{"path", h5.string()}}).source());
  ASSERT_EQ(back.size(), 40u);
  EXPECT_EQ(back[0].meta.key, "blobs-0/tile/0/0");
  EXPECT_EQ(back[39].meta.key, "blobs-1/tile/3/4");
  EXPECT_EQ(*back[39].meta.core, Box::make2d(384, 512, 116, 88));
  EXPECT_EQ(back[39].array().describe(), "u8[124x96x3]");
}

TEST(IoWorkflow, KeepGoingSkipsACorruptImageAndWritesTheRest) {
  const auto dir = test::scratch();
  fs::create_directories(dir / "in");
  for (const char* name : {"a.png", "c.png"})
    ASSERT_TRUE(cv::imwrite((dir / "in" / name).string(), cv::Mat(20, 30, CV_8UC3, cv::Scalar(1, 2, 3))));
  write_bytes(dir / "in" / "b.png", "corrupt");
  const std::string json = R"({"version": 1, "stages": {
    "read":  {"op": "io.read_tiles", "params": {"path": ")" + (dir / "in").string() + R"(", "tile": 16}},
    "write": {"op": "io.write_image", "inputs": {"image": "read.tile"}, "params": {"dir": ")" + (dir / "out").string() + R"("}}
  }})";
  const auto report = run(json, /*keep_going=*/true);
  ASSERT_EQ(report.status, RunStatus::completed_with_failures) << report.error;
  ASSERT_EQ(report.failures.size(), 1u);
  EXPECT_NE(report.failures[0].message.find("b.png"), std::string::npos) << report.failures[0].message;
  EXPECT_EQ(files_below(dir / "out"),
            (std::vector<std::string>{".flowd-manifest.json", "a/tile/0/0.png", "a/tile/0/1.png", "a/tile/1/0.png",
                                      "a/tile/1/1.png", "c/tile/0/0.png", "c/tile/0/1.png", "c/tile/1/0.png",
                                      "c/tile/1/1.png"}));
}

TEST(IoWorkflow, AFailedRunLeavesNoOutputAtAll) {
  const auto dir = test::scratch();
  fs::create_directories(dir / "in");
  ASSERT_TRUE(cv::imwrite((dir / "in" / "a.png").string(), cv::Mat(20, 30, CV_8UC3, cv::Scalar(1, 2, 3))));
  write_bytes(dir / "in" / "b.png", "corrupt");
  const std::string json = R"({"version": 1, "stages": {
    "read":  {"op": "io.read_images", "params": {"path": ")" + (dir / "in").string() + R"("}},
    "png":   {"op": "io.write_image", "inputs": {"image": "read.image"}, "params": {"dir": ")" + (dir / "out").string() + R"("}},
    "h5":    {"op": "io.write_hdf5", "inputs": {"data": "read.image"}, "params": {"path": ")" + (dir / "res" / "x.h5").string() + R"("}}
  }})";
  const auto report = run(json);
  EXPECT_EQ(report.status, RunStatus::failed);
  EXPECT_EQ(files_below(dir), (std::vector<std::string>{"in/a.png", "in/b.png"}));
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_FALSE(fs::exists(dir / "res"));
}

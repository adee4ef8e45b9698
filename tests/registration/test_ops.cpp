// The registration operators: registration.pairwise, the scan's combine
// (compose_items) and the sink registration.write, on generated frames with
// known motions; bad input through whole runs and the command line.
#include <algorithm>
#include <fstream>
#include <functional>
#include <map>

#include <hdf5.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <gtest/gtest.h>

#include "deformations.hpp"
#include "flowd/opencv.hpp"
#include "operand.hpp"
#include "runtime/harness.hpp"
#include "runtime/provenance.hpp"
#include "runtime/run.hpp"
#include "support/cli.hpp"
#include "support/helpers.hpp"
#include "support/tem_stack.hpp"
#include "tem/generate.hpp"

using namespace flowd;
namespace reg = flowd::registration;
namespace fs = std::filesystem;

namespace {

plugin::Registry& registry() {
  static plugin::Registry r = [] {
    plugin::Registry x({{FLOWD_TEST_PLUGIN_DIR, "test", true}}, test::quiet_log());
    x.scan();
    return x;
  }();
  return r;
}

runtime::OperatorHarness harness(const std::string& op, const Json& params = Json::object()) {
  return runtime::OperatorHarness(registry().open(op), params, test::quiet_log(), "stage-under-test");
}

tem::Params series_params() {
  tem::Params p;
  p.frames = 6;
  p.width = p.height = 128;
  p.seed = 21;
  p.drift = 1.0;
  return p;
}

Item frame_item(const tem::Params& p, int k) {
  Item i;
  i.meta.key = tem::frame_name(p, k);
  i.meta.attrs = {{"file", "synthetic/" + i.meta.key}};
  i.value = from_mat(tem::generate(p, k));
  return i;
}

reg::Rigid truth_of(const tem::Params& p, int k) {
  const auto m = tem::truth(p)[static_cast<std::size_t>(k)];
  return reg::Rigid::from_degrees(m.angle, m.tx, m.ty);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

Item only(runtime::OperatorHarness::Emitted emitted) {
  EXPECT_EQ(emitted.size(), 1u);
  return std::move(emitted.at(0).second);
}

}  // namespace

TEST(RegistrationOps, PairwiseFindsTheMotionBetweenConsecutiveFrames) {
  const tem::Params p = series_params();
  auto h = harness("registration.pairwise");
  const Item d = only(h.map({frame_item(p, 0), frame_item(p, 1)}));
  EXPECT_EQ(d.meta.key, "frame_001");
  const reg::KeyedStep s = reg::step_of(d);
  EXPECT_EQ(s.from, "frame_000");
  EXPECT_EQ(s.to, "frame_001");
  EXPECT_LT(reg::Rigid::distance(s.phi, truth_of(p, 1), p.width, p.height), 0.1);
  EXPECT_GT(s.ncc, 0.1);
  // The first frame paired with itself: its identity motion.
  const reg::KeyedStep first = reg::step_of(only(h.map({frame_item(p, 0), frame_item(p, 0)})));
  EXPECT_TRUE(first.is_identity());
  EXPECT_EQ(first.to, "frame_000");
}

TEST(RegistrationOps, PairwiseRefusesFramesOfDifferentSizesAndColour) {
  const tem::Params p = series_params();
  tem::Params other = p;
  other.width = 96;
  auto h = harness("registration.pairwise");
  EXPECT_EQ(error_of([&] {
              h.map({frame_item(p, 0), frame_item(other, 1)});
            }),
            "frame 'frame_001' (file 'synthetic/frame_001') is 96x128 but frame 'frame_000' (file "
            "'synthetic/frame_000') is 128x128: the frames of a series must share one size");
  Item rgb = frame_item(p, 1);
  rgb.value = from_mat(cv::Mat(16, 16, CV_8UC3, cv::Scalar(1, 2, 3)));
  EXPECT_EQ(error_of([&] {
              h.map({frame_item(p, 0), rgb});
            }),
            "frame 'frame_001' (file 'synthetic/frame_001') is u8[16x16x3]; registration needs grey frames (rows x "
            "columns): read them with mode \"grey\"");
}

TEST(RegistrationOps, ComposeRegistersTheOuterFramesFromTheProduct) {
  const tem::Params p = series_params();
  std::map<std::string, Item> frames;
  for (int k = 0; k < p.frames; ++k)
    frames.emplace(tem::frame_name(p, k), frame_item(p, k));
  int reads = 0;
  const reg::FrameByKey lookup = [&](const std::string& key) -> const Item& {
    ++reads;
    return frames.at(key);
  };
  auto h = harness("registration.pairwise");
  const Item d01 = only(h.map({frame_item(p, 0), frame_item(p, 1)}));
  const Item d12 = only(h.map({frame_item(p, 1), frame_item(p, 2)}));
  const reg::OperatorOptions o;
  const Item d02 = reg::compose_items(d01, d12, lookup, o);
  const reg::KeyedStep s = reg::step_of(d02);
  EXPECT_EQ(s.from, "frame_000");
  EXPECT_EQ(s.to, "frame_002");
  EXPECT_EQ(d02.meta.key, "frame_002");
  EXPECT_LT(reg::Rigid::distance(s.phi, truth_of(p, 2), p.width, p.height), 0.1);
  EXPECT_EQ(reads, 2);
  // The identity operand short-cuts without reading frames.
  const Item id = reg::step_item({"frame_000", "frame_000", reg::Rigid::identity(), 1.0});
  EXPECT_EQ(reg::step_of(reg::compose_items(id, d01, lookup, o)).to, "frame_001");
  EXPECT_EQ(reg::step_of(reg::compose_items(d12, reg::step_item({"frame_002", "frame_002", {}, 1.0}), lookup, o)).from,
            "frame_001");
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(error_of([&] { reg::compose_items(d12, d01, lookup, o); }),
            "cannot compose the motion from 'frame_001' to 'frame_002' with the one from 'frame_000' to "
            "'frame_001': the inner frames differ");
  Item junk;
  junk.meta.key = "x";
  junk.value = Json{{"from", "a"}};
  EXPECT_EQ(error_of([&] { reg::compose_items(junk, d01, lookup, o); }),
            "item 'x' is not a registration operand: 'to' is missing or not a string");
}

// The whole scheme through the operators: pairwise, a sequential scan with
// compose_items, the sink; then its three files.
TEST(RegistrationOps, WriteProducesDeformationsAverageAndHdf5) {
  const tem::Params p = series_params();
  std::map<std::string, Item> frames;
  for (int k = 0; k < p.frames; ++k)
    frames.emplace(tem::frame_name(p, k), frame_item(p, k));
  const reg::FrameByKey lookup = [&](const std::string& key) -> const Item& { return frames.at(key); };
  auto pair = harness("registration.pairwise");
  std::vector<Item> prefixes{only(pair.map({frame_item(p, 0), frame_item(p, 0)}))};
  for (int k = 1; k < p.frames; ++k)
    prefixes.push_back(reg::compose_items(prefixes.back(), only(pair.map({frame_item(p, k - 1), frame_item(p, k)})),
                                          lookup, reg::OperatorOptions{}));
  const fs::path dir = test::scratch() / "out";
  auto sink = harness("registration.write", {{"dir", dir.string()}});
  sink.provenance = {{"workflow_sha256", "abc"}};
  for (int k = p.frames - 1; k >= 0; --k)  // any order
    sink.consume({frame_item(p, k), prefixes[static_cast<std::size_t>(k)]});
  sink.commit();

  const auto rows = reg::parse_deformations(test::slurp(dir / "deformations.csv"));
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].frame, "frame_000");
  EXPECT_EQ(rows[0].phi.tx, 0.0);
  for (int k = 1; k < p.frames; ++k) {
    EXPECT_EQ(rows[static_cast<std::size_t>(k)].frame, tem::frame_name(p, k));
    EXPECT_LT(reg::Rigid::distance(rows[static_cast<std::size_t>(k)].phi, truth_of(p, k), p.width, p.height), 0.1);
  }
  // The aligned average is closer to frame 0 than the plain mean of the
  // drifting frames: the frames were mapped the right way round.
  const cv::Mat average = cv::imread((dir / "average.tif").string(), cv::IMREAD_UNCHANGED);
  ASSERT_EQ(average.type(), CV_32FC1);
  ASSERT_EQ(average.size(), cv::Size(128, 128));
  cv::Mat plain(128, 128, CV_32F, cv::Scalar(0)), f0;
  for (int k = 0; k < p.frames; ++k) {
    cv::Mat f;
    tem::generate(p, k).convertTo(f, CV_32F);
    plain += f / p.frames;
  }
  tem::Params clean = p;
  clean.dose = 1000;
  tem::generate(clean, 0).convertTo(f0, CV_32F);
  const cv::Rect inner(16, 16, 96, 96);
  auto ncc = [&](const cv::Mat& a) {
    cv::Mat r;
    cv::matchTemplate(a(inner), f0(inner), r, cv::TM_CCOEFF_NORMED);
    return r.at<float>(0, 0);
  };
  EXPECT_GT(ncc(average), ncc(plain) + 0.1) << ncc(average) << " vs " << ncc(plain);

  const fs::path h5 = dir / "registration.h5";
  ASSERT_TRUE(fs::exists(h5));
  const hid_t f = H5Fopen(h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  for (const char* name :
       {"/deformations/frame", "/deformations/tx", "/deformations/ty", "/deformations/angle", "/average", "/coverage"})
    EXPECT_GT(H5Lexists(f, name, H5P_DEFAULT), 0) << name;
  const hid_t ds = H5Dopen2(f, "/deformations/tx", H5P_DEFAULT);
  std::vector<double> tx(6);
  H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, tx.data());
  H5Dclose(ds);
  H5Fclose(f);
  EXPECT_NEAR(tx[5], rows[5].phi.tx, 1e-6);
}

// Issue 38: a blank or pure-noise frame got a confident motion, no warning,
// and its pixels in the average; the match quality never reached the files.
TEST(RegistrationOps, BlankAndNoiseFramesAreMarkedUnreliableAndLeftOutOfTheAverage) {
  const tem::Params p = series_params();
  std::vector<Item> frames;
  for (int k = 0; k < p.frames; ++k) frames.push_back(frame_item(p, k));
  // Frame 2 blank (a beam blanked), frame 4 detector noise with no specimen.
  frames[2].value = from_mat(cv::Mat(p.height, p.width, CV_16UC1, cv::Scalar(3)));
  cv::Mat noise(p.height, p.width, CV_16UC1);
  cv::theRNG().state = 99;
  cv::randu(noise, 0, 8);
  frames[4].value = from_mat(noise);
  std::map<std::string, Item> by_key;
  for (const auto& f : frames) by_key.emplace(f.meta.key, f);
  const reg::FrameByKey lookup = [&](const std::string& key) -> const Item& { return by_key.at(key); };
  auto pair = harness("registration.pairwise");
  std::vector<Item> prefixes{only(pair.map({frames[0], frames[0]}))};
  for (int k = 1; k < p.frames; ++k)
    prefixes.push_back(reg::compose_items(prefixes.back(),
                                          only(pair.map({frames[static_cast<std::size_t>(k - 1)], frames[static_cast<std::size_t>(k)]})),
                                          lookup, reg::OperatorOptions{}));
  const fs::path dir = test::scratch() / "out";
  auto sink = harness("registration.write", {{"dir", dir.string()}});
  for (int k = 0; k < p.frames; ++k) sink.consume({frames[static_cast<std::size_t>(k)], prefixes[static_cast<std::size_t>(k)]});
  sink.commit();

  const std::string csv = test::slurp(dir / "deformations.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "frame,tx_px,ty_px,angle_deg,ncc,overlap,reliable");
  const auto rows = reg::parse_deformations(csv);
  ASSERT_EQ(rows.size(), 6u);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    ASSERT_TRUE(rows[k].quality) << k;
    const bool bad = k == 2 || k == 4;
    EXPECT_EQ(rows[k].quality->reliable, !bad) << rows[k].frame << " ncc " << rows[k].quality->ncc;
    if (bad) EXPECT_LT(rows[k].quality->ncc, 0.1) << rows[k].frame;
    else EXPECT_GT(rows[k].quality->ncc, 0.3) << rows[k].frame;
  }
  // The good frames after the bad ones are still registered.
  EXPECT_LT(reg::Rigid::distance(rows[5].phi, truth_of(p, 5), p.width, p.height), 0.1);

  const hid_t f = H5Fopen((dir / "registration.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  for (const char* name : {"/deformations/ncc", "/deformations/overlap", "/deformations/reliable"})
    EXPECT_GT(H5Lexists(f, name, H5P_DEFAULT), 0) << name;
  // Four frames in the average, not six.
  const hid_t ds = H5Dopen2(f, "/coverage", H5P_DEFAULT);
  std::vector<float> coverage(static_cast<std::size_t>(p.width * p.height));
  H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, coverage.data());
  H5Dclose(ds);
  H5Fclose(f);
  EXPECT_EQ(*std::max_element(coverage.begin(), coverage.end()), 4.0f);
}

// A series whose frames all fail to match the first: an error, not a table
// of guesses.
TEST(RegistrationOps, WriteRefusesASeriesWhereNoFrameMatchesTheFirst) {
  const tem::Params p = series_params();
  const fs::path dir = test::scratch() / "out";
  auto sink = harness("registration.write", {{"dir", dir.string()}});
  sink.consume({frame_item(p, 0), reg::step_item({"frame_000", "frame_000", {}, 1.0})});
  sink.consume({frame_item(p, 1), reg::step_item({"frame_000", "frame_001", {}, 0.01, 1.0})});
  const std::string e = error_of([&] { sink.commit(); });
  EXPECT_NE(e.find("no frame but the first matched it"), std::string::npos) << e;
  sink.abort();
  EXPECT_TRUE(!fs::exists(dir) || fs::is_empty(dir));
}

TEST(RegistrationOps, WriteRefusesASingleFrameAndLeavesNothing) {
  const tem::Params p = series_params();
  const fs::path dir = test::scratch() / "out";
  auto sink = harness("registration.write", {{"dir", dir.string()}});
  sink.consume({frame_item(p, 0), reg::step_item({"frame_000", "frame_000", {}, 1.0})});
  EXPECT_EQ(error_of([&] { sink.commit(); }),
            "a single frame, frame 'frame_000' (file 'synthetic/frame_000'): a registration needs at least two "
            "frames");
  sink.abort();
  EXPECT_TRUE(!fs::exists(dir) || fs::is_empty(dir));
}

TEST(RegistrationOps, WriteRefusesFramesOfDifferentSizes) {
  const tem::Params p = series_params();
  tem::Params other = p;
  other.height = 100;
  auto sink = harness("registration.write", {{"dir", (test::scratch() / "out").string()}});
  sink.consume({frame_item(p, 0), reg::step_item({"frame_000", "frame_000", {}, 1.0})});
  EXPECT_EQ(error_of([&] {
              sink.consume({frame_item(other, 1), reg::step_item({"frame_000", "frame_001", {}, 1.0})});
            }),
            "frame 'frame_001' (file 'synthetic/frame_001') is 128x100 but frame 'frame_000' (file "
            "'synthetic/frame_000') is 128x128: the frames of a series must share one size");
}

TEST(RegistrationOps, WriteRefusesMotionsFromAnotherFrame) {
  const tem::Params p = series_params();
  auto sink = harness("registration.write", {{"dir", (test::scratch() / "out").string()}});
  sink.consume({frame_item(p, 0), reg::step_item({"frame_000", "frame_000", {}, 1.0})});
  sink.consume({frame_item(p, 2), reg::step_item({"frame_001", "frame_002", {}, 1.0})});
  EXPECT_EQ(error_of([&] { sink.commit(); }),
            "the motions start from different frames ('frame_000' and 'frame_001') at frame 'frame_002' (file "
            "'synthetic/frame_002'): every motion must be from the series' first frame");
  EXPECT_EQ(error_of([&] {
              sink.consume({frame_item(p, 3), reg::step_item({"frame_000", "frame_004", {}, 1.0})});
            }),
            "the motion to 'frame_004' arrived with frame 'frame_003' (file 'synthetic/frame_003'): deformations "
            "must be keyed by their frame");
}

// Bad input through the command line, with the shipped workflow.
namespace {

test::Result run_cli(const fs::path& dir) {
  return test::flowd_cmd(dir,
                         {"run", std::string(FLOWD_SOURCE_DIR) + "/workflows/registration.json", "--set",
                          "input=" + (dir / "in").string(), "--set", "output=" + (dir / "out").string()},
                         "FLOWD_PLUGIN_PATH=" + std::string(FLOWD_TEST_PLUGIN_DIR));
}

void write_frame(const fs::path& f, const cv::Mat& m) {
  fs::create_directories(f.parent_path());
  ASSERT_TRUE(cv::imwrite(f.string(), m));
}

}  // namespace

TEST(RegistrationCli, ASingleFrameFailsNamingItAndWritesNothing) {
  const fs::path dir = test::scratch();
  write_frame(dir / "in" / "f0.tif", cv::Mat(32, 32, CV_16UC1, cv::Scalar(7)));
  const auto r = run_cli(dir);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("a single frame, frame 'f0' (file '" + (dir / "in" / "f0.tif").string() +
                       "'): a registration needs at least two frames"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(!fs::exists(dir / "out") || fs::is_empty(dir / "out"));
}

TEST(RegistrationCli, FramesOfDifferentSizesFailNamingBothFiles) {
  const fs::path dir = test::scratch();
  write_frame(dir / "in" / "f0.tif", cv::Mat(32, 32, CV_16UC1, cv::Scalar(7)));
  write_frame(dir / "in" / "f1.tif", cv::Mat(32, 40, CV_16UC1, cv::Scalar(7)));
  const auto r = run_cli(dir);
  EXPECT_EQ(r.code, 3) << r.err;
  // Which frame reaches the sink first depends on scheduling: either names both.
  const bool one = r.err.find("frame 'f1' (file '" + (dir / "in" / "f1.tif").string() + "') is 40x32 but frame 'f0'") !=
                   std::string::npos;
  const bool other = r.err.find("frame 'f0' (file '" + (dir / "in" / "f0.tif").string() +
                                "') is 32x32 but frame 'f1'") != std::string::npos;
  EXPECT_TRUE(one || other) << r.err;
  EXPECT_TRUE(!fs::exists(dir / "out") || fs::is_empty(dir / "out"));
}

TEST(RegistrationCli, AnUnreadableFrameFailsNamingItsFile) {
  const fs::path dir = test::scratch();
  write_frame(dir / "in" / "f0.tif", cv::Mat(32, 32, CV_16UC1, cv::Scalar(7)));
  write_frame(dir / "in" / "f2.tif", cv::Mat(32, 32, CV_16UC1, cv::Scalar(7)));
  std::ofstream(dir / "in" / "f1.tif") << "not a tiff";
  const auto r = run_cli(dir);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot read image '" + (dir / "in" / "f1.tif").string() + "'"), std::string::npos) << r.err;
  EXPECT_TRUE(!fs::exists(dir / "out") || fs::is_empty(dir / "out"));
}

namespace {

// docs/examples/registration-hdf5.json on a generated series of `frames`
// frames, with `extra` arguments; every frame within a tenth of a pixel of
// its true motion. Returns the run's log.
std::string expect_true_motions_through_the_hdf5_workflow(int frames, const std::vector<std::string>& extra) {
  tem::Params p = series_params();
  p.frames = frames;
  const fs::path dir = test::scratch();
  const fs::path file = dir / "series.h5";
  test::write_series_h5(p, file);
  std::vector<std::string> args = {"run",
                                   std::string(FLOWD_SOURCE_DIR) + "/docs/examples/registration-hdf5.json",
                                   "--set",
                                   "input=" + file.string(),
                                   "--set",
                                   "dataset=stack",
                                   "--set",
                                   "output=" + (dir / "out").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = test::flowd_cmd(dir, args, "FLOWD_PLUGIN_PATH=" + std::string(FLOWD_TEST_PLUGIN_DIR));
  EXPECT_EQ(r.code, 0) << r.err;
  const auto rows = reg::parse_deformations(test::slurp(dir / "out" / "deformations.csv"));
  EXPECT_EQ(rows.size(), static_cast<std::size_t>(p.frames));
  for (std::size_t k = 0; k < rows.size(); ++k)
    EXPECT_LT(reg::Rigid::distance(rows[k].phi, truth_of(p, static_cast<int>(k)), p.width, p.height), 0.1)
        << rows[k].frame;
  EXPECT_TRUE(fs::exists(dir / "out" / "average.tif"));
  return r.err;
}

}  // namespace

// A cluster run: the pairwise registrations on two worker processes, the
// scan with each of them as a rank (two lanes each) and the coordinator
// chaining their totals; the combines pull the frames, which the
// coordinator holds, when they need them. As accurate as in one process.
TEST(RegistrationCli, AClusterRunScansWithTheWorkerProcessesAsRanks) {
  const std::string log = expect_true_motions_through_the_hdf5_workflow(
      12, {"--workers", "2", "--worker-cpus", "2", "--no-progress"});
  EXPECT_NE(log.find("5 lanes, "), std::string::npos) << log;  // 2 × 2 on the workers, the coordinator's
  EXPECT_NE(log.find(", 2 ranks"), std::string::npos) << log;
}

// docs/examples/registration-hdf5.json: the series as a 3-D dataset (frames,
// rows, columns) of an HDF5 file, through the command line.
TEST(RegistrationCli, AnHdf5SeriesThroughTheDocumentedWorkflow) {
  expect_true_motions_through_the_hdf5_workflow(8, {"--set", "strategy=ladner-fischer"});
}

// The inputs of an image series (issue 14): 8- and 16-bit grey PNG and TIFF
// and float32 TIFF frames through io.read_images, a 3-D HDF5 dataset through
// io.read_hdf5, and the synthetic:tem series.
#include <opencv2/imgcodecs.hpp>

#include "io_support.hpp"
#include "synthetic.hpp"

using namespace flowd;
using namespace flowd::iotest;

namespace {

cv::Mat ramp(int type, double scale) {
  cv::Mat m(5, 7, type);
  for (int y = 0; y < m.rows; ++y)
    for (int x = 0; x < m.cols; ++x) {
      const double v = (y * 7 + x) * scale;
      if (type == CV_8UC1) m.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(v);
      if (type == CV_16UC1) m.at<std::uint16_t>(y, x) = static_cast<std::uint16_t>(v);
      if (type == CV_32FC1) m.at<float>(y, x) = static_cast<float>(v);
    }
  return m;
}

// A 3-D dataset (frames, rows, columns) written with the C API, as a
// microscope's software would.
template <class T>
void write_stack(const fs::path& file, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                 const std::vector<T>& values) {
  H5 f(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  H5 space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  H5 ds(H5Dcreate2(f, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  ASSERT_GE(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
}

}  // namespace

TEST(SeriesInputs, GreyPngAndTiffKeepTheirDepth) {
  const auto dir = test::scratch();
  const cv::Mat u8 = ramp(CV_8UC1, 3), u16 = ramp(CV_16UC1, 1000);
  ASSERT_TRUE(cv::imwrite((dir / "a.png").string(), u8));
  ASSERT_TRUE(cv::imwrite((dir / "b.png").string(), u16));
  ASSERT_TRUE(cv::imwrite((dir / "c.tif").string(), u16));
  for (const char* mode : {"grey", "unchanged"}) {
    auto items = items_of(harness("io.read_images", {{"path", dir.string()}, {"mode", mode}}).source());
    ASSERT_EQ(keys_of(items), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(items[0].array().describe(), "u8[5x7]");
    EXPECT_TRUE(same_pixels(mat_copy(items[0].array()), u8));
    EXPECT_EQ(items[1].array().describe(), "u16[5x7]");
    EXPECT_TRUE(same_pixels(mat_copy(items[1].array()), u16));
    EXPECT_TRUE(same_pixels(mat_copy(items[2].array()), u16));
  }
}

TEST(SeriesInputs, Float32TiffIsReadAsFloat) {
  const auto dir = test::scratch();
  const cv::Mat f = ramp(CV_32FC1, 0.37);
  ASSERT_TRUE(cv::imwrite((dir / "frame_000.tif").string(), f));
  for (const char* mode : {"grey", "unchanged"}) {
    auto items = items_of(harness("io.read_images", {{"path", dir.string()}, {"mode", mode}}).source());
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].meta.key, "frame_000");
    EXPECT_EQ(items[0].array().describe(), "f32[5x7]");
    EXPECT_TRUE(same_pixels(mat_copy(items[0].array()), f));
  }
}

TEST(SeriesInputs, Hdf5StackIsASeriesOfFrames) {
  const auto dir = test::scratch();
  std::vector<std::uint16_t> values(3 * 4 * 5);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<std::uint16_t>(i * 11);
  write_stack(dir / "series.h5", "stack", H5T_NATIVE_UINT16, {3, 4, 5}, values);
  Harness h = harness("io.read_hdf5", {{"path", (dir / "series.h5").string()}, {"dataset", "stack"}});
  auto items = items_of(h.source());
  EXPECT_EQ(h.expected(), 3u);
  ASSERT_EQ(keys_of(items), (std::vector<std::string>{"stack_000", "stack_001", "stack_002"}));
  const Item& f1 = items[1];
  EXPECT_EQ(f1.array().describe(), "u16[4x5]");
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 5; ++x)
      EXPECT_EQ(f1.array().at<std::uint16_t>(y, x), values[static_cast<std::size_t>(20 + y * 5 + x)]);
  EXPECT_EQ(f1.meta.timestamp, 1);
  EXPECT_EQ(*f1.meta.bbox, Box::make2d(0, 0, 4, 5));
  EXPECT_EQ(f1.meta.attrs["frame"], 1);
  EXPECT_EQ(f1.meta.attrs["dataset"], "/stack");

  std::vector<float> floats(2 * 3 * 3, 0.25f);
  write_stack(dir / "float.h5", "frames", H5T_NATIVE_FLOAT, {2, 3, 3}, floats);
  auto fitems =
      items_of(harness("io.read_hdf5", {{"path", (dir / "float.h5").string()}, {"dataset", "frames"}}).source());
  ASSERT_EQ(fitems.size(), 2u);
  EXPECT_EQ(fitems[1].array().describe(), "f32[3x3]");
  EXPECT_EQ(fitems[1].array().at<float>(2, 2), 0.25f);
}

// Issue 38: docs/plugins/registration.md's `--set dataset=/stack` was refused
// ("starts with '/'"); an absolute HDF5 path names the same dataset.
TEST(SeriesInputs, Hdf5DatasetMayBeGivenAsAnAbsolutePath) {
  const auto dir = test::scratch();
  write_stack(dir / "series.h5", "stack", H5T_NATIVE_UINT16, {2, 3, 3}, std::vector<std::uint16_t>(18, 7));
  Harness h = harness("io.read_hdf5", {{"path", (dir / "series.h5").string()}, {"dataset", "/stack"}});
  auto items = items_of(h.source());
  ASSERT_EQ(keys_of(items), (std::vector<std::string>{"stack_000", "stack_001"}));
  EXPECT_EQ(items[0].meta.attrs["dataset"], "/stack");
  const std::string e = error_of([&] {
    harness("io.read_hdf5", {{"path", (dir / "series.h5").string()}, {"dataset", "/"}}).source();
  });
  EXPECT_NE(e.find("dataset '/' is the root group"), std::string::npos) << e;
}

TEST(SeriesInputs, Hdf5DatasetOfOtherRankIsNamed) {
  const auto dir = test::scratch();
  write_stack(dir / "flat.h5", "image", H5T_NATIVE_UINT8, {4, 5}, std::vector<std::uint8_t>(20, 1));
  const std::string e = error_of([&] {
    harness("io.read_hdf5", {{"path", (dir / "flat.h5").string()}, {"dataset", "image"}}).source();
  });
  EXPECT_EQ(e, "HDF5 file '" + (dir / "flat.h5").string() +
                   "', dataset '/image': a dataset of 2 dimensions; io.read_hdf5 reads a 3-D dataset (frames, rows, "
                   "columns) as a series of frames, or a group written by io.write_hdf5");
}

TEST(SeriesInputs, SyntheticTemFramesAndTruth) {
  auto items = items_of(
      harness("io.read_images", {{"path", "synthetic:tem?frames=3&size=64&seed=5"}, {"mode", "grey"}}).source());
  ASSERT_EQ(keys_of(items), (std::vector<std::string>{"frame_000", "frame_001", "frame_002"}));
  tem::Params p;
  p.frames = 3;
  p.width = p.height = 64;
  p.seed = 5;
  EXPECT_EQ(items[2].array().describe(), "u16[64x64]");
  EXPECT_TRUE(same_pixels(mat_copy(items[2].array()), tem::generate(p, 2)));
  const auto truth = tem::truth(p);
  EXPECT_EQ(items[2].meta.attrs["truth"]["tx"].get<double>(), truth[2].tx);
  EXPECT_EQ(items[2].meta.attrs["truth"]["angle"].get<double>(), truth[2].angle);
  EXPECT_EQ(items[2].meta.attrs["lattice_period"].get<double>(), p.period);
  EXPECT_EQ(items[0].meta.attrs["file"], "synthetic:tem?frames=3&width=64&height=64&seed=5");

  auto rgb = items_of(harness("io.read_images", {{"path", "synthetic:tem?frames=1&size=32&dose=9"}}).source());
  EXPECT_EQ(rgb[0].array().describe(), "u16[32x32x3]");
  EXPECT_EQ(rgb[0].meta.attrs["file"], "synthetic:tem?frames=1&width=32&height=32&seed=1&dose=9");
}

TEST(SeriesInputs, SyntheticTemDefaultsAndErrors) {
  const io::SyntheticSpec s = io::parse_synthetic_uri("synthetic:tem");
  EXPECT_EQ(s.count, 64);
  EXPECT_EQ(s.width, 512);
  EXPECT_EQ(s.height, 512);
  EXPECT_EQ(s.key(7), "frame_007");
  EXPECT_EQ(error_of([] { io::parse_synthetic_uri("synthetic:tem?count=3"); }),
            "synthetic data set 'synthetic:tem?count=3': 'count' is called 'frames' for tem");
  EXPECT_EQ(error_of([] { io::parse_synthetic_uri("synthetic:tem?period=1"); }),
            "synthetic data set 'synthetic:tem?period=1': period must be in [3, 100] pixels, got 1.000000");
  EXPECT_NE(error_of([] {
              io::parse_synthetic_uri("synthetic:tem?stain=1");
            }).find("unknown key 'stain' (valid: frames, size"),
            std::string::npos);
}

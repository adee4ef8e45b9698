// io.write_image: encodings, names, and the temporary-file protocol.
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "io_support.hpp"

using namespace flowd;
using namespace flowd::iotest;

namespace {

Array labels(std::int64_t rows, std::int64_t cols, std::int32_t max) {
  Array a = Array::zeros(DType::i32, {rows, cols});
  auto v = a.values<std::int32_t>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>((i * 7919) % static_cast<std::size_t>(max + 1));
  v[v.size() / 2] = max;
  return a;
}

Array rgb(std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  Array a = Array::zeros(DType::u8, {4, 6, 3});
  for (std::int64_t y = 0; y < 4; ++y)
    for (std::int64_t x = 0; x < 6; ++x) {
      a.at<std::uint8_t>(y, x, 0) = r;
      a.at<std::uint8_t>(y, x, 1) = g;
      a.at<std::uint8_t>(y, x, 2) = b;
    }
  return a;
}

}  // namespace

TEST(WriteImage, LabelsBecomeA16BitPngThatReadsBackEqual) {
  const auto dir = test::scratch() / "out";
  const Array l = labels(50, 70, 40000);
  auto h = harness("io.write_image", {{"dir", dir.string()}});
  h.consume({array_item("slide/tile/0/1", l)});
  h.commit();
  const cv::Mat back = cv::imread((dir / "slide" / "tile" / "0" / "1.png").string(), cv::IMREAD_UNCHANGED);
  ASSERT_EQ(back.type(), CV_16UC1);
  cv::Mat want;
  as_mat(l).convertTo(want, CV_16U);
  EXPECT_TRUE(same_pixels(back, want));
  EXPECT_EQ(files_below(dir), (std::vector<std::string>{"slide/tile/0/1.png"}));  // no temporaries left
}

TEST(WriteImage, OutOfRangeLabelsAreRefusedNamingKeyAndMax) {
  const auto dir = test::scratch() / "out";
  auto h = harness("io.write_image", {{"dir", dir.string()}});
  const auto err = error_of([&] { h.consume({array_item("big", labels(10, 10, 70000))}); });
  EXPECT_NE(err.find("item 'big'"), std::string::npos) << err;
  EXPECT_NE(err.find("max 70000"), std::string::npos) << err;
  Array negative = labels(10, 10, 5);
  negative.at<std::int32_t>(0, 0) = -1;
  EXPECT_NE(error_of([&] { h.consume({array_item("neg", negative)}); }).find("[-1, 5]"), std::string::npos);
  h.commit();
  EXPECT_TRUE(files_below(dir).empty());
}

TEST(WriteImage, RgbIsWrittenAsColourAndReadsBackAsRgb) {
  const auto dir = test::scratch() / "out";
  auto w = harness("io.write_image", {{"dir", dir.string()}, {"format", "tiff"}});
  w.consume({array_item("red", rgb(200, 10, 20))});
  w.commit();
  const cv::Mat bgr = cv::imread((dir / "red.tif").string(), cv::IMREAD_UNCHANGED);
  ASSERT_EQ(bgr.type(), CV_8UC3);
  EXPECT_EQ(bgr.at<cv::Vec3b>(1, 1), cv::Vec3b(20, 10, 200));
  auto back = items_of(harness("io.read_images", {{"path", (dir / "red.tif").string()}}).source());
  EXPECT_EQ(back.at(0).array().at<std::uint8_t>(1, 1, 0), 200);
}

TEST(WriteImage, NameTemplateMakesSubFolders) {
  const auto dir = test::scratch() / "out";
  auto h = harness("io.write_image", {{"dir", dir.string()}, {"name", "{image}/mask-{stem}"}});
  Item a = array_item("s1/tile/0/3", labels(4, 4, 9));
  a.meta.attrs["image"] = "s1";
  h.consume({a});
  const auto err = error_of([&] { h.consume({array_item("no-image-attr", labels(4, 4, 9))}); });
  EXPECT_NE(err.find("item 'no-image-attr' has no string attribute 'image'"), std::string::npos) << err;
  h.commit();
  EXPECT_EQ(files_below(dir), (std::vector<std::string>{"s1/mask-3.png"}));

  try {
    harness("io.write_image", {{"dir", dir.string()}, {"name", "{key}-{tile}"}});
    FAIL() << "no error";
  } catch (const ParamError& e) {
    EXPECT_EQ(e.param(), "name");
    EXPECT_NE(std::string(e.what()).find("unknown placeholder {tile}"), std::string::npos) << e.what();
  }
}

TEST(WriteImage, TwoItemsForOneFileAreRefusedNamingBoth) {
  const auto dir = test::scratch() / "out";
  auto h = harness("io.write_image", {{"dir", dir.string()}, {"name", "{stem}"}});
  h.consume({array_item("a/x", labels(4, 4, 3))});
  const auto err = error_of([&] { h.consume({array_item("b/x", labels(4, 4, 3))}); });
  EXPECT_NE(err.find("items 'a/x' and 'b/x' both map to file '" + (dir / "x.png").string() + "'"), std::string::npos)
      << err;
}

TEST(WriteImage, WritesGoToHiddenTemporariesUntilCommit) {
  const auto dir = test::scratch() / "out";
  auto h = harness("io.write_image", {{"dir", dir.string()}});
  h.consume({array_item("a", rgb(1, 2, 3))});
  const auto before = files_below(dir);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_TRUE(before[0].starts_with(".a.flowd-tmp-")) << before[0];
  EXPECT_TRUE(before[0].ends_with(".png")) << before[0];
  h.commit();
  EXPECT_EQ(files_below(dir), (std::vector<std::string>{"a.png"}));
}

TEST(WriteImage, AbortLeavesNoFilesAndRemovesTheFoldersItCreated) {
  const auto root = test::scratch();
  const auto dir = root / "new" / "out";
  fs::create_directories(root / "existing");
  write_bytes(root / "existing" / "keep.png", "unrelated");
  {
    auto h = harness("io.write_image", {{"dir", dir.string()}});
    h.consume({array_item("s/1", rgb(1, 2, 3))});
    h.consume({array_item("s/2", labels(3, 3, 2))});
    EXPECT_EQ(files_below(dir).size(), 2u);
    h.abort();
  }
  EXPECT_FALSE(fs::exists(root / "new"));  // created by the sink, empty again: removed
  {
    auto h = harness("io.write_image", {{"dir", (root / "existing").string()}});
    h.consume({array_item("sub/x", rgb(1, 2, 3))});
    h.abort();
  }
  EXPECT_EQ(files_below(root), (std::vector<std::string>{"existing/keep.png"}));
}

TEST(WriteImage, TileViewsAreWrittenWithTheirOwnPixels) {
  const auto dir = test::scratch() / "out";
  const std::string uri = "synthetic:blobs?width=100&height=80&count=1";
  auto tiles = items_of(harness("io.read_tiles", {{"path", uri}, {"tile", 32}, {"halo", 4}}).source());
  auto w = harness("io.write_image", {{"dir", dir.string()}});
  for (const auto& t : tiles) w.consume({t});
  w.commit();
  for (const auto& t : tiles) {
    const cv::Mat back = cv::imread((dir / (t.meta.key + ".png")).string(), cv::IMREAD_COLOR);
    cv::Mat want;
    cv::cvtColor(mat_copy(t.array()), want, cv::COLOR_RGB2BGR);
    EXPECT_TRUE(same_pixels(back, want)) << t.meta.key;
  }
}

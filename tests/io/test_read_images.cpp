// io.read_images: folders, patterns, keys, colour modes and errors.
#include <opencv2/imgcodecs.hpp>

#include "io_support.hpp"

using namespace flowd;
using namespace flowd::iotest;

namespace {

// A small BGR image whose every pixel is (b, g, r), written by OpenCV.
void write_png(const fs::path& p, int b, int g, int r, cv::Size size = {8, 6}) {
  fs::create_directories(p.parent_path());
  ASSERT_TRUE(cv::imwrite(p.string(), cv::Mat(size, CV_8UC3, cv::Scalar(b, g, r))));
}

}  // namespace

TEST(ReadImages, FolderWithAPatternInNaturalOrder) {
  const auto dir = test::scratch();
  write_png(dir / "img10.png", 0, 0, 10);
  write_png(dir / "img2.png", 0, 0, 2);
  write_png(dir / "img1.png", 0, 0, 1);
  write_png(dir / "other.png", 0, 0, 99);
  write_png(dir / ".img3.png", 0, 0, 3);  // hidden: never matched
  write_bytes(dir / "img4.txt", "not an image extension");
  auto items = items_of(harness("io.read_images", {{"path", dir.string()}, {"pattern", "img*"}}).source());
  EXPECT_EQ(keys_of(items), (std::vector<std::string>{"img1", "img2", "img10"}));
  const Item& i = items[1];
  EXPECT_EQ(i.meta.attrs["image"], "img2");
  EXPECT_EQ(i.meta.attrs["file"], (dir / "img2.png").string());
  EXPECT_EQ(i.meta.attrs["image_shape"], Json::array({6, 8}));
  EXPECT_EQ(*i.meta.bbox, Box::make2d(0, 0, 6, 8));
  // RGB order: OpenCV wrote (b, g, r) = (0, 0, 2).
  EXPECT_EQ(i.array().describe(), "u8[6x8x3]");
  EXPECT_EQ(i.array().at<std::uint8_t>(3, 4, 0), 2);
  EXPECT_EQ(i.array().at<std::uint8_t>(3, 4, 2), 0);
}

TEST(ReadImages, RecursiveKeysAreRelativePathsWithoutExtension) {
  const auto dir = test::scratch();
  write_png(dir / "e.png", 1, 1, 1);
  write_png(dir / "a" / "b.png", 1, 1, 1);
  write_png(dir / "a" / "c" / "d.png", 1, 1, 1);
  write_png(dir / ".cache" / "x.png", 1, 1, 1);  // hidden folder: not entered
  auto all = items_of(harness("io.read_images", {{"path", dir.string()}, {"recursive", true}}).source());
  EXPECT_EQ(keys_of(all), (std::vector<std::string>{"a/b", "a/c/d", "e"}));
  EXPECT_EQ(all[1].meta.attrs["file"], (dir / "a" / "c" / "d.png").string());
  auto top = items_of(harness("io.read_images", {{"path", dir.string()}}).source());
  EXPECT_EQ(keys_of(top), (std::vector<std::string>{"e"}));
}

TEST(ReadImages, ASingleFileIsKeyedByItsStem) {
  const auto dir = test::scratch();
  write_png(dir / "slide.7.png", 1, 2, 3);
  auto items = items_of(harness("io.read_images", {{"path", (dir / "slide.7.png").string()}}).source());
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].meta.key, "slide.7");
}

TEST(ReadImages, ColourModes) {
  const auto dir = test::scratch();
  cv::Mat bgra(4, 5, CV_8UC4, cv::Scalar(10, 20, 30, 128));
  ASSERT_TRUE(cv::imwrite((dir / "rgba.png").string(), bgra));
  cv::Mat deep(4, 5, CV_16UC3, cv::Scalar(1000, 2000, 40000));
  ASSERT_TRUE(cv::imwrite((dir / "deep.png").string(), deep));

  auto read = [&](const char* file, const char* mode) {
    return items_of(harness("io.read_images", {{"path", (dir / file).string()}, {"mode", mode}}).source()).at(0).array();
  };
  const Array unchanged = read("rgba.png", "unchanged");
  EXPECT_EQ(unchanged.describe(), "u8[4x5x4]");
  EXPECT_EQ(unchanged.at<std::uint8_t>(0, 0, 0), 30);  // R
  EXPECT_EQ(unchanged.at<std::uint8_t>(0, 0, 3), 128);  // alpha kept
  const Array colour = read("rgba.png", "color");
  EXPECT_EQ(colour.describe(), "u8[4x5x3]");  // alpha dropped
  EXPECT_EQ(colour.at<std::uint8_t>(0, 0, 2), 10);  // B
  EXPECT_EQ(read("rgba.png", "grey").describe(), "u8[4x5]");
  const Array deep_rgb = read("deep.png", "color");
  EXPECT_EQ(deep_rgb.describe(), "u16[4x5x3]");  // 16 bits kept
  EXPECT_EQ(deep_rgb.at<std::uint16_t>(1, 1, 0), 40000);
  EXPECT_EQ(read("deep.png", "grey").describe(), "u16[4x5]");
}

TEST(ReadImages, MissingPathIsNamed) {
  const auto dir = test::scratch();
  const auto missing = (dir / "nope").string();
  const auto err = error_of([&] { harness("io.read_images", {{"path", missing}}).source(); });
  EXPECT_NE(err.find("'" + missing + "' does not exist"), std::string::npos) << err;
}

TEST(ReadImages, EmptyFolderNamesPatternAndFolder) {
  const auto dir = test::scratch();
  write_png(dir / "a.png", 1, 1, 1);
  const auto err = error_of([&] { harness("io.read_images", {{"path", dir.string()}, {"pattern", "b*"}}).source(); });
  EXPECT_NE(err.find("no images matching 'b*' in '" + dir.string() + "'"), std::string::npos) << err;
}

TEST(ReadImages, CorruptFileIsNamedAndTheNextImageStillComes) {
  const auto dir = test::scratch();
  write_png(dir / "a.png", 1, 1, 1);
  write_bytes(dir / "b.png", "\x89PNG\r\n\x1a\n truncated garbage");
  write_png(dir / "c.png", 1, 1, 1);
  auto h = harness("io.read_images", {{"path", dir.string()}});
  std::vector<std::string> keys;
  std::string err;
  // Like --keep-going: the source advanced before it threw, so calling on
  // continues with the next image. One next() per call.
  for (int calls = 0; calls < 10; ++calls) {
    try {
      auto got = items_of(h.source(1));
      if (got.empty()) break;
      for (auto& i : got) keys.push_back(i.meta.key);
    } catch (const Error& e) {
      err = e.what();
    }
  }
  EXPECT_EQ(err, "cannot read image '" + (dir / "b.png").string() + "': truncated PNG (chunk 1 runs past the end of the file, at byte 26)");
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "c"}));
}

TEST(ReadImages, TwoFilesWithTheSameKeyAreRefused) {
  const auto dir = test::scratch();
  write_png(dir / "a.png", 1, 1, 1);
  write_png(dir / "a.q.png", 1, 1, 1);
  ASSERT_TRUE(cv::imwrite((dir / "a.tif").string(), cv::Mat(4, 4, CV_8UC1, cv::Scalar(1))));
  const auto err = error_of([&] { harness("io.read_images", {{"path", dir.string()}}).source(); });
  EXPECT_NE(err.find("would both be item 'a'"), std::string::npos) << err;
  EXPECT_NE(err.find("a.png"), std::string::npos) << err;
  EXPECT_NE(err.find("a.tif"), std::string::npos) << err;
}

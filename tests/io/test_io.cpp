// io.read_tiles and the synthetic "blobs" generator.
#include <chrono>
#include <cstdio>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "image_header.hpp"
#include "io_support.hpp"
#include "synthetic.hpp"

using namespace flowd;
using namespace flowd::iotest;

namespace {

const std::string blobs_1000x700 = "synthetic:blobs?width=1000&height=700&count=1&seed=3";

std::uint64_t fnv1a(const cv::Mat& m) {
  std::uint64_t h = 1469598103934665603ULL;
  for (int y = 0; y < m.rows; ++y) {
    const auto* p = m.ptr<std::uint8_t>(y);
    for (std::size_t i = 0; i < m.cols * m.elemSize(); ++i) h = (h ^ p[i]) * 1099511628211ULL;
  }
  return h;
}

}  // namespace

TEST(ReadTiles, KeysCoresAndBoxesWhenTheImageIsNotAMultipleOfTheTile) {
  auto h = harness("io.read_tiles", {{"path", blobs_1000x700}, {"tile", 256}, {"halo", 16}});
  const auto tiles = items_of(h.source());
  // 700 rows -> 3 tile rows (256, 256, 188); 1000 cols -> 4 tile cols (256, 256, 256, 232).
  ASSERT_EQ(tiles.size(), 12u);
  std::vector<std::string> want;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) want.push_back("blobs-0/tile/" + std::to_string(r) + "/" + std::to_string(c));
  EXPECT_EQ(keys_of(tiles), want);

  const Item& first = tiles.front();
  EXPECT_EQ(*first.meta.core, Box::make2d(0, 0, 256, 256));
  EXPECT_EQ(*first.meta.bbox, Box::make2d(0, 0, 272, 272));  // halo clipped at the top and left

  const Item& inner = tiles[5];  // row 1, col 1: the halo fits on every side
  EXPECT_EQ(*inner.meta.core, Box::make2d(256, 256, 256, 256));
  EXPECT_EQ(*inner.meta.bbox, Box::make2d(240, 240, 288, 288));

  const Item& last = tiles.back();  // row 2, col 3: smaller edge tile
  EXPECT_EQ(*last.meta.core, Box::make2d(512, 768, 188, 232));
  EXPECT_EQ(*last.meta.bbox, Box::make2d(496, 752, 204, 248));  // clipped at the bottom and right

  for (const auto& t : tiles) {
    const Array& a = t.array();
    EXPECT_EQ(a.ndim(), 3);
    EXPECT_EQ(a.shape(0), t.meta.bbox->extent[0]) << t.meta.key;
    EXPECT_EQ(a.shape(1), t.meta.bbox->extent[1]) << t.meta.key;
    EXPECT_EQ(a.shape(2), 3);
    EXPECT_TRUE(t.meta.bbox->contains(*t.meta.core));
  }
  EXPECT_EQ(last.meta.attrs["tile_index"], Json::array({2, 3}));
  EXPECT_EQ(last.meta.attrs["grid"], Json::array({3, 4}));
  EXPECT_EQ(last.meta.attrs["tile"], 256);
  EXPECT_EQ(last.meta.attrs["halo"], 16);
  EXPECT_EQ(last.meta.attrs["image"], "blobs-0");
  EXPECT_EQ(last.meta.attrs["image_shape"], Json::array({700, 1000}));
  EXPECT_EQ(last.meta.attrs["file"], "synthetic:blobs?width=1000&height=700&count=1&seed=3");
}

TEST(ReadTiles, TilePixelsAreViewsOfTheSourceImage) {
  auto whole = items_of(harness("io.read_images", {{"path", blobs_1000x700}}).source());
  ASSERT_EQ(whole.size(), 1u);
  const cv::Mat image = mat_copy(whole[0].array());
  auto tiles = items_of(harness("io.read_tiles", {{"path", blobs_1000x700}, {"tile", 300}, {"halo", 20}}).source());
  ASSERT_EQ(tiles.size(), 12u);
  for (const auto& t : tiles) {
    const Box& b = *t.meta.bbox;
    const cv::Rect roi(static_cast<int>(b.origin[1]), static_cast<int>(b.origin[0]), static_cast<int>(b.extent[1]),
                       static_cast<int>(b.extent[0]));
    EXPECT_TRUE(same_pixels(mat_copy(t.array()), image(roi))) << t.meta.key;
  }
  // Zero-copy: neighbouring tiles point into the same buffer, one core apart
  // minus the halo, and their rows keep the whole image's stride.
  const auto* a = static_cast<const std::uint8_t*>(tiles[0].array().raw());
  const auto* b = static_cast<const std::uint8_t*>(tiles[1].array().raw());
  EXPECT_EQ(b - a, (300 - 20) * 3);
  EXPECT_EQ(tiles[0].array().stride(0), 1000 * 3);
}

TEST(ReadTiles, TilesOfEveryImageInOrder) {
  auto tiles = items_of(
      harness("io.read_tiles", {{"path", "synthetic:blobs?width=64&height=48&count=3"}, {"tile", 32}, {"mode", "grey"}})
          .source());
  ASSERT_EQ(tiles.size(), 12u);
  EXPECT_EQ(tiles[0].meta.key, "blobs-0/tile/0/0");
  EXPECT_EQ(tiles[4].meta.key, "blobs-1/tile/0/0");
  EXPECT_EQ(tiles[11].meta.key, "blobs-2/tile/1/1");
  EXPECT_EQ(tiles[11].array().ndim(), 2);  // grey
  EXPECT_EQ(*tiles[11].meta.bbox, Box::make2d(32, 32, 16, 32));
}

TEST(ReadTiles, HaloMustBeSmallerThanTile) {
  try {
    harness("io.read_tiles", {{"path", blobs_1000x700}, {"tile", 64}, {"halo", 64}});
    FAIL() << "no error";
  } catch (const ParamError& e) {
    EXPECT_EQ(e.param(), "halo");
    EXPECT_NE(std::string(e.what()).find("smaller than tile"), std::string::npos) << e.what();
  }
}

TEST(Synthetic, SameSeedGivesIdenticalBytesAndOtherSeedsDiffer) {
  const cv::Mat a = io::synthetic_blobs(300, 200, 0, 7);
  const cv::Mat b = io::synthetic_blobs(300, 200, 0, 7);
  EXPECT_TRUE(same_pixels(a, b));
  EXPECT_FALSE(same_pixels(a, io::synthetic_blobs(300, 200, 0, 8)));
  EXPECT_FALSE(same_pixels(a, io::synthetic_blobs(300, 200, 1, 7)));

  // Through the operator too: the URI's seed reaches the generator.
  auto read = [](const std::string& uri) { return mat_copy(items_of(harness("io.read_images", {{"path", uri}}).source())[0].array()); };
  EXPECT_TRUE(same_pixels(read("synthetic:blobs?width=128&height=96&count=1&seed=5"),
                          read("synthetic:blobs?seed=5&count=1&height=96&width=128")));
  EXPECT_FALSE(same_pixels(read("synthetic:blobs?width=128&height=96&count=1&seed=5"),
                           read("synthetic:blobs?width=128&height=96&count=1&seed=6")));
}

TEST(Synthetic, GoldenBytes) {
  // Pins the generator's output: a change here breaks reproducibility of
  // every data set generated before, on any platform.
  EXPECT_EQ(fnv1a(io::synthetic_blobs(256, 192, 0, 1)), 0xfe72192d982ce0fbULL);
  EXPECT_EQ(fnv1a(io::synthetic_blobs(97, 61, 3, 123456789)), 0xf6b79886a0e4932eULL);
}

TEST(Synthetic, LooksLikeAStainedTissueField) {
  const cv::Mat rgb = io::synthetic_blobs(800, 800, 0, 1);
  ASSERT_EQ(rgb.type(), CV_8UC3);
  const cv::Scalar mean = cv::mean(rgb);
  EXPECT_GT(mean[0], mean[1]) << "pink: more red than green";
  EXPECT_GT(mean[2], mean[1]) << "pink: more blue than green";
  cv::Mat grey, dark;
  cv::cvtColor(rgb, grey, cv::COLOR_RGB2GRAY);
  cv::threshold(grey, dark, 120, 255, cv::THRESH_BINARY_INV);
  const double nuclei = cv::countNonZero(dark) / static_cast<double>(rgb.total());
  EXPECT_GT(nuclei, 0.08);
  EXPECT_LT(nuclei, 0.35);
  cv::Mat labels;
  const int blobs = cv::connectedComponents(dark, labels, 8) - 1;
  // ~1 per 40x40 px = 400 here; touching ones merge into one component.
  EXPECT_GT(blobs, 150);
  EXPECT_LT(blobs, 500);
}

TEST(Synthetic, UriErrorsListTheValidChoices) {
  auto err = [](const std::string& uri) { return error_of([&] { harness("io.read_images", {{"path", uri}}).source(); }); };
  const auto gen = err("synthetic:stripes?width=10");
  EXPECT_NE(gen.find("unknown generator 'stripes' (valid: blobs, hne, tem)"), std::string::npos) << gen;
  const auto key = err("synthetic:blobs?width=10&colour=red");
  EXPECT_NE(key.find("unknown key 'colour' (valid: width, height, count, seed)"), std::string::npos) << key;
  const auto value = err("synthetic:blobs?width=0");
  EXPECT_NE(value.find("'width' must be an integer in [1, 65536], got '0'"), std::string::npos) << value;
  EXPECT_EQ(io::parse_synthetic_uri("synthetic:blobs").uri(), "synthetic:blobs?width=2048&height=2048&count=2&seed=1");
}

// synthetic:hne takes every generator parameter and its named conditions;
// the keys beside a condition override it wherever they stand.
TEST(Synthetic, HneConditionsAndKeys) {
  const std::string defaults =
      "synthetic:hne?width=64&height=48&count=1&seed=3&mpp=0.25&density=1&stain=1&blur=1&noise=1";
  EXPECT_EQ(io::parse_synthetic_uri("synthetic:hne?width=64&height=48&count=1&seed=3").uri(), defaults)
      << "keys at their defaults stay out of the canonical URI, as before they existed";
  const auto hard = io::parse_synthetic_uri("synthetic:hne?jpeg=0&condition=hard&width=64&height=48&count=1");
  EXPECT_EQ(hard.tissue, "mixed");
  EXPECT_EQ(hard.jpeg, 0) << "the explicit key wins over the condition";
  EXPECT_GT(hard.overlap, 0.0);
  EXPECT_EQ(io::parse_synthetic_uri(hard.uri()).uri(), hard.uri()) << "the canonical URI reads back as itself";
  const auto np = io::parse_synthetic_uri("synthetic:hne?width=64&height=48&count=1&tissue=neuropil&pale=0.6&jpeg=85");
  EXPECT_EQ(np.uri(),
            "synthetic:hne?width=64&height=48&count=1&seed=1&mpp=0.25&density=1&stain=1&blur=1&noise=1&pale=0.6&"
            "tissue=neuropil&jpeg=85");
  EXPECT_FALSE(
      same_pixels(io::synthetic_image(np, 0),
                  io::synthetic_image(io::parse_synthetic_uri("synthetic:hne?width=64&height=48&count=1"), 0)));
  auto err = [](const std::string& uri) {
    return error_of([&] { harness("io.read_images", {{"path", uri}}).source(); });
  };
  const auto tissue = err("synthetic:hne?width=16&tissue=brain");
  EXPECT_NE(tissue.find("tissue must be one of stroma, neuropil, mixed, got 'brain'"), std::string::npos) << tissue;
  const auto condition = err("synthetic:hne?width=16&condition=glioma");
  EXPECT_NE(condition.find("unknown condition 'glioma' (valid: stroma, neuropil"), std::string::npos) << condition;
  const auto pale = err("synthetic:hne?width=16&pale=3");
  EXPECT_NE(pale.find("pale must be in [0, 1], got 3"), std::string::npos) << pale;
  const auto jpeg = err("synthetic:hne?width=16&jpeg=high");
  EXPECT_NE(jpeg.find("'jpeg' must be an integer in [0, 100], got 'high'"), std::string::npos) << jpeg;
  const auto key = err("synthetic:hne?width=16&colour=red");
  EXPECT_NE(key.find("(valid: width, height, count, seed, condition, mpp,"), std::string::npos) << key;
}

TEST(ImageHeader, SizesOfEveryFormatWithoutDecoding) {
  const auto dir = test::scratch();
  const cv::Mat img(37, 53, CV_8UC3, cv::Scalar(10, 20, 30));
  for (const char* ext : {".png", ".jpg", ".bmp", ".tif"}) {
    const auto p = dir / (std::string("a") + ext);
    ASSERT_TRUE(cv::imwrite(p.string(), img));
    const auto size = io::peek_image_size(p);
    ASSERT_TRUE(size.has_value()) << ext;
    EXPECT_EQ(*size, cv::Size(53, 37)) << ext;
  }
  const cv::Mat grey16(300, 70000 / 100, CV_16UC1, cv::Scalar(1000));
  ASSERT_TRUE(cv::imwrite((dir / "b.tif").string(), grey16));
  EXPECT_EQ(*io::peek_image_size(dir / "b.tif"), cv::Size(700, 300));
  write_bytes(dir / "c.png", "not a png at all");
  EXPECT_FALSE(io::peek_image_size(dir / "c.png").has_value());
  EXPECT_FALSE(io::peek_image_size(dir / "missing.png").has_value());
}

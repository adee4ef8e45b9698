// io.write_mosaic and the LabelMosaic behind it: objects crossing tile
// borders are neither lost nor doubled, whatever order tiles arrive in.
#include <algorithm>
#include <map>
#include <optional>
#include <random>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "io_support.hpp"
#include "label_mosaic.hpp"

using namespace flowd;
using namespace flowd::iotest;
using runtime::RunStatus;

namespace {

// Discs placed so that many straddle the borders and corners of 64-px tiles.
cv::Mat discs(int rows, int cols, int* count) {
  cv::Mat l = cv::Mat::zeros(rows, cols, CV_32S);
  int n = 0;
  for (int r = 10; r < rows - 10; r += 32)
    for (int c = 12; c < cols - 10; c += 29) {
      const int radius = 4 + (r * 7 + c * 3) % 6;
      cv::circle(l, {c, r}, radius, cv::Scalar(++n), cv::FILLED);
    }
  *count = n;
  return l;
}

// True when a and b label the same objects (a bijection between labels).
::testing::AssertionResult same_up_to_renumbering(const cv::Mat& a, const cv::Mat& b) {
  std::map<int, int> ab, ba;
  for (int r = 0; r < a.rows; ++r)
    for (int c = 0; c < a.cols; ++c) {
      const int x = a.at<int>(r, c), y = b.at<int>(r, c);
      if ((x == 0) != (y == 0)) return ::testing::AssertionFailure() << "foreground differs at " << r << "," << c;
      if (x == 0) continue;
      if (ab.emplace(x, y).first->second != y || ba.emplace(y, x).first->second != x)
        return ::testing::AssertionFailure() << "label " << x << " maps to two labels (at " << r << "," << c << ")";
    }
  return ::testing::AssertionSuccess();
}

// The tiles of `global` (tile x tile cores, `halo` around), each relabelled
// locally so tile labels carry no global information.
struct Cut {
  cv::Mat labels;
  Box bbox, core;
  int order;
};
std::vector<Cut> cut(const cv::Mat& global, int tile, int halo) {
  std::vector<Cut> out;
  int order = 0;
  for (int r0 = 0; r0 < global.rows; r0 += tile)
    for (int c0 = 0; c0 < global.cols; c0 += tile) {
      const int h = std::min(tile, global.rows - r0), w = std::min(tile, global.cols - c0);
      const int br = std::max(0, r0 - halo), bc = std::max(0, c0 - halo);
      const int bh = std::min(global.rows, r0 + h + halo) - br, bw = std::min(global.cols, c0 + w + halo) - bc;
      cv::Mat local = global(cv::Rect(bc, br, bw, bh)).clone();
      std::map<int, int> renum;
      for (auto it = local.begin<int>(); it != local.end<int>(); ++it)
        if (*it) *it = renum.emplace(*it, static_cast<int>(renum.size()) * 3 + 7).first->second;
      out.push_back({local, Box::make2d(br, bc, bh, bw), Box::make2d(r0, c0, h, w), order++});
    }
  return out;
}

}  // namespace

TEST(LabelMosaic, ObjectsOnTileBordersAreNeitherLostNorDoubled) {
  int n = 0;
  const cv::Mat global = discs(300, 260, &n);
  ASSERT_GT(n, 50);
  auto tiles = cut(global, 64, 16);
  std::shuffle(tiles.begin(), tiles.end(), std::mt19937(3));
  io::LabelMosaic m("img", global.rows, global.cols, static_cast<int>(tiles.size()));
  for (const auto& t : tiles) {
    EXPECT_FALSE(m.complete());
    m.add(t.order, t.labels, t.bbox, t.core);
  }
  ASSERT_TRUE(m.complete());
  int objects = 0;
  const cv::Mat out = m.assemble(&objects);
  EXPECT_EQ(objects, n);
  EXPECT_TRUE(same_up_to_renumbering(out, global));
}

TEST(LabelMosaic, TheResultDoesNotDependOnArrivalOrder) {
  int n = 0;
  const cv::Mat global = discs(200, 190, &n);
  const auto tiles = cut(global, 50, 12);
  cv::Mat first;
  for (unsigned seed : {1u, 2u, 3u}) {
    auto shuffled = tiles;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(seed));
    io::LabelMosaic m("img", global.rows, global.cols, static_cast<int>(tiles.size()));
    for (const auto& t : shuffled)
      m.add(t.order, t.labels, t.bbox, t.core);
    const cv::Mat out = m.assemble();
    if (first.empty())
      first = out;
    else
      EXPECT_EQ(cv::countNonZero(out != first), 0) << "seed " << seed;
  }
}

// A tile that is the whole image (a folder of small tiles): every object is
// its own, numbered in the order of its local labels, with or without a core.
TEST(LabelMosaic, ATileThatIsTheWholeImageOwnsEveryObject) {
  cv::Mat labels = cv::Mat::zeros(40, 50, CV_32S);
  cv::rectangle(labels, cv::Rect(0, 0, 6, 5), cv::Scalar(9), cv::FILLED);  // on two borders
  cv::rectangle(labels, cv::Rect(20, 10, 8, 8), cv::Scalar(2), cv::FILLED);
  cv::rectangle(labels, cv::Rect(44, 30, 6, 10), cv::Scalar(5), cv::FILLED);  // the far corner
  for (const std::optional<Box>& core : {std::optional<Box>(Box::make2d(0, 0, 40, 50)), std::optional<Box>()}) {
    io::LabelMosaic m("img", 40, 50, 1);
    m.add(0, labels, Box::make2d(0, 0, 40, 50), core);
    int objects = 0;
    const cv::Mat out = m.assemble(&objects);
    EXPECT_EQ(objects, 3);
    EXPECT_EQ(out.at<int>(0, 0), 3);
    EXPECT_EQ(out.at<int>(12, 22), 1);
    EXPECT_EQ(out.at<int>(39, 49), 2);
    EXPECT_EQ(cv::countNonZero(out), cv::countNonZero(labels));
  }
}

// The same tile labelled 1..n already is the result itself, not a copy.
TEST(LabelMosaic, AWholeImageTileLabelledOneToNIsTakenAsItIs) {
  cv::Mat labels = cv::Mat::zeros(40, 50, CV_32S);
  cv::rectangle(labels, cv::Rect(0, 0, 6, 5), cv::Scalar(2), cv::FILLED);
  cv::rectangle(labels, cv::Rect(20, 10, 8, 8), cv::Scalar(1), cv::FILLED);
  io::LabelMosaic m("img", 40, 50, 1);
  m.add(0, labels, Box::make2d(0, 0, 40, 50), Box::make2d(0, 0, 40, 50));
  int objects = 0;
  const cv::Mat out = m.assemble(&objects);
  EXPECT_EQ(objects, 2);
  EXPECT_EQ(out.data, labels.data);
  // A core smaller than the tile: objects outside it are not the tile's, so
  // the labels are assembled anew.
  io::LabelMosaic part("img", 40, 50, 1);
  part.add(0, labels, Box::make2d(0, 0, 40, 50), Box::make2d(8, 8, 32, 42));
  const cv::Mat assembled = part.assemble(&objects);
  EXPECT_NE(assembled.data, labels.data);
  EXPECT_EQ(objects, 1);
  EXPECT_EQ(assembled.at<int>(0, 0), 0);
  EXPECT_EQ(assembled.at<int>(12, 22), 1);
}

TEST(LabelMosaic, RefusesATileOutsideTheImageOrOfTheWrongSize) {
  io::LabelMosaic m("img", 10, 10, 1);
  const cv::Mat l = cv::Mat::zeros(4, 4, CV_32S);
  EXPECT_NE(error_of([&] { m.add(0, l, Box::make2d(8, 8, 4, 4), std::nullopt); }).find("outside the 10x10 image"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m.add(0, l, Box::make2d(0, 0, 5, 4), std::nullopt); }).find("does not match"),
            std::string::npos);
}

TEST(LabelMosaic, ContoursOutlineEveryObject) {
  cv::Mat labels = cv::Mat::zeros(20, 20, CV_32S);
  cv::rectangle(labels, cv::Rect(2, 2, 6, 6), cv::Scalar(1), cv::FILLED);
  cv::rectangle(labels, cv::Rect(8, 2, 6, 6), cv::Scalar(2), cv::FILLED);  // touches object 1
  cv::Mat rgb(20, 20, CV_8UC3, cv::Scalar(10, 10, 10));
  io::draw_contours(rgb, labels, cv::Scalar(0, 255, 0));
  EXPECT_EQ(rgb.at<cv::Vec3b>(2, 2), cv::Vec3b(0, 255, 0));     // corner of 1
  EXPECT_EQ(rgb.at<cv::Vec3b>(4, 7), cv::Vec3b(0, 255, 0));     // 1's side facing 2
  EXPECT_EQ(rgb.at<cv::Vec3b>(4, 8), cv::Vec3b(0, 255, 0));     // 2's side facing 1
  EXPECT_EQ(rgb.at<cv::Vec3b>(4, 4), cv::Vec3b(10, 10, 10));    // interior
  EXPECT_EQ(rgb.at<cv::Vec3b>(15, 15), cv::Vec3b(10, 10, 10));  // background
}

// The sink in a run: tiles with a halo, thresholded and labelled per tile,
// give the same objects as labelling the whole image at once.
TEST(WriteMosaic, TiledLabellingEqualsWholeImageLabelling) {
  const auto dir = test::scratch();
  const std::string input = "synthetic:blobs?width=700&height=520&count=2&seed=4";
  const std::string json = R"({"version": 1, "stages": {
    "tiles": {"op": "io.read_tiles", "params": {"path": ")" +
                           input + R"(", "tile": 128, "halo": 64}},
    "grey":  {"op": "image.grey", "inputs": {"image": "tiles.tile"}},
    "mask":  {"op": "image.threshold", "inputs": {"image": "grey.image"}, "params": {"method": "fixed", "level": 150, "invert": true}},
    "label": {"op": "image.label", "inputs": {"mask": "mask.mask"}},
    "write": {"op": "io.write_mosaic", "inputs": {"labels": "label.labels", "image": "tiles.tile"},
              "params": {"labels_dir": ")" +
                           (dir / "labels").string() + R"(", "overlay_dir": ")" + (dir / "overlay").string() + R"("}}
  }})";
  const auto report = test::run(json);
  ASSERT_EQ(report.status, RunStatus::succeeded) << report.error;
  for (const char* image : {"blobs-0", "blobs-1"}) {
    const cv::Mat written = cv::imread((dir / "labels" / (std::string(image) + ".png")).string(), cv::IMREAD_UNCHANGED);
    ASSERT_EQ(written.type(), CV_16U) << image;
    ASSERT_EQ(written.size(), cv::Size(700, 520));
    // The same operators on the whole image.
    auto whole = items_of(harness("io.read_images", {{"path", input}}).source());
    const Item& img = whole[image == std::string("blobs-0") ? 0 : 1];
    cv::Mat grey, mask, labels;
    cv::cvtColor(as_mat(img.array()), grey, cv::COLOR_RGB2GRAY);
    cv::threshold(grey, mask, 150, 255, cv::THRESH_BINARY_INV);
    cv::connectedComponents(mask, labels, 8, CV_32S);
    cv::Mat w32;
    written.convertTo(w32, CV_32S);
    EXPECT_TRUE(same_up_to_renumbering(w32, labels)) << image;
    const cv::Mat overlay = cv::imread((dir / "overlay" / (std::string(image) + ".png")).string(), cv::IMREAD_COLOR);
    EXPECT_EQ(overlay.size(), cv::Size(700, 520));
  }
}

// An image that cannot be written fails its item once; the sink keeps
// nothing of it (the tile it completed is gone after consume), so the commit
// neither writes it nor tries again.
TEST(WriteMosaic, AnImageThatCannotBeWrittenFailsItsItemAndIsNotRetriedAtTheCommit) {
  const auto dir = test::scratch();
  auto w = harness("io.write_mosaic", {{"labels_dir", (dir / "labels").string()}});
  cv::Mat many(300, 300, CV_32S);  // 90,000 objects: more than a 16-bit image holds
  for (int i = 0; i < many.rows * many.cols; ++i)
    many.at<int>(i / many.cols, i % many.cols) = i + 1;
  const auto err = error_of([&] { w.consume({array_item("crowded", from_mat(many))}); });
  EXPECT_NE(err.find("image 'crowded': 90000 objects do not fit a 16-bit label image"), std::string::npos) << err;
  cv::Mat few = cv::Mat::zeros(30, 30, CV_32S);
  cv::rectangle(few, cv::Rect(5, 5, 4, 4), cv::Scalar(1), cv::FILLED);
  w.consume({array_item("fine", from_mat(few))});
  EXPECT_NO_THROW(w.commit());
  EXPECT_TRUE(fs::exists(dir / "labels" / "fine.png"));
  EXPECT_FALSE(fs::exists(dir / "labels" / "crowded.png"));
}

TEST(WriteMosaic, AnOverlayNeedsTheImageInput) {
  const auto dir = test::scratch();
  const std::string json = R"({"version": 1, "stages": {
    "tiles": {"op": "io.read_tiles", "params": {"path": "synthetic:blobs?width=100&height=100&count=1", "tile": 64}},
    "grey":  {"op": "image.grey", "inputs": {"image": "tiles.tile"}},
    "mask":  {"op": "image.threshold", "inputs": {"image": "grey.image"}},
    "label": {"op": "image.label", "inputs": {"mask": "mask.mask"}},
    "write": {"op": "io.write_mosaic", "inputs": {"labels": "label.labels"},
              "params": {"labels_dir": ")" +
                           (dir / "l").string() + R"(", "overlay_dir": ")" + (dir / "o").string() + R"("}}
  }})";
  const auto report = test::run(json);
  EXPECT_EQ(report.status, RunStatus::failed);
  ASSERT_FALSE(report.failures.empty());
  EXPECT_NE(report.failures[0].message.find("overlay_dir is set but the `image` input is not connected"),
            std::string::npos)
      << report.failures[0].describe();
  EXPECT_FALSE(fs::exists(dir / "l" / "blobs-0.png"));
}

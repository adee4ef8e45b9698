#pragma once
// Assembles the instance labels of overlapping tiles into one label image of
// the whole input, counting every object once: a tile owns the objects whose
// centroid lies in its core, and an owned object is pasted whole, halo part
// included, so an object that crosses a core border is neither cut nor
// doubled. Pasting happens in tile order once every tile is in, so the result
// does not depend on the order tiles arrive in.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "flowd/item.hpp"

namespace flowd::io {

class LabelMosaic {
public:
  // rows x cols: the whole image; tiles: how many tiles will arrive.
  LabelMosaic(std::string image, int rows, int cols, int tiles);

  // labels: CV_32S local labels of one tile covering `bbox` (global
  // coordinates); core: the part the tile owns (the whole bbox when absent).
  // `order` ranks the tile (e.g. its row-major grid index). Keeps `labels`
  // (a reference-counted cv::Mat) until assemble().
  void add(int order, const cv::Mat& labels, const Box& bbox, const std::optional<Box>& core);

  bool complete() const noexcept { return static_cast<int>(tiles_.size()) == expected_; }
  int received() const noexcept { return static_cast<int>(tiles_.size()); }
  int expected() const noexcept { return expected_; }
  const std::string& image() const noexcept { return image_; }

  // The whole image's labels, CV_32S, objects numbered 1..n in tile order then
  // in order of their local label; 0 where no owned object lies. Where two
  // owned objects overlap, the earlier keeps the pixel. For an image that is
  // one tile whose labels are already 1..n, the tile's labels themselves
  // (shared, not copied: read them only).
  cv::Mat assemble(int* objects = nullptr) const;

private:
  struct Tile {
    int order;
    cv::Mat labels;
    Box bbox;
    std::vector<std::int32_t> owned;  // local label -> 1 if owned (index = label)
    bool owns_all;                    // its core holds the whole tile: every object is owned
  };
  // The single tile's labels when they are already the result (see assemble).
  std::optional<cv::Mat> as_it_is(int* objects) const;
  std::string image_;
  int rows_, cols_, expected_;
  std::vector<Tile> tiles_;
};

// Marks object borders: pixels with a label whose 4-neighbourhood holds
// another value (background included). rgb: CV_8UC3 or CV_16UC3, changed in
// place to `colour` (in the image's depth) on every border pixel.
void draw_contours(cv::Mat& rgb, const cv::Mat& labels, const cv::Scalar& colour);

}  // namespace flowd::io

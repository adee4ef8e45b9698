#pragma once
// io.write_mosaic: the instance labels of a tiled image, assembled into one
// 16-bit label image per input image (and, optionally, the image with the
// objects' contours drawn on it).
#include <filesystem>
#include <map>
#include <string>

#include "flowd/flowd.hpp"
#include "label_mosaic.hpp"
#include "name_template.hpp"

namespace flowd::io {

class WriteMosaic final : public Sink {
public:
  static OperatorSpec spec();
  explicit WriteMosaic(const Params& params);

  void open(SinkContext& ctx) override;
  void consume(SinkContext& ctx) override;
  void commit(SinkContext& ctx) override;
  void abort() noexcept override;

private:
  struct Pending {
    LabelMosaic labels;
    cv::Mat bgr;  // the cores of the image's tiles, when an overlay is written (in the order PNG files keep)
  };
  void write(const std::string& image, Pending& p, SinkContext& ctx);
  // The core of the item's `image` input into the image's overlay.
  static void paste_core(Pending& pend, const Item& item, const Array& labels, const Box& bbox, SinkContext& ctx);

  std::filesystem::path labels_dir_, overlay_dir_;
  cv::Scalar colour_;
  std::map<std::string, Pending> pending_;   // image -> tiles so far
  std::map<std::string, std::string> done_;  // image -> file written
};

}  // namespace flowd::io

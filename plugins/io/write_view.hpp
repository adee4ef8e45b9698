#pragma once
// io.write_view: the virtual microscope's output, the pieces of a view
// (image.subsample's items, each at its bbox in the view) stitched into one
// image per input image. A view is encoded as soon as its last piece arrives
// (its PNG staged, its pixels freed: memory holds only the views being
// filled, and the encoding overlaps the reading of the next images) and the
// files appear when the run succeeds.
#include <filesystem>
#include <map>
#include <string>

#include <opencv2/core.hpp>

#include "flowd/flowd.hpp"
#include "name_template.hpp"

namespace flowd::io {

class WriteView final : public Sink {
public:
  static OperatorSpec spec();
  explicit WriteView(const Params& params);

  void open(SinkContext& ctx) override;
  void consume(SinkContext& ctx) override;
  void commit(SinkContext& ctx) override;

private:
  struct View {
    cv::Mat pixels;
    std::string first_key;          // an item of it, for errors
    std::int64_t pixels_filled = 0;  // to check that the pieces tile the view
    bool written = false;            // encoded and staged; pixels freed
  };
  void write(SinkContext& ctx, const std::string& image, View& v);
  std::filesystem::path dir_;
  std::map<std::string, View> views_;  // image -> its view so far
};

}  // namespace flowd::io

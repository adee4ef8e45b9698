#include "write_view.hpp"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "flowd/opencv.hpp"

namespace flowd::io {

OperatorSpec WriteView::spec() {
  OperatorSpec s;
  s.name = "io.write_view";
  s.doc = "Stitches the pieces of a view (image.subsample's items, each at its bbox in the view) into one PNG per "
          "input image, <dir>/<image>.png; files appear only when the run succeeds";
  s.inputs = {{"view", "array<u8|u16,2|3>", "a piece of a view with its bbox in the view; attrs view_shape, image"}};
  s.params = {ParamSpec::string("dir").doc("output folder; created when missing")};
  return s;
}

WriteView::WriteView(const Params& params) : dir_(params.get<std::string>("dir")) {
  if (dir_.empty()) throw ParamError("dir", "dir is empty");
}

void WriteView::open(SinkContext& ctx) { ctx.output_folder(dir_); }

void WriteView::consume(SinkContext& ctx) {
  const Item& item = ctx.input("view");
  const Array& a = item.array();
  const Json& attrs = item.meta.attrs;
  if (!attrs.contains("view_shape") || !attrs["view_shape"].is_array() || attrs["view_shape"].size() != 2 ||
      !item.meta.bbox)
    throw Error("item '" + item.meta.key + "': expected a piece of a view (image.subsample's output: a bbox and "
                "attrs view_shape)");
  const std::string image =
      attrs.contains("image") && attrs["image"].is_string() ? attrs["image"].get<std::string>() : item.meta.key;
  const int rows = attrs["view_shape"][0].get<int>(), cols = attrs["view_shape"][1].get<int>();
  const int type = CV_MAKETYPE(a.dtype() == DType::u16 ? CV_16U : CV_8U, a.ndim() == 3 ? static_cast<int>(a.shape(2)) : 1);
  auto [it, fresh] = views_.try_emplace(image);
  View& v = it->second;
  if (v.written) {
    if (a.shape(0) == 0 || a.shape(1) == 0) return;  // a tile outside the region, after the view was full
    throw Error("item '" + item.meta.key + "': a piece of the view of image '" + image +
                "', which its earlier pieces had filled already (pieces overlap or came twice)");
  }
  if (fresh) {
    v.pixels = cv::Mat::zeros(rows, cols, type);
    v.first_key = item.meta.key;
  } else if (v.pixels.rows != rows || v.pixels.cols != cols || v.pixels.type() != type) {
    throw Error("items '" + v.first_key + "' and '" + item.meta.key + "' of image '" + image +
                "' are pieces of views of different shapes or pixel types");
  }
  const Box& b = *item.meta.bbox;
  if (a.shape(0) == 0 || a.shape(1) == 0) return;  // a tile outside the region
  if (b.origin[0] < 0 || b.origin[1] < 0 || b.origin[0] + a.shape(0) > rows || b.origin[1] + a.shape(1) > cols)
    throw Error("item '" + item.meta.key + "': its bbox lies outside the " + std::to_string(rows) + " x " +
                std::to_string(cols) + " view");
  const Array packed = a.is_contiguous() ? a : a.contiguous();
  as_mat(packed).copyTo(v.pixels(cv::Rect(static_cast<int>(b.origin[1]), static_cast<int>(b.origin[0]),
                                          static_cast<int>(a.shape(1)), static_cast<int>(a.shape(0)))));
  v.pixels_filled += a.shape(0) * a.shape(1);
  if (v.pixels_filled == static_cast<std::int64_t>(v.pixels.rows) * v.pixels.cols) write(ctx, image, v);
}

void WriteView::write(SinkContext& ctx, const std::string& image, View& v) {
  cv::Mat out = v.pixels;
  if (out.channels() == 3) cv::cvtColor(v.pixels, out, cv::COLOR_RGB2BGR);
  std::vector<std::uint8_t> bytes;
  const auto target = dir_ / (image + ".png");
  if (!cv::imencode(".png", out, bytes)) throw Error("cannot encode '" + target.string() + "' as PNG");
  ctx.write_output(target, bytes);
  v.pixels.release();
  v.written = true;
}

void WriteView::commit(SinkContext&) {
  // The pieces partition each view, and a complete view was written when
  // its last piece came: one not written now lost tiles (or its pieces
  // overlap), and would show black or mixed pixels.
  for (const auto& [image, v] : views_)
    if (!v.written)
      throw Error("the view of image '" + image + "' got " + std::to_string(v.pixels_filled) + " pixels from its " +
                  "pieces, not its " + std::to_string(v.pixels.rows) + " x " + std::to_string(v.pixels.cols));
}

}  // namespace flowd::io

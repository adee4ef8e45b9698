#include "write_mosaic.hpp"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "flowd/opencv.hpp"

namespace flowd::io {

namespace {

// The image an item belongs to and the image's size: from io.read_tiles'
// attributes, or the item itself when it is a whole image.
struct Placement {
  std::string image;
  int rows = 0, cols = 0, tiles = 1, order = 0;
  Box bbox;
};

Placement place(const Item& item, const Array& labels) {
  Placement p;
  const Json& a = item.meta.attrs;
  p.image = a.contains("image") && a["image"].is_string() ? a["image"].get<std::string>() : item.meta.key;
  if (a.contains("image_shape") && a["image_shape"].is_array() && a["image_shape"].size() == 2) {
    p.rows = a["image_shape"][0].get<int>();
    p.cols = a["image_shape"][1].get<int>();
  } else {
    p.rows = static_cast<int>(labels.shape(0));
    p.cols = static_cast<int>(labels.shape(1));
  }
  if (a.contains("grid") && a["grid"].is_array() && a["grid"].size() == 2 && a.contains("tile_index")) {
    const int gc = a["grid"][1].get<int>();
    p.tiles = a["grid"][0].get<int>() * gc;
    p.order = a["tile_index"][0].get<int>() * gc + a["tile_index"][1].get<int>();
  }
  p.bbox = item.meta.bbox ? *item.meta.bbox : Box::make2d(0, 0, labels.shape(0), labels.shape(1));
  return p;
}

cv::Scalar parse_colour(const std::string& hex) {
  if (hex.size() != 7 || hex[0] != '#' || hex.find_first_not_of("0123456789abcdefABCDEF", 1) != std::string::npos)
    throw ParamError("overlay_color", "expected #rrggbb, got '" + hex + "'");
  const auto channel = [&](int i) {
    return std::stoi(hex.substr(1 + 2 * static_cast<std::size_t>(i), 2), nullptr, 16);
  };
  return {static_cast<double>(channel(0)), static_cast<double>(channel(1)), static_cast<double>(channel(2))};
}

std::vector<std::uint8_t> png(const cv::Mat& m, const std::filesystem::path& target) {
  std::vector<std::uint8_t> bytes;
  if (!cv::imencode(".png", m, bytes)) throw Error("cannot encode '" + target.string() + "' as PNG");
  return bytes;
}

}  // namespace

OperatorSpec WriteMosaic::spec() {
  OperatorSpec s;
  s.name = "io.write_mosaic";
  s.doc =
      "Assembles the instance labels of an image's tiles into one 16-bit label PNG per image (each object "
      "counted once: a tile owns the objects whose centroid lies in its core and pastes them whole), and "
      "optionally the image with the objects' contours drawn on it. Images are written as soon as all "
      "their tiles are in; files appear only when the run succeeds";
  s.inputs = {{"labels", "array<i32,2>", "instance labels of a tile (0 = background), with the tile's bbox/core"},
              {"image", "array<u8|u16,3>", "the RGB tile, for the overlay (joined by key)", true}};
  s.params = {
      ParamSpec::string("labels_dir").doc("folder for <image>.png label images; created when missing"),
      ParamSpec::string("overlay_dir", "").doc("folder for <image>.png overlays; empty = no overlays"),
      ParamSpec::string("overlay_color", "#00ff00").doc("contour colour, #rrggbb"),
  };
  return s;
}

WriteMosaic::WriteMosaic(const Params& params)
    : labels_dir_(params.get<std::string>("labels_dir")),
      overlay_dir_(params.get<std::string>("overlay_dir")),
      colour_(parse_colour(params.get<std::string>("overlay_color"))) {
  if (labels_dir_.empty()) throw ParamError("labels_dir", "labels_dir is empty");
}

void WriteMosaic::open(SinkContext& ctx) {
  ctx.output_folder(labels_dir_);
  if (!overlay_dir_.empty()) ctx.output_folder(overlay_dir_);
}

void WriteMosaic::consume(SinkContext& ctx) {
  const Item& item = ctx.input("labels");
  const Array labels = item.array().contiguous();
  const Placement p = place(item, labels);
  const bool overlay = !overlay_dir_.empty();
  if (overlay && !ctx.has_input("image"))
    throw Error("item '" + item.meta.key + "': overlay_dir is set but the `image` input is not connected");
  if (done_.count(p.image))
    throw Error("item '" + item.meta.key + "': image '" + p.image +
                "' was already written; two sources give "
                "images of the same name?");
  auto it = pending_.find(p.image);
  if (it == pending_.end()) {
    Pending fresh{LabelMosaic(p.image, p.rows, p.cols, p.tiles), {}};
    if (overlay) {
      const Array& img = ctx.input("image").array();
      fresh.bgr = cv::Mat::zeros(p.rows, p.cols, img.dtype() == DType::u8 ? CV_8UC3 : CV_16UC3);
    }
    it = pending_.emplace(p.image, std::move(fresh)).first;
  }
  Pending& pend = it->second;
  // The tile that completes its image (the only one, for an image that is
  // one tile) is assembled before consume() returns: a view of the item does.
  // Others wait for their image's last tile: a copy, as the item (and the
  // array it views) is released after consume().
  const bool completes = pend.labels.received() + 1 == pend.labels.expected();
  pend.labels.add(p.order, completes ? as_mat(labels) : as_mat(labels).clone(), p.bbox, item.meta.core);
  if (!completes) {
    if (overlay) paste_core(pend, item, labels, p.bbox, ctx);
    return;
  }
  try {
    if (overlay) paste_core(pend, item, labels, p.bbox, ctx);
    write(p.image, pend, ctx);
  } catch (...) {
    pending_.erase(it);  // it views this item: never kept past consume()
    throw;
  }
  pending_.erase(it);
}

void WriteMosaic::paste_core(Pending& pend, const Item& item, const Array& labels, const Box& bbox, SinkContext& ctx) {
  const Array img = ctx.input("image").array().contiguous();
  if (img.shape(0) != labels.shape(0) || img.shape(1) != labels.shape(1))
    throw Error("item '" + item.meta.key + "': image " + img.describe() + " and labels " + labels.describe() +
                " differ in size");
  // Only the core: the halo belongs to (and is written by) the neighbours.
  const Box core = item.meta.core ? *item.meta.core : bbox;
  const cv::Rect from(static_cast<int>(core.origin[1] - bbox.origin[1]),
                      static_cast<int>(core.origin[0] - bbox.origin[0]), static_cast<int>(core.extent[1]),
                      static_cast<int>(core.extent[0]));
  const cv::Rect to(static_cast<int>(core.origin[1]), static_cast<int>(core.origin[0]), from.width, from.height);
  const cv::Mat src = as_mat(img);
  if (src.type() != pend.bgr.type()) throw Error("item '" + item.meta.key + "': tiles of one image differ in type");
  cv::Mat into = pend.bgr(to);  // same size and type: converted in place
  cv::cvtColor(src(from), into, cv::COLOR_RGB2BGR);
}

void WriteMosaic::write(const std::string& image, Pending& p, SinkContext& ctx) {
  int objects = 0;
  cv::Mat labels = p.labels.assemble(&objects);
  const std::filesystem::path target = labels_dir_ / (image + ".png");
  if (objects > 65535)
    throw Error("image '" + image + "': " + std::to_string(objects) +
                " objects do not fit a 16-bit label image (at most 65535)");
  cv::Mat u16;
  labels.convertTo(u16, CV_16U);
  ctx.write_output(target, png(u16, target));
  if (!overlay_dir_.empty()) {
    draw_contours(p.bgr, labels, cv::Scalar(colour_[2], colour_[1], colour_[0]));
    const std::filesystem::path overlay = overlay_dir_ / (image + ".png");
    ctx.write_output(overlay, png(p.bgr, overlay));
  }
  done_[image] = target.string();
  ctx.info("image '" + image + "': " + std::to_string(objects) + " objects from " +
           std::to_string(p.labels.received()) + " tiles");
}

void WriteMosaic::commit(SinkContext& ctx) {
  // Tiles missing (a --limit run, or failed tiles with --keep-going): the
  // image is written with what arrived, and said so.
  for (auto& [image, p] : pending_) {
    ctx.warn("image '" + image + "': only " + std::to_string(p.labels.received()) + " of " +
             std::to_string(p.labels.expected()) + " tiles arrived; the missing parts are empty");
    write(image, p, ctx);
  }
  pending_.clear();
}

void WriteMosaic::abort() noexcept { pending_.clear(); }

}  // namespace flowd::io

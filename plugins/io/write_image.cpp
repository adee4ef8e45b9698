#include "write_image.hpp"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "flowd/opencv.hpp"

namespace flowd::io {

namespace {

// Whether as_mat() can view the array as it is: rows may be padded, but
// columns and channels must be packed.
bool mat_compatible(const Array& a) {
  const std::int64_t channels = a.ndim() == 3 ? a.shape(2) : 1;
  return (a.ndim() == 2 || a.stride(2) == 1) && a.stride(1) == channels;
}

// The file's bytes: OpenCV wants BGR(A) channel order; i32 labels become u16.
std::vector<std::uint8_t> encode(const Item& item, const std::filesystem::path& target, const std::string& extension) {
  const Array& a = item.array();
  const std::string where = "item '" + item.meta.key + "' -> '" + target.string() + "': ";
  if (a.ndim() == 3 && a.shape(2) != 1 && a.shape(2) != 3 && a.shape(2) != 4)
    throw Error(where + a.describe() + " has " + std::to_string(a.shape(2)) + " channels; images have 1, 3 or 4");
  if (a.numel() == 0) throw Error(where + a.describe() + " is empty");
  const Array packed = mat_compatible(a) ? a : a.contiguous();
  // A view of the input, which is shared: conversions below write to new
  // buffers only.
  cv::Mat m = as_mat(packed);
  if (a.dtype() == DType::i32) {
    double lo = 0, hi = 0;
    cv::minMaxLoc(m.reshape(1), &lo, &hi);
    if (lo < 0 || hi > 65535)
      throw Error(where + "label values span [" + std::to_string(static_cast<long long>(lo)) + ", " +
                  std::to_string(static_cast<long long>(hi)) + "] (max " + std::to_string(static_cast<long long>(hi)) +
                  "); only values in [0, 65535] can be written as a 16-bit image");
    cv::Mat u16;
    m.convertTo(u16, CV_16U);
    m = u16;
  }
  if (m.channels() == 3 || m.channels() == 4) {
    cv::Mat bgr;
    cv::cvtColor(m, bgr, m.channels() == 3 ? cv::COLOR_RGB2BGR : cv::COLOR_RGBA2BGRA);
    m = bgr;
  }
  std::vector<std::uint8_t> bytes;
  try {
    if (!cv::imencode(extension, m, bytes)) throw Error(where + "cannot encode as " + extension);
  } catch (const cv::Exception& e) {
    throw Error(where + "cannot encode as " + extension + ": " + e.err);
  }
  return bytes;
}

}  // namespace

OperatorSpec WriteImage::spec() {
  OperatorSpec s;
  s.name = "io.write_image";
  s.doc = "Writes each item as a PNG or TIFF file named from its key; files appear only when the run succeeds";
  s.inputs = {{"image", "array<u8|u16|i32,2|3>",
               "grey HxW, or HxWxC with C = 1, 3 (RGB) or 4 (RGBA); i32 labels are written as 16-bit"}};
  s.params = {
      ParamSpec::string("dir").doc("output folder; created when missing"),
      ParamSpec::string("format", "png").choices({"png", "tiff"}).doc("png (.png) or tiff (.tif)"),
      ParamSpec::string("name", "{key}").doc(
          "file name template without extension: {key} (slashes make sub-folders), {stem} (last key part), "
          "{image} (the item's attrs.image)"),
  };
  return s;
}

WriteImage::WriteImage(const Params& params)
    : dir_(params.get<std::string>("dir")),
      extension_(params.get<std::string>("format") == "tiff" ? ".tif" : ".png"),
      name_(params.get<std::string>("name")) {
  if (dir_.empty()) throw ParamError("dir", "dir is empty");
}

void WriteImage::open(SinkContext& ctx) { ctx.output_folder(dir_); }

void WriteImage::consume(SinkContext& ctx) {
  const Item& item = ctx.input("image");
  std::filesystem::path target = dir_ / name_.expand(item.meta);
  target += extension_;
  const auto [it, fresh] = written_.try_emplace(target.string(), item.meta.key);
  if (!fresh)
    throw Error("items '" + it->second + "' and '" + item.meta.key + "' both map to file '" + target.string() +
                "' (see the `name` parameter)");
  try {
    ctx.write_output(target, encode(item, target, extension_));
  } catch (...) {
    written_.erase(target.string());  // nothing was written for this item
    throw;
  }
}

}  // namespace flowd::io

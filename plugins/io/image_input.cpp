#include "image_input.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fnmatch.h>
#include <system_error>
#include <unistd.h>

#include <opencv2/imgproc.hpp>

#include "decode.hpp"
#include "image_header.hpp"

namespace flowd::io {

namespace fs = std::filesystem;

namespace {

constexpr const char* extensions[] = {".png", ".tif", ".tiff", ".jpg", ".jpeg", ".bmp"};
constexpr const char* extension_list = "png, tif, tiff, jpg, jpeg, bmp";

bool has_image_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find_if(std::begin(extensions), std::end(extensions), [&](const char* e) { return ext == e; }) !=
         std::end(extensions);
}

// Shell glob semantics on the file name: a leading dot must be matched
// explicitly, so hidden files (among them the temporaries of a sink writing
// into the same folder) are never picked up by "*".
bool matches(const std::string& pattern, const fs::path& name) {
  return ::fnmatch(pattern.c_str(), name.filename().c_str(), FNM_PERIOD) == 0;
}

bool hidden(const fs::path& p) { return p.filename().string().starts_with('.'); }

std::string key_of(const fs::path& relative) {
  fs::path k = relative;
  k.replace_extension();
  return k.generic_string();
}

ColorMode parse_mode(const std::string& s) {
  if (s == "color") return ColorMode::color;
  if (s == "grey") return ColorMode::grey;
  if (s == "unchanged") return ColorMode::unchanged;
  throw ParamError("mode", "mode must be color, grey or unchanged, got '" + s + "'");
}

[[noreturn]] void cannot_read(const fs::path& file, const std::string& why) {
  throw Error("cannot read image '" + file.string() + "': " + why);
}

// OpenCV refuses to decode images over these (imgcodecs' validateInputImageSize),
// with its internal check as the only message.
using imagefile::max_image_pixels;
constexpr std::int64_t max_image_side = std::int64_t{1} << 20;  // CV_IO_MAX_IMAGE_WIDTH and _HEIGHT

// Said before OpenCV tries, when the header tells the size.
void check_decodable_size(const fs::path& file) {
  const auto size = peek_image_size(file);
  if (!size) return;
  const auto w = static_cast<std::int64_t>(size->width), h = static_cast<std::int64_t>(size->height);
  const std::uint64_t pixels = static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(h),
                      limit = max_image_pixels();
  const std::string dims = std::to_string(w) + " x " + std::to_string(h);
  if (w > max_image_side || h > max_image_side)
    cannot_read(file, dims + " pixels: a side over " + std::to_string(max_image_side) +
                          " pixels, which OpenCV cannot decode; cut it into tiles (files) first");
  if (pixels > limit)
    cannot_read(file, dims + " = " + std::to_string(pixels) + " pixels, over OpenCV's limit of " +
                          std::to_string(limit) +
                          " pixels per image; cut it into tiles (files) first, or raise the limit with the "
                          "environment variable OPENCV_IO_MAX_IMAGE_PIXELS=" +
                          std::to_string(pixels) + " if this machine has the memory");
}

}  // namespace

std::vector<ParamSpec> InputOptions::specs() {
  std::vector<ParamSpec> p;
  p.push_back(ParamSpec::string("path").input_path().doc(
      "an image file, a folder of images, or a synthetic data set: synthetic:blobs?width=W&height=H&count=N&seed=S, "
      "synthetic:hne?... or synthetic:tem?frames=N&size=S&seed=S (docs/plugins/io.md)"));
  p.push_back(ParamSpec::string("pattern", "*")
                  .doc("for a folder: shell glob on file names (* ? [...]); only png/tif/tiff/jpg/jpeg/bmp files, "
                       "never hidden ones"));
  p.push_back(ParamSpec::boolean("recursive", false).doc("for a folder: also list its sub-folders"));
  p.push_back(ParamSpec::string("mode", "color")
                  .choices({"color", "grey", "unchanged"})
                  .doc("color: RGB (alpha dropped); grey: one channel; unchanged: as stored (RGBA when 4 channels)"));
  return p;
}

InputOptions InputOptions::from(const Params& params) {
  InputOptions o;
  o.path = params.get<std::string>("path");
  o.pattern = params.get<std::string>("pattern");
  o.recursive = params.get<bool>("recursive");
  o.mode = parse_mode(params.get<std::string>("mode"));
  if (o.path.empty()) throw ParamError("path", "path is empty");
  if (o.pattern.empty()) throw ParamError("pattern", "pattern is empty (use \"*\" for every image)");
  return o;
}

ImageSet ImageSet::resolve(const InputOptions& options) {
  ImageSet set;
  if (is_synthetic_uri(options.path)) {
    set.synthetic_ = parse_synthetic_uri(options.path);
    return set;
  }
  const fs::path root(options.path);
  std::error_code ec;
  const auto status = fs::status(root, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw Error("cannot access input path '" + options.path + "': " + ec.message());
  if (!fs::exists(status)) throw Error("input path '" + options.path + "' does not exist");
  if (fs::is_regular_file(status)) {
    set.files_.push_back({root.stem().string(), root});
    return set;
  }
  if (!fs::is_directory(status)) throw Error("input path '" + options.path + "' is neither an image file nor a folder");

  std::vector<File> found;
  auto consider = [&](const fs::directory_entry& e) {
    if (!e.is_regular_file() || !has_image_extension(e.path()) || !matches(options.pattern, e.path())) return;
    found.push_back({key_of(fs::relative(e.path(), root)), e.path()});
  };
  try {
    if (options.recursive) {
      for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
        if (it->is_directory() && hidden(it->path()))
          it.disable_recursion_pending();
        else
          consider(*it);
      }
    } else {
      for (const auto& e : fs::directory_iterator(root))
        consider(e);
    }
  } catch (const fs::filesystem_error& e) {
    throw Error("cannot list input folder '" + options.path + "': " + e.code().message() +
                (e.path1().empty() ? "" : " ('" + e.path1().string() + "')"));
  }
  if (found.empty())
    throw Error("no images matching '" + options.pattern + "' in '" + options.path + "'" +
                (options.recursive ? " or its sub-folders" : "") + " (image extensions: " + extension_list + ")");
  // By key, so files that would share a key end up next to each other.
  std::sort(found.begin(), found.end(), [](const File& a, const File& b) {
    if (key_less(a.key, b.key)) return true;
    if (key_less(b.key, a.key)) return false;
    return a.path < b.path;
  });
  for (std::size_t i = 1; i < found.size(); ++i)
    if (found[i].key == found[i - 1].key)
      throw Error("input files '" + found[i - 1].path.string() + "' and '" + found[i].path.string() +
                  "' would both be item '" + found[i].key + "'; narrow `pattern` or rename one");
  set.files_ = std::move(found);
  return set;
}

std::size_t ImageSet::size() const noexcept {
  return synthetic_ ? static_cast<std::size_t>(synthetic_->count) : files_.size();
}

std::string ImageSet::key(std::size_t i) const {
  return synthetic_ ? synthetic_->key(static_cast<std::int64_t>(i)) : files_.at(i).key;
}

std::string ImageSet::file(std::size_t i) const { return synthetic_ ? synthetic_->uri() : files_.at(i).path.string(); }

std::optional<cv::Size> ImageSet::peek_size(std::size_t i) const {
  if (synthetic_) return cv::Size(synthetic_->width, synthetic_->height);
  return peek_image_size(files_.at(i).path);
}

cv::Mat ImageSet::load(std::size_t i, ColorMode mode, std::vector<std::string>* warnings) const {
  if (!synthetic_) return decode_image_file(files_.at(i).path, mode, warnings);
  cv::Mat img = synthetic_image(*synthetic_, static_cast<std::int64_t>(i));
  cv::Mat out;
  if (img.channels() == 1) {  // tem: grey counts
    if (mode != ColorMode::color) return img;
    cv::cvtColor(img, out, cv::COLOR_GRAY2RGB);
    return out;
  }
  if (mode != ColorMode::grey) return img;
  cv::cvtColor(img, out, cv::COLOR_RGB2GRAY);
  return out;
}

Json ImageSet::attrs(std::size_t i, cv::Size size) const {
  Json a = {{"image", key(i)}, {"file", file(i)}, {"image_shape", {size.height, size.width}}};
  if (synthetic_) a.update(synthetic_->truth_attrs(static_cast<std::int64_t>(i)));
  return a;
}

cv::Mat decode_image_file(const fs::path& file, ColorMode mode, std::vector<std::string>* warnings) {
  std::error_code ec;
  if (!fs::exists(file, ec)) cannot_read(file, "no such file");
  if (::access(file.c_str(), R_OK) != 0) cannot_read(file, std::error_code(errno, std::generic_category()).message());
  check_decodable_size(file);
  const imagefile::Channels channels = mode == ColorMode::color  ? imagefile::Channels::color
                                       : mode == ColorMode::grey ? imagefile::Channels::grey
                                                                 : imagefile::Channels::unchanged;
  cv::Mat m;
  try {
    imagefile::Decoded d = imagefile::decode(imagefile::read_file(file.string()), channels);
    m = std::move(d.pixels);
    if (warnings)
      for (auto& w : d.warnings) warnings->push_back("image '" + file.string() + "': " + w + " (the pixels are as stored)");
  } catch (const imagefile::DecodeError& e) {
    // A size the header peek could not read but OpenCV's check refused.
    const std::string why = e.what();
    if (why.find("CV_IO_MAX_IMAGE") != std::string::npos)
      cannot_read(file, "over OpenCV's image size limits (" + std::to_string(max_image_pixels()) +
                            " pixels, OPENCV_IO_MAX_IMAGE_PIXELS; " + std::to_string(max_image_side) +
                            " per side); cut it into tiles (files) first");
    cannot_read(file, why);
  }
  if (m.depth() != CV_8U && m.depth() != CV_16U && m.depth() != CV_32F)
    cannot_read(file, "pixels are of OpenCV depth " + std::to_string(m.depth()) +
                          " (not 8- or 16-bit unsigned or 32-bit float); flowd reads 8- and 16-bit images and "
                          "32-bit float TIFFs");
  switch (m.channels()) {
    case 1: return m;
    case 3: cv::cvtColor(m, m, cv::COLOR_BGR2RGB); return m;
    case 4: cv::cvtColor(m, m, cv::COLOR_BGRA2RGBA); return m;
    default: cannot_read(file, std::to_string(m.channels()) + " channels; flowd reads 1, 3 or 4");
  }
}

}  // namespace flowd::io

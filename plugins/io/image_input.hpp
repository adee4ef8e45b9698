#pragma once
// What io.read_images and io.read_tiles share: the `path` parameter and its
// companions, the list of images it names (a file, a folder of files, or a
// synthetic data set), and decoding one of them in the requested colour mode.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "flowd/flowd.hpp"
#include "synthetic.hpp"

namespace flowd::io {

enum class ColorMode { color, grey, unchanged };

struct InputOptions {
  std::string path;
  std::string pattern = "*";
  bool recursive = false;
  ColorMode mode = ColorMode::color;

  static std::vector<ParamSpec> specs();
  static InputOptions from(const Params& params);
};

class ImageSet {
public:
  // Lists the folder or parses the synthetic URI. Throws flowd::Error naming
  // the path when it is missing, empty or malformed.
  static ImageSet resolve(const InputOptions& options);

  std::size_t size() const noexcept;
  // Item key: path relative to the folder without extension ("sub/a"), the
  // stem of a single file, or "blobs-<i>".
  std::string key(std::size_t i) const;
  // The file's path, or the data set's canonical URI.
  std::string file(std::size_t i) const;
  // The size without decoding, when the header tells it.
  std::optional<cv::Size> peek_size(std::size_t i) const;
  // Decoded: RGB or RGBA (not BGR) or grey, 8- or 16-bit, or 32-bit float
  // (float TIFFs). Throws flowd::Error naming the file; `warnings` as for
  // decode_image_file.
  cv::Mat load(std::size_t i, ColorMode mode, std::vector<std::string>* warnings = nullptr) const;
  // {"image": key, "file": file, "image_shape": [h, w]}
  Json attrs(std::size_t i, cv::Size size) const;

private:
  struct File {
    std::string key;
    std::filesystem::path path;
  };
  std::vector<File> files_;
  std::optional<SyntheticSpec> synthetic_;
};

// Decodes one file as stored (EXIF orientation is not applied, so pixel
// coordinates match the stored raster) and converts it to flowd's channel
// order. Throws flowd::Error naming the file, also for a truncated or corrupt
// one (imagefile/decode.hpp); what the decoder met and survived without
// changing a pixel is added to `warnings`.
cv::Mat decode_image_file(const std::filesystem::path& file, ColorMode mode,
                          std::vector<std::string>* warnings = nullptr);

}  // namespace flowd::io

#pragma once
// The pixel size of an image file from its header alone, for PNG, JPEG, BMP
// and TIFF (classic and BigTIFF; first page). OpenCV 4.6 can only learn a
// size by decoding the whole image; reading a few header bytes lets a tile
// source announce its total tile count before it decodes anything.
#include <filesystem>
#include <optional>

#include <opencv2/core.hpp>

namespace flowd::io {

// The stored raster size (EXIF orientation not applied); nullopt when the
// format is not one of the above or the header cannot be understood.
std::optional<cv::Size> peek_image_size(const std::filesystem::path& file);

}  // namespace flowd::io

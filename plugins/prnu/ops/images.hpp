#pragma once
// Images and patterns as the PRNU operators see them: decoding a file (with
// the checks a forensic user needs: a truncated or corrupt file is an error
// naming it, not a grey bottom half; imagefile/decode.hpp), bringing it to the sensor's
// orientation and centre crop, and converting between flowd items and the
// core's float images.
#include <filesystem>
#include <string>

#include <flowd/flowd.hpp>

#include "image.hpp"

namespace flowd::prnu {

// RGB on 0..255 as float, the stored raster (EXIF orientation not applied,
// as the reference implementation reads photos). Throws flowd::Error naming
// the file when it is missing, truncated or corrupt, or does not decode;
// what the decoder survived without changing a pixel goes to `log`'s
// warnings.
Image read_image_file(const std::filesystem::path& file, Context* log = nullptr);

// How a photo is brought to the fingerprint's frame: portrait images (taller
// than wide) are turned a quarter counter-clockwise to landscape, the
// sensor's usual orientation (`turned` says so: compare also tries the
// opposite turn); then the centre crop of crop × crop (0: none). Throws
// flowd::Error naming `what` when the image is smaller than the crop.
struct Framed {
  Image image;
  bool turned = false;
};
Framed frame(Image image, int crop, const std::string& what);

// The file behind an item: {"path": ...} (io.list_files) or a string.
std::filesystem::path file_of(const Item& item);

// A single-channel pattern (residual or fingerprint) as an f32 HxW array,
// and back.
Item pattern_item(const ItemMeta& meta, const Image& pattern, bool turned);
Image pattern_of(const Item& item);
bool turned_of(const Item& item);

// An item's pixels: a u8 or f32 HxW or HxWx3 array (io.read_images) as a
// float image on 0..255.
Image image_of_array(const Array& a, const std::string& key);

}  // namespace flowd::prnu

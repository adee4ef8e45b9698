#include "ops/images.hpp"

#include <vector>

#include <opencv2/imgproc.hpp>

#include "decode.hpp"
#include "geometry.hpp"

namespace flowd::prnu {

Image read_image_file(const std::filesystem::path& file, Context* log) {
  const std::string what = "'" + file.string() + "'";
  cv::Mat m;
  try {
    // 8-bit colour, the stored raster (no EXIF turn: the pattern follows the
    // sensor, as prnu-python reads photos with PIL).
    imagefile::Decoded d =
        imagefile::decode(imagefile::read_file(file.string()), imagefile::Channels::color, imagefile::Depth::eight_bit);
    m = std::move(d.pixels);
    if (log)
      for (const auto& w : d.warnings) log->warn(what + ": " + w + " (the pixels are as stored)");
  } catch (const imagefile::DecodeError& e) {
    throw Error(what + ": " + e.what());
  }
  cv::cvtColor(m, m, cv::COLOR_BGR2RGB);
  Image img(m.cols, m.rows, 3);
  for (int y = 0; y < m.rows; ++y) {
    const unsigned char* row = m.ptr<unsigned char>(y);
    float* out = img.data.data() + img.index(0, y);
    for (int x = 0; x < m.cols * 3; ++x) out[x] = static_cast<float>(row[x]);
  }
  return img;
}

Framed frame(Image image, int crop, const std::string& what) {
  Framed f;
  if (image.height > image.width) {
    image = rotate_ccw(image);
    f.turned = true;
  }
  if (crop > 0) {
    if (image.width < crop || image.height < crop)
      throw Error(what + ": " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                  " is smaller than the crop " + std::to_string(crop) + "x" + std::to_string(crop) +
                  " (lower 'crop', or leave this image out)");
    image = centre_crop(image, crop, crop);
  }
  f.image = std::move(image);
  return f;
}

std::filesystem::path file_of(const Item& item) {
  const Json& j = item.json();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("path") && j["path"].is_string()) return j["path"].get<std::string>();
  throw Error("item '" + item.meta.key + "': expected a file ({\"path\": ...}), got " + j.dump().substr(0, 80));
}

Item pattern_item(const ItemMeta& meta, const Image& pattern, bool turned) {
  if (pattern.channels != 1) throw Error("prnu: a pattern has one channel");
  Array a = Array::uninitialized(DType::f32, {pattern.height, pattern.width});
  std::copy(pattern.data.begin(), pattern.data.end(), a.values<float>().begin());
  Item it{meta, Value(std::move(a))};
  if (turned) it.meta.attrs["prnu_turned"] = true;
  return it;
}

Image pattern_of(const Item& item) {
  const Array& a = item.array();
  if (a.dtype() != DType::f32 || a.ndim() != 2 || !a.is_contiguous())
    throw Error("item '" + item.meta.key + "': expected a pattern (f32 HxW), got " + std::string(name_of(a.dtype())) +
                " with " + std::to_string(a.ndim()) + " dimensions");
  const auto v = a.values<float>();
  return Image(static_cast<int>(a.shape(1)), static_cast<int>(a.shape(0)), 1, std::vector<float>(v.begin(), v.end()));
}

bool turned_of(const Item& item) { return item.meta.attrs.value("prnu_turned", false); }

Image image_of_array(const Array& a, const std::string& key) {
  if ((a.ndim() != 2 && a.ndim() != 3) || (a.ndim() == 3 && a.shape(2) != 3 && a.shape(2) != 1) || !a.is_contiguous())
    throw Error("item '" + key + "': expected an HxW or HxWx3 image");
  const int h = static_cast<int>(a.shape(0)), w = static_cast<int>(a.shape(1));
  const int c = a.ndim() == 3 ? static_cast<int>(a.shape(2)) : 1;
  Image img(w, h, c);
  if (a.dtype() == DType::u8) {
    const auto v = a.values<std::uint8_t>();
    for (std::size_t i = 0; i < v.size(); ++i) img.data[i] = v[i];
  } else if (a.dtype() == DType::f32) {
    const auto v = a.values<float>();
    std::copy(v.begin(), v.end(), img.data.begin());
  } else {
    throw Error("item '" + key + "': expected u8 or f32 pixels, got " + std::string(name_of(a.dtype())));
  }
  return img;
}

}  // namespace flowd::prnu

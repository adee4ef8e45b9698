#include "read_images.hpp"

#include "flowd/opencv.hpp"

namespace flowd::io {

OperatorSpec ReadImages::spec() {
  OperatorSpec s;
  s.name = "io.read_images";
  s.doc = "Reads whole images (a file, a folder of files, or a synthetic data set), one item each, RGB or grey";
  s.outputs = {{"image", "array<u8|u16|f32,2|3>",
                "HxW (grey) or HxWxC (RGB, RGBA) pixels (f32 from float TIFFs); bbox is the whole image"}};
  s.params = InputOptions::specs();
  return s;
}

ReadImages::ReadImages(const Params& params) : options_(InputOptions::from(params)) {}

void ReadImages::open(SourceContext& ctx) {
  images_ = ImageSet::resolve(options_);
  ctx.expect(images_->size());
}

bool ReadImages::next(SourceContext& ctx) {
  if (!images_) return false;
  // A resumed run: what an earlier run finished is not read again.
  while (next_ < images_->size() && ctx.finished(images_->key(next_))) ctx.skip(images_->key(next_++));
  if (next_ >= images_->size()) return false;
  const std::size_t i = next_++;  // advanced first: a --keep-going run skips an unreadable image
  cv::Mat m;
  try {
    std::vector<std::string> warnings;
    m = images_->load(i, options_.mode, &warnings);
    for (const auto& w : warnings) ctx.warn(w);
  } catch (const std::exception& e) {
    throw ItemError(images_->key(i), e.what());
  }
  Item item;
  item.meta.key = images_->key(i);
  item.meta.bbox = Box::make2d(0, 0, m.rows, m.cols);
  item.meta.attrs = images_->attrs(i, m.size());
  item.value = from_mat(m);
  ctx.emit("image", std::move(item));
  return next_ < images_->size();
}

}  // namespace flowd::io

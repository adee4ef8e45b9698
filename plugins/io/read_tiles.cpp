#include "read_tiles.hpp"

#include "flowd/opencv.hpp"

namespace flowd::io {

OperatorSpec ReadTiles::spec() {
  OperatorSpec s;
  s.name = "io.read_tiles";
  s.doc = "Cuts each image (file, folder or synthetic data set) into tile x tile pieces with a halo, row-major; "
          "tiles share the decoded image's memory";
  s.outputs = {{"tile", "array<u8|u16|f32,2|3>",
                "pixels of the tile's bbox (core plus halo, clipped to the image); key <image>/tile/<row>/<col>"}};
  s.params = InputOptions::specs();
  s.params.push_back(ParamSpec::integer("tile", 1024).range(16, 65536).doc(
      "side of a tile's core in pixels; edge tiles are smaller when the image is not a multiple"));
  s.params.push_back(ParamSpec::integer("halo", 0).range(0, 4096).doc(
      "pixels of context added on every side of the core (clipped at image borders); must be < tile"));
  return s;
}

ReadTiles::ReadTiles(const Params& params)
    : options_(InputOptions::from(params)), tile_(params.get<std::int64_t>("tile")), halo_(params.get<std::int64_t>("halo")) {
  if (halo_ >= tile_)
    throw ParamError("halo", "halo (" + std::to_string(halo_) + ") must be smaller than tile (" + std::to_string(tile_) + ")");
}

void ReadTiles::open(SourceContext& ctx) {
  images_ = ImageSet::resolve(options_);
  tile_counts_.resize(images_->size());
  for (std::size_t i = 0; i < images_->size(); ++i)
    if (const auto size = images_->peek_size(i)) tile_counts_[i] = TileGrid{size->height, size->width, tile_, halo_}.count();
  announce(ctx);
}

void ReadTiles::announce(SourceContext& ctx) {
  std::uint64_t total = 0;
  for (const auto& n : tile_counts_) {
    if (!n) return;
    total += static_cast<std::uint64_t>(*n);
  }
  if (announced_ == total) return;
  announced_ = total;
  ctx.expect(total);
}

bool ReadTiles::next(SourceContext& ctx) {
  if (!images_) return false;
  while (!current_ || current_->next_tile >= current_->grid.count()) {
    current_.reset();  // tiles already emitted keep their image alive
    if (next_image_ >= images_->size()) return false;
    const std::size_t i = next_image_++;  // advanced first: a --keep-going run skips an unreadable image
    if (skip_finished(ctx, i)) continue;
    cv::Mat m;
    try {
      std::vector<std::string> warnings;
      m = images_->load(i, options_.mode, &warnings);
      for (const auto& w : warnings) ctx.warn(w);
    } catch (const std::exception& e) {
      tile_counts_[i] = 0;
      announce(ctx);
      throw ItemError(images_->key(i), e.what());
    }
    const TileGrid grid{m.rows, m.cols, tile_, halo_};
    tile_counts_[i] = grid.count();
    announce(ctx);
    current_ = Current{m, grid, images_->key(i), images_->attrs(i, m.size())};
  }
  emit_tile(ctx);
  return current_->next_tile < current_->grid.count() || next_image_ < images_->size();
}

bool ReadTiles::skip_finished(SourceContext& ctx, std::size_t i) {
  // The tiles' keys need the image's size, which the header tells without
  // decoding; an image with one tile unfinished is read and cut whole (the
  // engine drops the finished tiles).
  const auto size = images_->peek_size(i);
  if (!size) return false;
  const TileGrid grid{size->height, size->width, tile_, halo_};
  std::vector<std::string> keys;
  for (std::int64_t t = 0; t < grid.count(); ++t) {
    keys.push_back(tile_key(images_->key(i), t / grid.cols(), t % grid.cols()));
    if (!ctx.finished(keys.back())) return false;
  }
  for (const auto& k : keys) ctx.skip(k);
  return true;
}

std::string ReadTiles::tile_key(const std::string& image, std::int64_t row, std::int64_t col) {
  return image + "/tile/" + std::to_string(row) + "/" + std::to_string(col);
}

void ReadTiles::emit_tile(SourceContext& ctx) {
  Current& c = *current_;
  const std::int64_t t = c.next_tile++;
  const std::int64_t row = t / c.grid.cols(), col = t % c.grid.cols();
  Item item;
  item.meta.key = tile_key(c.key, row, col);
  const Box bbox = c.grid.bbox(row, col);
  item.meta.bbox = bbox;
  item.meta.core = c.grid.core(row, col);
  item.meta.attrs = c.attrs;
  item.meta.attrs["tile_index"] = {row, col};
  item.meta.attrs["grid"] = {c.grid.rows(), c.grid.cols()};
  item.meta.attrs["tile"] = tile_;
  item.meta.attrs["halo"] = halo_;
  const cv::Rect roi(static_cast<int>(bbox.origin[1]), static_cast<int>(bbox.origin[0]), static_cast<int>(bbox.extent[1]),
                     static_cast<int>(bbox.extent[0]));
  item.value = from_mat(c.pixels(roi));
  ctx.emit("tile", std::move(item));
}

}  // namespace flowd::io

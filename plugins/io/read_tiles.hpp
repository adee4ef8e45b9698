#pragma once
// io.read_tiles: the images of a file, folder or synthetic data set cut into
// a grid of tiles with a halo, each tile a zero-copy view of its image.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "flowd/flowd.hpp"
#include "image_input.hpp"
#include "tile_grid.hpp"

namespace flowd::io {

class ReadTiles final : public Source {
public:
  static OperatorSpec spec();
  explicit ReadTiles(const Params& params);

  void open(SourceContext& ctx) override;
  bool next(SourceContext& ctx) override;

private:
  struct Current {
    cv::Mat pixels;  // the decoded image; tiles are views into it
    TileGrid grid;
    std::string key;
    Json attrs;
    std::int64_t next_tile = 0;
  };

  // Calls expect() whenever the total is known and differs from the last one.
  void announce(SourceContext& ctx);
  void emit_tile(SourceContext& ctx);
  // A resumed run: image i's tiles all finished earlier are skipped, the
  // image not read (true then).
  bool skip_finished(SourceContext& ctx, std::size_t i);
  static std::string tile_key(const std::string& image, std::int64_t row, std::int64_t col);

  InputOptions options_;
  std::int64_t tile_;
  std::int64_t halo_;
  std::optional<ImageSet> images_;  // empty until open() succeeded
  std::vector<std::optional<std::int64_t>> tile_counts_;  // per image, once known
  std::optional<std::uint64_t> announced_;
  std::size_t next_image_ = 0;
  std::optional<Current> current_;
};

}  // namespace flowd::io

#pragma once
// io.read_images: one item per image of a file, folder or synthetic data set.
#include <cstddef>
#include <optional>

#include "flowd/flowd.hpp"
#include "image_input.hpp"

namespace flowd::io {

class ReadImages final : public Source {
public:
  static OperatorSpec spec();
  explicit ReadImages(const Params& params);

  void open(SourceContext& ctx) override;
  bool next(SourceContext& ctx) override;

private:
  InputOptions options_;
  std::optional<ImageSet> images_;  // empty until open() succeeded
  std::size_t next_ = 0;
};

}  // namespace flowd::io

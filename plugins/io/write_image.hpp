#pragma once
// io.write_image: one PNG or TIFF file per item, named from its key; the
// files are staged through the SinkContext and appear when the run commits.
#include <filesystem>
#include <string>
#include <unordered_map>

#include "flowd/flowd.hpp"
#include "name_template.hpp"

namespace flowd::io {

class WriteImage final : public Sink {
public:
  static OperatorSpec spec();
  explicit WriteImage(const Params& params);

  void open(SinkContext& ctx) override;
  void consume(SinkContext& ctx) override;

private:
  std::filesystem::path dir_;
  std::string extension_;  // ".png" or ".tif"
  NameTemplate name_;
  std::unordered_map<std::string, std::string> written_;  // target path -> key of the item written there
};

}  // namespace flowd::io

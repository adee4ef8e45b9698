#pragma once
// registration.write: the result of a series registration, in the folder
// `dir` (docs/plugins/registration.md, "Outputs"):
//   deformations.csv  frame,tx,ty,angle - phi_{0,i} per frame, natural key order
//   average.tif       float32 mean of the frames mapped into frame 0's coordinates
//   registration.h5   the motions, the average, its coverage and the run's provenance
// All three appear together when the run succeeds, or none.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flowd/flowd.hpp"
#include "image.hpp"
#include "operand.hpp"

namespace flowd::registration {

class Write final : public Sink {
public:
  static OperatorSpec spec();
  explicit Write(const Params& params);

  void open(SinkContext& ctx) override;
  void consume(SinkContext& ctx) override;
  void commit(SinkContext& ctx) override;

private:
  struct Row {
    KeyedStep step;
    ItemMeta frame;
  };

  std::filesystem::path dir_;
  std::vector<Row> rows_;
  std::optional<ItemMeta> first_;  // the frame that fixed the size
  Image sum_;                      // of the warped frames
  Image count_;                    // frames covering each pixel
};

}  // namespace flowd::registration

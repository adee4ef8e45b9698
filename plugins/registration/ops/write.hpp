#pragma once
// registration.write: the result of a series registration, in the folder
// `dir` (docs/plugins/registration.md, "Outputs"):
//   deformations.csv  frame,tx_px,ty_px,angle_deg,ncc,overlap,reliable - phi_{0,i}
//                     per frame, natural key order, with how well it matched frame 0
//   average.tif       float32 mean of the reliably registered frames mapped into
//                     frame 0's coordinates
//   registration.h5   the same motions and match qualities, the average, its
//                     coverage and the run's provenance
// All three appear together when the run succeeds, or none. A frame whose
// match is below the floors (min_ncc, min_overlap: a blank or pure-noise
// frame, one that left the field of view) keeps its estimate, marked
// unreliable, is named in a warning and left out of the average.
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
    bool reliable = true;
  };

  std::filesystem::path dir_;
  double min_ncc_;
  double min_overlap_;
  std::vector<Row> rows_;
  std::optional<ItemMeta> first_;  // the frame that fixed the size
  Image sum_;                      // of the warped frames
  Image count_;                    // frames covering each pixel
};

}  // namespace flowd::registration

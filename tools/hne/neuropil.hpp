#pragma once
// Neuropil: the matrix of neuronal and glial processes between the cells of
// brain tissue and gliomas. On H&E it is purple-grey rather than pink: a
// haematoxylin-tinted, finely fibrillary background (internal to tools/hne).
#include <vector>

#include <opencv2/core.hpp>

#include "hne/generate.hpp"
#include "random.hpp"

namespace flowd::hne::detail {

class Neuropil {
public:
  // Draws the textures of a width x height image; `rng` is consumed here
  // only, so the caller's other streams are unaffected.
  Neuropil(const Params& p, Rng& rng);

  // Along pixel row y: the neuropil's share of the tissue (0..1; 1
  // everywhere unless tissue = mixed) and its haematoxylin and eosin
  // concentrations, each into out[0 .. width).
  void row(int y, float* share, float* h, float* e);

private:
  int w_, h_;
  double share_threshold_ = 0;
  bool mixed_;
  cv::Mat fibres_, dots_;  // CV_8U anti-aliased strokes and cross-cut processes
  Texture speck_, grain_;
  Field blotch_, level_, region_;
  std::vector<float> blotch_row_, level_row_, region_row_;
};

}  // namespace flowd::hne::detail

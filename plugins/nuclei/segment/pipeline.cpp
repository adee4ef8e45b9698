// segment(): Region Templates' segmentation order on the operations of
// segment.hpp, with the concrete parameters of derive().
#include "pipeline.hpp"

#include "select.hpp"

namespace flowd::nuclei {

cv::Mat segment(const cv::Mat& rgb, const SegmentParams& p, Stages* stages) {
  Stages local;
  Stages& s = stages ? *stages : local;
  const Derived sizes = derive_sizes(1, p);  // the resolution-free levels
  s.haem = deconvolve_masked(rgb, stain_weights(0, sizes.od_max), sizes.tissue_level, sizes.rbc_rg_q8, sizes.rbc_rb_q8,
                             s.tissue, s.rbc);
  const Derived d = derive(s.haem, s.tissue, s.rbc, p);
  // Opening by reconstruction: nuclei keep their full shape, while dark
  // specks and fibres too thin to hold the disk vanish.
  s.opened = open(s.haem, d.open_radius);
  s.recon = reconstruct(s.opened, s.haem);
  s.candidates = threshold_mask(s.recon, d.threshold);
  s.area = area_threshold(s.candidates, d.min_area, 0);
  s.filled = fill_small_holes(s.area, d.max_hole_area);
  s.dist = distance_transform(s.filled);
  s.markers = watershed_markers(s.dist, d.h);
  s.watershed = watershed(s.dist, s.markers, s.filled);
  const cv::Mat valid = valid_tissue(s.tissue, s.rbc);
  const SelectRule rule{.ring_radius = d.ring_radius,
                        .min_contrast = d.min_contrast,
                        .min_solidity = d.min_solidity,
                        .min_ratio = d.min_ratio};
  // The selection and the renumbering in one pass; the selected labels
  // themselves only for a caller that inspects the stages.
  if (stages) s.selected = select_objects(s.watershed, s.haem, valid, rule);
  s.labels = select_and_relabel(s.watershed, s.haem, valid, rule, d.min_area);
  return s.labels;
}

}  // namespace flowd::nuclei

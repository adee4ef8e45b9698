// segment(): Region Templates' segmentation order on the operations of
// segment.hpp, with the concrete parameters of derive().
#include "pipeline.hpp"

namespace flowd::nuclei {

cv::Mat segment(const cv::Mat& rgb, const SegmentParams& p, Stages* stages) {
  const Derived d = derive(rgb, p);
  Stages local;
  Stages& s = stages ? *stages : local;
  s.tissue = tissue_mask(rgb, d.tissue_level);
  s.rbc = rbc_mask(rgb, d.rbc_rg_q8, d.rbc_rb_q8, d.tissue_level);
  s.haem = mask_haem(deconvolve(rgb, stain_weights(0, d.od_max)), s.tissue, s.rbc);
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
  s.labels = relabel(s.watershed, d.min_area);
  return s.labels;
}

}  // namespace flowd::nuclei

#pragma once
// Object-level selection of nucleus candidates: after the watershed every
// object is judged as a whole, by what a pathologist uses to tell a nucleus
// from a dark patch of background: it is darker than the tissue right around
// it (contrast against a ring) and it is compact (solidity). Pixel criteria
// cannot do this on haematoxylin-tinted, textured background (neuropil):
// its dark patches reach the nuclear threshold but are barely darker than
// their surroundings and have ragged outlines.
//
// CPU only (no GPU twin yet): the objects' statistics are a few passes over
// labels that go to the host for relabelling anyway.
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

namespace flowd::nuclei {

struct ObjectMeasures {
  std::int64_t area = 0;         // pixels
  double hull_area = 0;          // convex hull of the object's pixel squares, px²
  double inside_mean = 0;        // mean haematoxylin over the object
  double ring_mean = 0;          // mean haematoxylin over its ring (see measure_objects)
  std::int64_t ring_pixels = 0;  // pixels in the ring
  double solidity() const { return hull_area > 0 ? static_cast<double>(area) / hull_area : 1.0; }
  double contrast() const { return inside_mean - ring_mean; }
};

// Measures of objects 1..max label of `labels` (CV_32S; index 0 unused).
// The ring of an object: pixels of no object, with `valid` set (tissue that
// is not a red blood cell), within chessboard distance ring_radius of the
// object's row extents (from its leftmost to its rightmost pixel on each of
// its rows). A pixel between two close objects is in both rings.
// haem: CV_8U.
std::vector<ObjectMeasures> measure_objects(const cv::Mat& labels, const cv::Mat& haem, const cv::Mat& valid,
                                            int ring_radius);

struct SelectRule {
  int ring_radius = 8;      // px
  float min_contrast = 0;   // haematoxylin levels the object must exceed its ring by
  int min_ring_pixels = 8;  // fewer ring pixels than this (a crowded cluster): contrast not judged
  double min_solidity = 0.8;
  // The object's mean haematoxylin must also be at least this multiple of its
  // ring's (optical densities: a nucleus absorbs several times what the
  // tissue around it does, a dark patch of background a little more).
  double min_ratio = 0;
};

// true for an object the rule keeps.
bool keeps(const ObjectMeasures& m, const SelectRule& rule);

// labels with the objects `rule` rejects set to 0 (others unchanged).
cv::Mat select_objects(const cv::Mat& labels, const cv::Mat& haem, const cv::Mat& valid, const SelectRule& rule);

// relabel(select_objects(labels, haem, valid, rule), min_area, count) in
// one pass over the labels (the areas are already measured).
cv::Mat select_and_relabel(const cv::Mat& labels, const cv::Mat& haem, const cv::Mat& valid, const SelectRule& rule,
                           int min_area, int* count = nullptr);

// 255 where tissue is set and rbc is not: the pixels whose haematoxylin
// level means something.
cv::Mat valid_tissue(const cv::Mat& tissue, const cv::Mat& rbc);

}  // namespace flowd::nuclei

#pragma once
// The nuclei segmentation pipeline (Region Templates' order), composed from
// the operations of segment.hpp. Every parameter is physical (µm, µm²) or
// relative (fractions of a measured level), so one set of defaults serves 40x
// and 20x scans of different stain strength; derive() turns them into the
// concrete integers each operation receives, so running the operations one
// by one with a Derived gives exactly what segment() gives.
#include <vector>

#include <opencv2/core.hpp>

#include "segment.hpp"

namespace flowd::nuclei {

struct SegmentParams {
  // Microns per pixel; 0 = estimate_mpp(rgb). 0.25 at 40x, 0.5 at 20x.
  double mpp = 0;
  // Glass: mean of R, G, B at or above this is not tissue.
  int background_level = 220;
  // Red blood cells: R >= rbc_rg * G and R >= rbc_rb * B (eosin-red, little blue).
  double rbc_rg = 2.0;
  double rbc_rb = 1.6;
  // Haematoxylin optical density that maps to 255 in the deconvolved channel.
  double od_max = 2.0;
  // Radius of the opening disk (µm): bright structures narrower than about
  // twice this (noise, fibres, chromatin specks) cannot seed a nucleus.
  double open_radius_um = 1.0;
  // Nuclear threshold between the tissue background level (median of the
  // haematoxylin channel below Otsu's level) and the nuclear level (median
  // above it): background + threshold_frac * (nuclear - background).
  double threshold_frac = 0.3;
  // Smallest accepted object (µm²) before and after the watershed.
  double min_area_um2 = 15;
  // Largest hole filled (µm²): larger enclosed background (a lumen ringed by
  // nuclei) stays background.
  double max_hole_um2 = 25;
  // h of the h-maxima markers as a fraction of the typical nucleus radius:
  // two touching nuclei are split when each centre is at least h further
  // from the background than the neck between them.
  double h_frac = 0.055;
  double nucleus_radius_um = 3.3;  // typical inscribed radius, for h and mpp estimation
  // Object selection (select.hpp). A nucleus must be darker in haematoxylin
  // than the tissue within ring_um of it by contrast_frac of the gap between
  // the tissue and nuclear levels and by a factor of contrast_ratio, and
  // compact (solidity = area over convex hull area): dark patches of
  // textured background are neither.
  double ring_um = 2.0;
  double contrast_frac = 0.3;
  double contrast_ratio = 2.5;
  double min_solidity = 0.7;
};

// The integers and levels each operation receives.
struct Derived {
  double mpp = 0;
  int tissue_level = 0;       // tissue_mask / rbc_mask level
  int rbc_rg_q8 = 0, rbc_rb_q8 = 0;
  double od_max = 0;          // stain_weights(0, od_max)
  int open_radius = 0;        // open()
  int threshold = 0;          // candidates = recon >= threshold
  int min_area = 0;           // area_threshold(min_area, 0) and the final filter
  int max_hole_area = 0;      // fill_small_holes()
  float h = 0;                // watershed_markers()
  int ring_radius = 0;        // select_objects()
  float min_contrast = 0;     // select_objects(): contrast_frac * (nuclear - background level)
  double min_solidity = 0;    // select_objects()
  double min_ratio = 0;       // select_objects()
};

struct Stages {
  cv::Mat tissue, rbc, haem, opened, recon, candidates, area, filled, dist, markers, watershed, selected, labels;
};

// Concrete parameters for this image (estimates mpp when p.mpp == 0 and
// measures the haematoxylin levels of the tissue).
Derived derive(const cv::Mat& rgb, const SegmentParams& p);
// The same from the masks and the masked haematoxylin channel.
Derived derive(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc, const SegmentParams& p);
// The same without the measured threshold (left 0): everything that follows
// from the resolution and the parameters alone.
Derived derive_sizes(double mpp, const SegmentParams& p);

// Labels CV_32S 1..n, 0 = background.
cv::Mat segment(const cv::Mat& rgb, const SegmentParams& p, Stages* stages = nullptr);

// Microns per pixel from the typical size of nuclei: the area-weighted median inscribed
// radius (distance-transform maximum) of the dark objects of a central crop
// that select.hpp's rule keeps, against p.nucleus_radius_um, snapped to the
// nearest 0.25 * 2^k (log scale), k = 0, 1 or 2 (40x, 20x, 10x). Returns 0.25
// when the image has too few objects to tell.
double estimate_mpp(const cv::Mat& rgb, const SegmentParams& p = {});
// The same from the masked haematoxylin channel (mask_haem) and the masks,
// which the pipeline computes anyway.
// `whole`: the levels of the whole tile when the caller has them (used when
// the tile is no larger than the crop).
struct HaemLevels;
double estimate_mpp(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc, const SegmentParams& p,
                    const HaemLevels* whole = nullptr);

// ---- The steps that are not a single segment.hpp operation ----------------

// The typical haematoxylin levels of a tile, from the histogram of tissue
// pixels that are not red blood cells: Otsu's split, then the median of each
// class (the tissue between nuclei, the nuclei).
struct HaemLevels {
  int background = 0, nuclear = 0;
};
HaemLevels haem_levels(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc);

// The threshold of derive(): background + frac * (nuclear - background).
int nuclear_threshold(const HaemLevels& levels, double frac);
int nuclear_threshold(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc, double frac);

// Sets d's threshold and minimum contrast from the measured levels.
void derive_levels(Derived& d, const HaemLevels& levels, const SegmentParams& p);

// Haematoxylin with non-tissue and red-blood-cell pixels zeroed.
cv::Mat mask_haem(const cv::Mat& haem, const cv::Mat& tissue, const cv::Mat& rbc);

// 255 where grey >= level.
cv::Mat threshold_mask(const cv::Mat& grey, int level);

// Fills the holes of `mask` (fill_holes) whose area (8-connected) is at most
// max_hole_area pixels.
cv::Mat fill_small_holes(const cv::Mat& mask, int max_hole_area);

// Drops labels with fewer than min_area pixels and renumbers the rest 1..n in
// raster order of their first pixel.
cv::Mat relabel(const cv::Mat& labels, int min_area, int* count = nullptr);

// Labels v with keep[v] set, numbered 1..n in raster order of their first
// pixel; the rest 0. keep covers every label of `labels` (index 0 unused).
cv::Mat renumber_kept(const cv::Mat& labels, const std::vector<std::uint8_t>& keep, int* count = nullptr);

}  // namespace flowd::nuclei

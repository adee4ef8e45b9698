#pragma once
// Instance segmentation scores against ground truth (definitions in
// docs/tools.md): pixel Dice, object precision/recall/F1 with one-to-one
// matching at IoU >= 0.5, and the Aggregated Jaccard Index of Kumar et al.
// (IEEE TMI 2017).
#include <cstdint>

#include <opencv2/core.hpp>

namespace flowd::score {

struct Scores {
  double dice = 0, precision = 0, recall = 0, f1 = 0, aji = 0;
  int n_pred = 0, n_truth = 0, n_matched = 0;
};

// The sums the scores are ratios of. Adding the counts of several images and
// then taking scores_of() gives the pooled scores (every pixel and object of
// the set counted once), as opposed to the mean of per-image scores.
struct Counts {
  std::int64_t fg_both = 0, fg_pred = 0, fg_truth = 0;  // foreground pixels
  std::int64_t aji_intersection = 0, aji_union = 0;
  int n_pred = 0, n_truth = 0, n_matched = 0;

  Counts& operator+=(const Counts& o);
};

// Label images: one channel of CV_32S, CV_16U or CV_8U, 0 = background,
// any positive value one object (labels need not be consecutive). Throws
// std::invalid_argument for different sizes (naming both), another type or
// a negative label.
Counts count(const cv::Mat& pred, const cv::Mat& truth);

// Ratios of the sums; 0/0 (nothing predicted and nothing true) scores 1.
Scores scores_of(const Counts& c);

inline Scores score(const cv::Mat& pred, const cv::Mat& truth) { return scores_of(count(pred, truth)); }

}  // namespace flowd::score

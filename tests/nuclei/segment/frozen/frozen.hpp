#pragma once
// The segmentation operations as they were before their speed-ups (commit
// 9ae5313), frozen as an oracle: each was checked against reference.hpp's
// definitions on small images, and the rewritten operations must reproduce
// them bit for bit on realistic ones (generated H&E tiles), where the slow
// references are too slow to run. Not to be edited: a change here would
// silently move the yardstick.
#include <opencv2/core.hpp>

namespace flowd::nuclei::frozen {

cv::Mat reconstruct(const cv::Mat& marker, const cv::Mat& mask);
cv::Mat area_threshold(const cv::Mat& mask, int min_area, int max_area);
cv::Mat fill_holes(const cv::Mat& mask);
cv::Mat distance_transform(const cv::Mat& mask);
cv::Mat watershed_markers(const cv::Mat& dist, float h);
cv::Mat watershed(const cv::Mat& dist, const cv::Mat& markers, const cv::Mat& mask);
cv::Mat label(const cv::Mat& mask, int* count = nullptr);

}  // namespace flowd::nuclei::frozen

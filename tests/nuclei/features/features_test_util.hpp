#pragma once
// Synthetic tiles for the feature tests: flat grey images, textured
// "tissue", and random overlapping blob labels.
#include <cstdint>
#include <random>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace flowd::nuclei::features::ftest {

inline cv::Mat neutral(int rows, int cols, int v) { return cv::Mat(rows, cols, CV_8UC3, cv::Scalar(v, v, v)); }

// Pink-purple noise with some smooth structure, so every statistic varies.
inline cv::Mat random_tissue(int rows, int cols, std::uint32_t seed) {
  std::mt19937 rng(seed);
  cv::Mat rgb(rows, cols, CV_8UC3);
  std::uniform_int_distribution<int> noise(-40, 40);
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x) {
      const double s = 0.5 + 0.5 * std::sin(x * 0.21 + y * 0.13) * std::cos(y * 0.17 - x * 0.05);
      const int r = static_cast<int>(230 - 120 * s) + noise(rng), g = static_cast<int>(200 - 150 * s) + noise(rng),
                b = static_cast<int>(220 - 60 * s) + noise(rng);
      rgb.at<cv::Vec3b>(y, x) = cv::Vec3b(cv::saturate_cast<std::uint8_t>(r), cv::saturate_cast<std::uint8_t>(g),
                                          cv::saturate_cast<std::uint8_t>(b));
    }
  return rgb;
}

// `count` random ellipses labelled 1..count (later ones overwrite earlier
// ones, so some labels are cut, disconnected or gone), semi-axes 2..max_r.
inline cv::Mat random_labels(int rows, int cols, int count, int max_r, std::uint32_t seed) {
  std::mt19937 rng(seed);
  cv::Mat labels = cv::Mat::zeros(rows, cols, CV_32S);
  std::uniform_int_distribution<int> ry(0, rows - 1), rx(0, cols - 1), ax(2, max_r), ang(0, 179);
  for (int l = 1; l <= count; ++l)
    cv::ellipse(labels, cv::Point(rx(rng), ry(rng)), cv::Size(ax(rng), ax(rng)), ang(rng), 0, 360, cv::Scalar(l),
                cv::FILLED);
  return labels;
}

}  // namespace flowd::nuclei::features::ftest

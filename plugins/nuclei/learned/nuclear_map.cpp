#include "nuclear_map.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "segment/pipeline.hpp"

namespace flowd::nuclei {

std::array<cv::Mat, 3> tile_probabilities(const NuclearMapModel& model, const cv::Mat& rgb, double mpp) {
  // To the network's resolution and back: `f` network pixels per tile pixel.
  const double f = mpp / model.canonical_mpp();
  if (std::abs(f - 1) < 0.02) return model.probabilities(rgb);
  const cv::Size at(std::max(8, static_cast<int>(std::lround(rgb.cols * f))),
                    std::max(8, static_cast<int>(std::lround(rgb.rows * f))));
  cv::Mat small;
  cv::resize(rgb, small, at, 0, 0, f < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
  std::array<cv::Mat, 3> p = model.probabilities(small);
  for (auto& plane : p) cv::resize(plane, plane, rgb.size(), 0, 0, cv::INTER_LINEAR);
  return p;
}

double mpp_from_nuclei(const cv::Mat& mask, double fallback) {
  int n = 0;
  const cv::Mat parts = label(mask, &n);
  std::vector<std::int64_t> area(static_cast<std::size_t>(n) + 1, 0);
  for (int y = 0; y < parts.rows; ++y) {
    const std::int32_t* l = parts.ptr<std::int32_t>(y);
    for (int x = 0; x < parts.cols; ++x) ++area[static_cast<std::size_t>(l[x])];
  }
  std::vector<std::int64_t> sizes;
  for (std::size_t i = 1; i < area.size(); ++i)
    if (area[i] >= 20) sizes.push_back(area[i]);  // specks say nothing of the scale
  if (sizes.size() < 5) return fallback;
  std::nth_element(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(sizes.size() / 2), sizes.end());
  const double median = static_cast<double>(sizes[sizes.size() / 2]);
  return std::clamp(std::sqrt(typical_nucleus_um2 / median), 0.15, 1.5);
}

NuclearMap nuclear_map(const NuclearMapModel& model, const cv::Mat& rgb, const MapParams& p) {
  NuclearMap out;
  // A known resolution: the tile at the network's. An unknown one: the tile
  // as it is (the network was trained on nuclei from 0.6 to 1.7 times their
  // size at its resolution, which covers 20x and 40x scans), and the
  // resolution estimated from the nuclei it finds, for the size filter.
  std::array<cv::Mat, 3> prob = p.mpp > 0 ? tile_probabilities(model, rgb, p.mpp) : model.probabilities(rgb);
  // Nucleus where background is the less likely: p(interior) + p(boundary) > 1/2.
  out.mask = prob[0] < 0.5f;
  out.mpp = p.mpp > 0 ? p.mpp : mpp_from_nuclei(out.mask, model.canonical_mpp());
  out.surface = prob[1];
  cv::Mat interior = (prob[1] > static_cast<float>(p.marker_level)) & out.mask;
  int n = 0;
  cv::Mat parts = label(interior, &n);
  // Interior parts below the smallest marker are noise, not nuclei.
  const double px_um2 = out.mpp * out.mpp;
  const auto min_marker = static_cast<std::int64_t>(std::ceil(p.min_marker_um2 / px_um2));
  std::vector<std::int64_t> area(static_cast<std::size_t>(n) + 1, 0);
  for (int y = 0; y < parts.rows; ++y) {
    const std::int32_t* l = parts.ptr<std::int32_t>(y);
    for (int x = 0; x < parts.cols; ++x) ++area[static_cast<std::size_t>(l[x])];
  }
  std::vector<std::int32_t> renumber(area.size(), 0);
  std::int32_t kept = 0;
  for (std::size_t i = 1; i < area.size(); ++i)
    if (area[i] >= min_marker) renumber[i] = ++kept;
  out.markers = cv::Mat::zeros(rgb.size(), CV_32S);
  for (int y = 0; y < parts.rows; ++y) {
    const std::int32_t* l = parts.ptr<std::int32_t>(y);
    std::int32_t* m = out.markers.ptr<std::int32_t>(y);
    for (int x = 0; x < parts.cols; ++x) m[x] = renumber[static_cast<std::size_t>(l[x])];
  }
  // A part of the mask no marker reaches is one nucleus of its own (its
  // whole area a marker), as the classical baseline's recipe does.
  int c = 0;
  const cv::Mat comps = label(out.mask, &c);
  std::vector<std::uint8_t> reached(static_cast<std::size_t>(c) + 1, 0);
  for (int y = 0; y < comps.rows; ++y) {
    const std::int32_t* l = comps.ptr<std::int32_t>(y);
    const std::int32_t* m = out.markers.ptr<std::int32_t>(y);
    for (int x = 0; x < comps.cols; ++x)
      if (m[x]) reached[static_cast<std::size_t>(l[x])] = 1;
  }
  std::vector<std::int32_t> extra(reached.size(), 0);
  for (std::size_t i = 1; i < reached.size(); ++i)
    if (!reached[i]) extra[i] = ++kept;
  for (int y = 0; y < comps.rows; ++y) {
    const std::int32_t* l = comps.ptr<std::int32_t>(y);
    std::int32_t* m = out.markers.ptr<std::int32_t>(y);
    for (int x = 0; x < comps.cols; ++x)
      if (l[x] && extra[static_cast<std::size_t>(l[x])]) m[x] = extra[static_cast<std::size_t>(l[x])];
  }
  return out;
}

}  // namespace flowd::nuclei

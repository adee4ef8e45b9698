#pragma once
// From an H&E tile to what the marker watershed needs, by the learned
// nuclear map (issue 39): the tile resampled to the network's resolution
// when its mpp is known (as it is otherwise: nuclear_map's comment says
// why), the network's class probabilities brought back to the tile's
// pixels, and
//   mask     nucleus (interior or boundary more likely than background)
//   markers  the interior's connected parts (p(interior) above a level,
//            small ones dropped), one more for each part of the mask none
//            of them reaches
//   surface  p(interior), which the watershed climbs: its valleys are the
//            boundaries between touching nuclei.
#include <opencv2/core.hpp>

#include "model.hpp"

namespace flowd::nuclei {

struct MapParams {
  double mpp = 0;                // µm per pixel of the tile; 0 = unknown (below)
  double marker_level = 0.7;     // p(interior) a marker pixel needs (docs/plugins/nuclei.md: chosen on a held-out fold)
  double min_marker_um2 = 2.0;   // smaller interior parts are not markers
};

struct NuclearMap {
  cv::Mat mask;     // CV_8U 0/255
  cv::Mat markers;  // CV_32S 1..n
  cv::Mat surface;  // CV_32F, p(interior)
  double mpp = 0;   // the resolution used
};

NuclearMap nuclear_map(const NuclearMapModel& model, const cv::Mat& rgb, const MapParams& p);

// The median area of a nucleus in H&E, µm² (the development set's: 34 at
// 40x), for the resolution of a tile of unknown magnification.
inline constexpr double typical_nucleus_um2 = 35.0;

// The resolution that makes the median nucleus of `mask` (parts of at least
// 20 px) typical_nucleus_um2; `fallback` with fewer than five parts.
double mpp_from_nuclei(const cv::Mat& mask, double fallback);

// The probabilities alone, at the tile's pixels (for tests and tools).
std::array<cv::Mat, 3> tile_probabilities(const NuclearMapModel& model, const cv::Mat& rgb, double mpp);

}  // namespace flowd::nuclei

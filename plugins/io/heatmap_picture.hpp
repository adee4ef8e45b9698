#pragma once
// The picture a person reads before the numbers (issue 38): a pair matrix's
// cells, coloured, with the row and column names beside them, a title that
// says which score and scale, a colour bar with its values, and what grey
// means. write_pairs orders and colours the cells; this lays them out.
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace flowd::io {

struct HeatmapPicture {
  cv::Mat cells;                        // BGR, one pixel per cell, in display order
  cv::Mat missing;                      // u8, 1 where a pair has no value (drawn grey)
  std::vector<std::string> row_labels;  // in display order
  std::vector<std::string> col_labels;
  std::string title;                    // e.g. "pce (log10), rows and columns by average linkage"
  double low = 0, high = 1;             // the values at the colour bar's ends (as coloured)
  bool log10 = false;                   // the values are log10 of the score: ticks show 10^v
  cv::Mat bar;                          // BGR, 1 x 256, the colour map from low to high
};

// Where the cells go: each `cell` pixels square, the first one's corner at
// (left, top) of a width x height picture.
struct HeatmapLayout {
  int cell = 1, left = 0, top = 0, width = 0, height = 0;
};
HeatmapLayout heatmap_layout(const HeatmapPicture& p, int side);

// The picture: cells enlarged to an integer size (the longest side about
// `side` pixels), labels where they fit (every k-th when cells are small).
cv::Mat render_heatmap(const HeatmapPicture& p, int side);

}  // namespace flowd::io

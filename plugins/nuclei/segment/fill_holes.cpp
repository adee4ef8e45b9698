// Hole filling: background reachable from the border through 4-connected
// background stays background; the rest becomes foreground. The background's
// 4-connected components come from the run labelling (internal.hpp), which
// also says which touch the border; only their runs are painted 0.
#include <stdexcept>

#include "internal.hpp"
#include "segment.hpp"

namespace flowd::nuclei {

cv::Mat fill_holes(const cv::Mat& mask) {
  if (mask.type() != CV_8U) throw std::invalid_argument("fill_holes: expects a CV_8U mask");
  cv::Mat out(mask.size(), CV_8U);
  const runs::Components c = runs::label(mask, false);
  runs::paint<std::uint8_t>(c, out, 255,
                            [&](std::int32_t comp) { return c.border[static_cast<std::size_t>(comp)] ? 0 : 255; });
  return out;
}

}  // namespace flowd::nuclei

#pragma once
// deformations.csv: one row per frame (its file stem), the motion phi_{0,i}
// of rigid.hpp, with the units in the header:
//   frame,tx_px,ty_px,angle_deg[,ncc,overlap,reliable]
// tx, ty in pixels, the angle in degrees; a registration's output adds how
// well each frame matched the first one (quality below), the generator's
// truth.csv does not. The header of earlier versions, `frame,tx,ty,angle`,
// is still read.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rigid.hpp"

namespace flowd::registration {

// How well a frame, moved by its motion, matched the first frame: the NCC at
// the finest level, the share of the first frame it overlapped, and whether
// the motion is to be trusted (ncc and overlap above the write stage's
// floors; a blank or pure-noise frame is not).
struct MatchQuality {
  double ncc = 1.0;
  double overlap = 1.0;
  bool reliable = true;
};

struct Deformation {
  std::string frame;
  Rigid phi;
  std::optional<MatchQuality> quality{};
};

// Numbers with 9 significant digits (far below the pixel precision that
// matters, and round-trips a float). The quality columns are written when
// every row has a quality.
std::string format_deformations(const std::vector<Deformation>& rows);

// Throws std::invalid_argument "line N: ..." for a malformed document (a
// wrong header, a row with the wrong number of fields, a field that is not
// a number).
std::vector<Deformation> parse_deformations(std::string_view text);

}  // namespace flowd::registration

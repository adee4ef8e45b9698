#pragma once
// deformations.csv: header `frame,tx,ty,angle`, one row per frame (its file
// stem), the motion phi_{0,i} of rigid.hpp with the angle in degrees. The
// format of the registration's output and of the generator's truth.csv.
#include <string>
#include <string_view>
#include <vector>

#include "rigid.hpp"

namespace flowd::registration {

struct Deformation {
  std::string frame;
  Rigid phi;
};

// Numbers with 9 significant digits (far below the pixel precision that
// matters, and round-trips a float).
std::string format_deformations(const std::vector<Deformation>& rows);

// Throws std::invalid_argument "line N: ..." for a malformed document (a
// wrong header, a row without four fields, a field that is not a number).
std::vector<Deformation> parse_deformations(std::string_view text);

}  // namespace flowd::registration

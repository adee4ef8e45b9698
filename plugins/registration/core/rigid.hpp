#pragma once
// The deformation model of docs/plugins/registration.md: a rigid motion about
// the image centre, x' = c + R(angle)(x - c) + t, with x = (column, row) in
// pixels, c = ((w-1)/2, (h-1)/2) and R(a) = [[cos a, -sin a], [sin a, cos a]].
// phi_{i,k} maps the position of a specimen point in frame i to its position
// in frame k. The angle is kept in radians here; the CSV files say degrees.
#include <cmath>

namespace flowd::registration {

struct Point {
  double x = 0.0;  // column
  double y = 0.0;  // row
};

struct Rigid {
  double angle = 0.0;  // radians
  double tx = 0.0;
  double ty = 0.0;

  static Rigid identity() noexcept { return {}; }
  static Rigid from_degrees(double degrees, double tx, double ty) noexcept;
  double degrees() const noexcept;

  // x' = c + R(angle)(x - c) + t
  Point apply(Point x, Point centre) const noexcept;
  // The motion that undoes this one (about the same centre).
  Rigid inverse() const noexcept;
  // Largest displacement between the two motions over the centre and the
  // four corners of a w x h image: the error measure of issue 14.
  static double distance(const Rigid& a, const Rigid& b, int width, int height) noexcept;
};

// (second after first)(x) = second(first(x)); both about the same centre.
// phi_{i,k} = compose(phi_{i,j}, phi_{j,k}).
Rigid then(const Rigid& first, const Rigid& second) noexcept;

inline Point image_centre(int width, int height) noexcept { return {(width - 1) / 2.0, (height - 1) / 2.0}; }

}  // namespace flowd::registration

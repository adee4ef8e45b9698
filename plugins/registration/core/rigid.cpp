#include "rigid.hpp"

#include <algorithm>
#include <numbers>

namespace flowd::registration {

Rigid Rigid::from_degrees(double degrees, double tx, double ty) noexcept {
  return {degrees * std::numbers::pi / 180.0, tx, ty};
}

double Rigid::degrees() const noexcept { return angle * 180.0 / std::numbers::pi; }

Point Rigid::apply(Point x, Point centre) const noexcept {
  const double c = std::cos(angle), s = std::sin(angle);
  const double dx = x.x - centre.x, dy = x.y - centre.y;
  return {centre.x + c * dx - s * dy + tx, centre.y + s * dx + c * dy + ty};
}

Rigid Rigid::inverse() const noexcept {
  // x = c + R(-a)(x' - c - t): the translation is -R(-a) t.
  const double c = std::cos(angle), s = std::sin(angle);
  return {-angle, -(c * tx + s * ty), -(-s * tx + c * ty)};
}

double Rigid::distance(const Rigid& a, const Rigid& b, int width, int height) noexcept {
  const Point centre = image_centre(width, height);
  const Point probes[] = {centre, {0.0, 0.0}, {width - 1.0, 0.0}, {0.0, height - 1.0}, {width - 1.0, height - 1.0}};
  double worst = 0.0;
  for (const Point& p : probes) {
    const Point pa = a.apply(p, centre), pb = b.apply(p, centre);
    worst = std::max(worst, std::hypot(pa.x - pb.x, pa.y - pb.y));
  }
  return worst;
}

Rigid then(const Rigid& first, const Rigid& second) noexcept {
  // second(first(x)) = c + R2 R1 (x - c) + R2 t1 + t2
  const double c = std::cos(second.angle), s = std::sin(second.angle);
  return {first.angle + second.angle, c * first.tx - s * first.ty + second.tx, s * first.tx + c * first.ty + second.ty};
}

}  // namespace flowd::registration

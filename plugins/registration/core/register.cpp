#include "register.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace flowd::registration {

namespace {

// The NCC of one set of sums with its Gauss-Newton matrix and gradient in
// the parameters (angle, tx, ty) of the level.
struct Linearised {
  bool valid = false;
  double ncc = -1.0;
  double h[3][3] = {};
  double g[3] = {};
};

// Fewer overlapping pixels than this share of the reference: the motion has
// left the template, whatever the correlation says.
constexpr double min_overlap = 0.25;

Linearised linearise(const NccSums& s, double reference_pixels, bool with_jacobian) {
  Linearised out;
  if (s.n < std::max(16.0, min_overlap * reference_pixels)) return out;
  const double n = s.n, rbar = s.r / n, wbar = s.w / n;
  const double vr = s.rr - n * rbar * rbar, vw = s.ww - n * wbar * wbar;
  if (!(vr > 0.0) || !(vw > 0.0)) return out;
  const double sr = std::sqrt(vr), sw = std::sqrt(vw);
  out.ncc = (s.rw - n * rbar * wbar) / (sr * sw);
  out.valid = std::isfinite(out.ncc);
  if (!with_jacobian || !out.valid) return out;
  // Residual e = r^ - w^ of the unit, zero-mean images; the Jacobian of w^
  // is the centred J projected off w^ and divided by |w - wbar|:
  // H = (Jc'Jc - a a') / sw^2, g = (b - a ncc) / sw with a = Jc'w^, b = Jc'r^.
  double a[3], b[3];
  for (int i = 0; i < 3; ++i) {
    a[i] = (s.jw[i] - s.j[i] * wbar) / sw;
    b[i] = (s.jr[i] - s.j[i] * rbar) / sr;
  }
  const int idx[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 3; ++k)
      out.h[i][k] = (s.jj[idx[i][k]] - s.j[i] * s.j[k] / n - a[i] * a[k]) / vw;
    out.g[i] = (b[i] - a[i] * out.ncc) / sw;
  }
  return out;
}

// Solves the damped normal equations (H + lambda diag H) d = g over the
// parameters in `use` (rigid: all three; translation: tx, ty).
bool solve(const Linearised& lin, double lambda, Model model, double d[3]) {
  const int first = model == Model::rigid ? 0 : 1;
  const int m = 3 - first;
  double a[3][4] = {};
  for (int i = 0; i < m; ++i) {
    for (int k = 0; k < m; ++k)
      a[i][k] = lin.h[i + first][k + first];
    a[i][i] *= 1.0 + lambda;
    a[i][m] = lin.g[i + first];
  }
  // Gaussian elimination with partial pivoting on an m x m system.
  for (int c = 0; c < m; ++c) {
    int piv = c;
    for (int r = c + 1; r < m; ++r)
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    if (!(std::abs(a[piv][c]) > 1e-300)) return false;
    if (piv != c)
      for (int k = 0; k <= m; ++k)
        std::swap(a[c][k], a[piv][k]);
    for (int r = 0; r < m; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int k = c; k <= m; ++k)
        a[r][k] -= f * a[c][k];
    }
  }
  d[0] = d[1] = d[2] = 0.0;
  for (int i = 0; i < m; ++i)
    d[i + first] = a[i][m] / a[i][i];
  return std::isfinite(d[0]) && std::isfinite(d[1]) && std::isfinite(d[2]);
}

struct LevelState {
  double angle, tx, ty;  // tx, ty in pixels of the level
};

WarpParams params_of(const LevelState& st, double cx, double cy) {
  return {std::cos(st.angle), std::sin(st.angle), cx, cy, st.tx, st.ty};
}

}  // namespace

int Pyramid::level_count(int width, int height, const PyramidOptions& options) noexcept {
  int levels = 1;
  int side = std::min(width, height);
  while (levels < options.max_levels && side / 2 >= options.min_side) {
    side /= 2;
    ++levels;
  }
  return levels;
}

Pyramid::Pyramid(const ImageView& frame, const PyramidOptions& options) : width_(frame.width), height_(frame.height) {
  const int n = level_count(frame.width, frame.height, options);
  levels_.reserve(static_cast<std::size_t>(n));
  levels_.push_back(gaussian_blur(frame, options.smooth));
  for (int l = 1; l < n; ++l)
    levels_.push_back(pyramid_down(levels_.back().view()));
  gx_.resize(levels_.size());
  gy_.resize(levels_.size());
  for (std::size_t l = 0; l < levels_.size(); ++l)
    gradient(levels_[l].view(), gx_[l], gy_[l]);
}

WarpParams level_params(const Rigid& phi, int width, int height, int level) noexcept {
  const double scale = std::ldexp(1.0, level);
  const Point c0 = image_centre(width, height);
  return {std::cos(phi.angle),        std::sin(phi.angle), (c0.x + 0.5) / scale - 0.5,
          (c0.y + 0.5) / scale - 0.5, phi.tx / scale,      phi.ty / scale};
}

namespace {

class CpuPair final : public LevelSums {
public:
  CpuPair(const Pyramid& reference, const Pyramid& tmpl) : ref_(reference), tmpl_(tmpl) {}
  int levels() const override { return std::min(ref_.levels(), tmpl_.levels()); }
  int frame_width() const override { return ref_.width(); }
  int frame_height() const override { return ref_.height(); }
  int level_pixels(int level) const override { return ref_.level(level).width() * ref_.level(level).height(); }
  NccSums sums(int level, const WarpParams& p, bool with_jacobian) const override {
    return ncc_sums(ref_.level(level).view(), tmpl_.level(level).view(), tmpl_.gx(level).view(), tmpl_.gy(level).view(),
                    p, with_jacobian);
  }

private:
  const Pyramid& ref_;
  const Pyramid& tmpl_;
};

}  // namespace

Result register_pair(const Pyramid& reference, const Pyramid& tmpl, const Rigid& initial, const Options& options) {
  if (reference.width() != tmpl.width() || reference.height() != tmpl.height())
    throw std::invalid_argument("frames of different sizes: " + std::to_string(reference.width()) + "x" +
                                std::to_string(reference.height()) + " and " + std::to_string(tmpl.width()) + "x" +
                                std::to_string(tmpl.height()));
  return optimise(CpuPair(reference, tmpl), initial, options);
}

Result optimise(const LevelSums& pair, const Rigid& initial, const Options& options) {
  const int levels = pair.levels();
  const int coarsest = options.coarsest < 0 ? levels - 1 : std::min(options.coarsest, levels - 1);
  const int finest = std::clamp(options.finest, 0, coarsest);
  Result result;
  result.phi = initial;
  for (int l = coarsest; l >= finest; --l) {
    const double scale = std::ldexp(1.0, l);
    const WarpParams base = level_params(result.phi, pair.frame_width(), pair.frame_height(), l);
    const double cx = base.cx, cy = base.cy;
    LevelState st{result.phi.angle, base.tx, base.ty};
    const double pixels = pair.level_pixels(l);
    const double radius = 0.5 * std::hypot(pair.frame_width() / scale, pair.frame_height() / scale);
    auto sums = [&](const LevelState& at, bool jacobian) { return pair.sums(l, params_of(at, cx, cy), jacobian); };
    Linearised cur = linearise(sums(st, true), pixels, true);
    if (!cur.valid) break;  // no overlap at this level: keep the estimate so far
    double lambda = 1e-3;
    for (int it = 0; it < options.max_iterations; ++it) {
      ++result.iterations;
      double d[3];
      if (!solve(cur, lambda, options.model, d)) break;
      // A step (taken or proposed) that moves no point of the level by more
      // than the tolerance: converged. Without this test a converged level
      // would spend some twenty rejected, ever more damped steps before the
      // damping gives up.
      const double moved = std::hypot(d[1], d[2]) + std::abs(d[0]) * radius;
      if (moved < (l == finest ? options.step_tolerance : options.coarse_step_tolerance)) break;
      const LevelState next{st.angle + d[0], st.tx + d[1], st.ty + d[2]};
      const Linearised cand = linearise(sums(next, true), pixels, true);
      if (cand.valid && cand.ncc > cur.ncc) {
        const double energy = 1.0 - cur.ncc, decrease = cand.ncc - cur.ncc;
        st = next;
        cur = cand;
        lambda = std::max(lambda / 3.0, 1e-9);
        if (decrease <= options.epsilon * energy) break;
      } else {
        lambda *= 4.0;
        if (lambda > 1e8) break;  // no step along the gradient helps: a (local) optimum
      }
    }
    result.phi = {st.angle, st.tx * scale, st.ty * scale};
    result.ncc = cur.ncc;
    result.overlap = sums(st, false).n / pixels;
  }
  return result;
}

}  // namespace flowd::registration

#pragma once
// The hot loops of the registration, each a function of plain float images
// and a few scalars: the pre-smoothing, one pyramid step, the image gradient,
// the NCC value-and-gradient reduction over a warped template, and the warp
// itself. The CUDA variant mirrors exactly these.
#include <vector>

#include "image.hpp"

namespace flowd::registration {

// The normalised taps of a Gaussian with standard deviation sigma > 0,
// radius max(1, ceil(3 sigma)).
std::vector<float> gaussian_taps(double sigma);

// Separable Gaussian with standard deviation sigma (pixels), borders
// replicated. sigma <= 0 copies.
Image gaussian_blur(const ImageView& in, double sigma);

// One dyadic step: floor(w/2) x floor(h/2) pixels, output pixel i centred on
// input position 2i + 0.5 (so x_coarse = (x_fine + 0.5) / 2 - 0.5), filtered
// with the binomial kernel [1 5 10 10 5 1] / 32 (a 5-tap Burt-Adelson low-pass
// followed by the 2x2 mean) against aliasing of the lattice.
Image pyramid_down(const ImageView& in);

// Central differences (one-sided on the border).
void gradient(const ImageView& in, Image& gx, Image& gy);

// The rigid motion at one pyramid level: p = c + R(x - c) + t.
struct WarpParams {
  double cos_a = 1.0, sin_a = 0.0;
  double cx = 0.0, cy = 0.0;
  double tx = 0.0, ty = 0.0;
};

// Sums over the reference pixels x whose image p = phi(x) lies inside the
// template (bilinear interpolation, so p in [0, w-1] x [0, h-1]): of the
// reference r, the warped template w, and of J = dw/d(angle, tx, ty) =
// grad T(p) . dphi/d(angle, tx, ty), from which the optimiser forms the
// normalised cross-correlation, its gradient and its Gauss-Newton matrix.
struct NccSums {
  double n = 0, r = 0, rr = 0, w = 0, ww = 0, rw = 0;
  double j[3] = {0, 0, 0};
  double jw[3] = {0, 0, 0};
  double jr[3] = {0, 0, 0};
  double jj[6] = {0, 0, 0, 0, 0, 0};  // upper triangle: 00 01 02 11 12 22

  NccSums& operator+=(const NccSums& o) noexcept;
};

// with_jacobian = false: only n, r, rr, w, ww, rw (the value).
NccSums ncc_sums(const ImageView& ref, const ImageView& tmpl, const ImageView& gx, const ImageView& gy,
                 const WarpParams& p, bool with_jacobian);

// out(x) = tmpl(phi(x)) by bilinear interpolation, `outside` where phi(x)
// leaves the template. out has the reference's size (width x height).
Image warp(const ImageView& tmpl, const WarpParams& p, int width, int height, float outside);

}  // namespace flowd::registration

#pragma once
// Comparing PRNU patterns: NCC (Rocket's compare) and the PCE of a 2-D
// circular cross-correlation (the usual score on the Dresden images).
#include <span>

#include "fft.hpp"
#include "image.hpp"

namespace flowd::prnu {

// NCC = sum xy / sqrt(sum x^2 * sum y^2), the digest's formula: no means are
// taken (patterns are zero-mean after ZeroMeanTotal; prnu-python's
// crosscorr/pce do remove means, this does not). Sums are in double (float
// partial sums over 1024-sample blocks), one pass. 0 if either is all zero.
double ncc(std::span<const float> a, std::span<const float> b);

// C(dy, dx) = sum_{y,x} a'(y, x) * b'(y - dy, x - dx), indices modulo the
// size, a' and b' the inputs minus their means; returned as an image whose
// element (x, y) is the shift (dx, dy) taken modulo (width, height), so zero
// shift is element (0, 0) and shift -1 the last row/column. Computed as
// IDFT2(DFT2(a') * conj(DFT2(b'))) / N. prnu-python's crosscorr_2d (the FFT
// of b rotated by 180 degrees instead of the conjugate) holds the same values
// one step round: its [y, x] is this (y + 1, x + 1) modulo the size, zero
// shift at its [h-1, w-1]. Equal sizes only.
Image crosscorr_2d(const ImageView& a, const ImageView& b, FftPlans& plans);

struct PceOptions {
  int neighbourhood = 11;  // side of the box around the peak left out of the energy (odd)
  int search_radius = 0;   // 0: the peak is read at zero shift; r: max |C| over shifts within +-r
};

struct PceResult {
  double pce = 0.0;     // sign(peak) * peak^2 / energy
  double peak = 0.0;    // C at the peak
  double energy = 0.0;  // mean C^2 outside the box
  int peak_x = 0;       // element of C holding the peak
  int peak_y = 0;
  int shift_x = 0;  // the same as a signed shift in (-size/2, size/2]
  int shift_y = 0;
};

// The peak-to-correlation energy of a cross-correlation laid out as
// crosscorr_2d's. The box is wrapped round the borders like C itself; on a
// tie in |C| the smaller shift (in search order: zero first) wins.
PceResult pce(const ImageView& cc, const PceOptions& options = {});

}  // namespace flowd::prnu

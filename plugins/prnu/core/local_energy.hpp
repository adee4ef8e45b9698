#pragma once
// The local-variance estimate both Wiener rules of the PRNU chain share
// (Mihcak's rule on wavelet bands, the NFI/prnu-python rule on DFT
// magnitudes): for each sample, the smallest over w in {3, 5, 7, 9} of the
// mean of `energy` over the w x w window centred on it, the window counting
// samples outside the array as zero and always dividing by w*w (scipy's
// uniform_filter with mode='constant').
//
// Computed a row at a time with no image-sized temporary: the column sums
// over 3, 5, 7 and 9 rows grow from one another (two rows each), and each is
// summed along the row with a window fixed at compile time (so that the
// compiler vectorises along the row). The summation order is the one of the
// plain loops: the same bits as them.
#include <span>

namespace flowd::prnu {

// energy: height rows of in_width samples. Writes the estimate of the first
// out_width columns (out_width <= in_width) to out (height x out_width). The
// columns past out_width are read as neighbours only: the DFT filter passes
// the mirrored part of a half spectrum there. out may be energy itself when
// out_width == in_width.
void min_local_mean(std::span<const float> energy, int in_width, int height, int out_width, std::span<float> out);

// The same in place on rows `stride` samples apart: row y's first out_width
// samples become the estimate there; all `stride` samples are read.
void min_local_mean_in_place(std::span<float> data, int stride, int height, int out_width);

// Mihcak's rule on a band, in place: c -> c * noise_var / (v + noise_var),
// v = max(0, min_local_mean(c^2) - noise_var). Squares are taken once per
// sample (a ring of nine squared rows); no image-sized temporary.
void wiener_noise_part_in_place(std::span<float> band, int width, int height, float noise_var);

}  // namespace flowd::prnu

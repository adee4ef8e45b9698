#pragma once
// The NFI PRNU chain of Rocket (../../shared/papers/rocket.md, "PRNU"; Van
// Werkhoven et al.'s kernels for the Netherlands Forensic Institute) and the
// two filters the wavelet chain shares with it. All CPU, single-threaded and
// deterministic.
#include <functional>

#include "fft.hpp"
#include "image.hpp"

namespace flowd::prnu {

// Grey = 0.299 R + 0.587 G + 0.114 B (the NFI weights); a single-channel
// image is returned as it is. Other channel counts are refused.
Image grey_nfi(const ImageView& rgb);
// Grey with MATLAB's rgb2gray weights 0.29893602, 0.58704307, 0.11402090 (the
// ones prnu-python uses for the wavelet chain).
Image grey_matlab(const ImageView& rgb);

// FastNoise: gradients dx, dy with central differences inside and one-sided
// differences at the borders (f[1]-f[0] at the first sample, f[n-1]-f[n-2] at
// the last; 0 when the axis has one sample), scaled by 1/(1 + |(dx,dy)|), and
// the divergence d(dx)/dx + d(dy)/dy of the scaled field with the same
// stencils. This is the NFI FastNoiseFilter; the seed paper leaves it out.
Image fast_noise(const ImageView& grey);

// ZeroMeanTotal: in every row the mean of the even-indexed samples is taken
// from the even ones and the mean of the odd-indexed from the odd ones; then
// the same in every column. Equal to prnu-python's zero_mean_total (which
// zero-means rows and columns of the four 2x2 sub-lattices).
Image zero_mean_total(const ImageView& grey);
void zero_mean_total_in_place(Image& grey);

// Wiener filter in the DFT domain: F = DFT2(p), P = |F|^2 / N (N = pixels);
// e = min over w in {3,5,7,9} of the w x w mean of P (zero outside the
// unshifted spectrum, DC at the corner); F' = F * noise_var / max(noise_var, e);
// result = Re(IDFT2(F')). The zero border makes the gain g(k) differ from
// g(-k), so F' is not Hermitian and the real part matters: it is computed as
// the IDFT2 of F * (g(k) + g(-k)) / 2.
// With P normalised by N this is prnu-python's wiener_dft(im, sigma) with
// noise_var = sigma^2 (its |F|/sqrt(N) magnitudes, wiener_adaptive and
// F * filtered/|F| reduce to the same factor), and the digest's rule
// (P = |F|^2, noise variance sum(p^2) n/(n-1)) with noise_var =
// nfi_noise_variance(p): both sides scaled by 1/N. noise_var <= 0 (a zero
// input) gives zeros.
Image wiener_dft(const ImageView& grey, float noise_var, FftPlans& plans);

// The digest's noise variance of a pattern, expressed on the 1/N scale of
// wiener_dft: sum(p^2) / (n - 1) (no mean taken: patterns are zero-mean
// after ZeroMeanTotal). 0 for a single pixel.
float nfi_noise_variance(const ImageView& grey);
// The sample variance (ddof = 1, mean removed), accumulated in double:
// prnu-python's W.std(ddof=1)**2.
float sample_variance(const ImageView& grey);

// The NFI residual (PRNU pattern) of an RGB image (0..255) or a grey one:
// grey_nfi -> fast_noise -> zero_mean_total -> wiener_dft(nfi_noise_variance).
Image residual_nfi(const ImageView& rgb, FftPlans& plans);

namespace detail {
// wiener_dft on rows given by fill (as FftPlans::forward's), with the noise
// variance asked for once every row has been filled (so that fill may
// accumulate it), the result written to out (width * height samples, which
// may be the buffer fill reads: every row is read before any is written).
void wiener_dft_into(int width, int height, const FftPlans::RowFill& fill, const std::function<float()>& noise_variance,
                     float* out, FftPlans& plans);
}  // namespace detail

}  // namespace flowd::prnu

#pragma once
// The 1-d kernels of image.gaussian, built exactly as OpenCV's GaussianBlur
// builds them, for the GPU variant (and for the tests that check it without a
// GPU). Header-only; needs OpenCV's core headers only.
//
// OpenCV 4.x GaussianBlur (modules/imgproc/src/smooth.dispatch.cpp):
//   - the kernel values are softfloat doubles from getGaussianKernelBitExact;
//     the public cv::getGaussianKernel(n, sigma, CV_64F) returns exactly those
//     values and CV_32F the same values rounded to float;
//   - u8 and u16 images take the bit-exact fixed-point path. Its integer
//     weights (internal getGaussianKernelFixedPoint_ED) come from the values
//     above by error diffusion: walking from the outermost tap inwards,
//     v = round_half_even(value * 2^bits + carried error), the error carried
//     on in softfloat arithmetic; the centre tap takes what makes the sum
//     exactly 2^bits. bits = 8 for u8 (ufixedpoint16), 16 for u16
//     (ufixedpoint32). This file repeats that computation with the same
//     public softfloat type, so the integers are the same bits;
//   - f32 images take sepFilter2D with the CV_32F kernel;
//   - an image with one row (column) is blurred with a kernel of size 1 along
//     that axis (when the Mat is not a submatrix view, which flowd's as_mat
//     never makes).
// The test GaussianKernel.FixedPointModelMatchesOpenCvBitExactly
// (tests/gpu/test_gaussian_gpu.cpp) recomputes GaussianBlur from these
// weights on the CPU and compares every pixel with OpenCV's result, so an
// OpenCV that builds its kernels differently fails there, without a GPU.
#include <cmath>
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/core/softfloat.hpp>
#include <opencv2/imgproc.hpp>

namespace flowd::image {

// image.gaussian's kernel size for sigma: 2 ceil(3 sigma) + 1 (the CPU
// variant's expression, gaussian.cpp).
inline int gaussian_kernel_size(double sigma) { return 2 * static_cast<int>(std::ceil(3 * sigma)) + 1; }

// One half of a symmetric kernel of odd size `ksize`: half[j] weighs the taps
// at offsets +j and -j, j = 0 .. ksize / 2.
//   fraction_bits 0:      the float kernel's values (exactly representable as doubles);
//   fraction_bits 8, 16:  OpenCV's fixed-point integer weights, summing (full
//                         kernel) to exactly 2^fraction_bits.
inline std::vector<double> gaussian_half_kernel(int ksize, double sigma, int fraction_bits) {
  const int n2 = ksize / 2;
  std::vector<double> half(static_cast<std::size_t>(n2) + 1);
  if (fraction_bits == 0) {
    const cv::Mat k = cv::getGaussianKernel(ksize, sigma, CV_32F);
    for (int j = 0; j <= n2; ++j) half[static_cast<std::size_t>(j)] = k.at<float>(n2 + j);
    return half;
  }
  const cv::Mat k = cv::getGaussianKernel(ksize, sigma, CV_64F);
  const std::int64_t one = std::int64_t{1} << fraction_bits;
  const cv::softdouble scale(one);
  cv::softdouble err = cv::softdouble::zero();
  std::int64_t sum = 0;
  for (int i = 0; i < n2; ++i) {  // tap i of the full kernel, outermost first
    const cv::softdouble adj = cv::softdouble(k.at<double>(i)) * scale + err;
    const std::int64_t v = cvRound(adj);  // softfloat's round half to even, as OpenCV
    err = adj - cv::softdouble(v);
    half[static_cast<std::size_t>(n2 - i)] = static_cast<double>(v);
    sum += v;
  }
  half[0] = static_cast<double>(one - 2 * sum);
  return half;
}

}  // namespace flowd::image

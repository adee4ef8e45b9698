#pragma once
// The arithmetic that turns one nucleus's histograms, co-occurrence counts
// and moment sums into its features. It is shared, source for source, by the
// CPU variant (features.cpp) and the GPU's second kernel (one thread per
// nucleus, gpu/features_kernels.cu), so the two can only differ where their
// inputs do (the order of floating-point sums over pixels) and in the last
// bit of log/exp/atan/sqrt. Hence: no OpenCV, no CUDA headers, C++17, plain
// arrays, and the global math functions (host and device both declare them).
//
// The definitions of every feature are in features.hpp.
#include <math.h>

#include <cstdint>

#if defined(__CUDACC__)
#define FLOWD_FEAT_HD __host__ __device__
#else
#define FLOWD_FEAT_HD
#endif

namespace flowd::nuclei::features {

constexpr int kBins = 256;           // u8 channels: haematoxylin, eosin, grey
// Gradient histogram bins: floor(G) of the 3x3 Sobel magnitude of a u8 image,
// G <= sqrt(2) * 1020 = 1442.5.
constexpr int kGradBins = 1448;
constexpr int kMinLevels = 2;
constexpr int kMaxLevels = 64;       // GLCM grey levels (bounds the GPU's shared memory)
constexpr int kDirections = 4;       // (0,1) (-1,1) (-1,0) (-1,-1), as (drow, dcol)
FLOWD_FEAT_HD constexpr int dir_row(int d) { return d == 0 ? 0 : -1; }
FLOWD_FEAT_HD constexpr int dir_col(int d) { return d <= 1 ? 1 : d == 2 ? 0 : -1; }

// Plain int constants rather than enums: columns are computed as
// block + offset, which C++20 deprecates between different enumerations.

// Histogram statistics, in this order, for every channel.
constexpr int kMean = 0, kStd = 1, kMin = 2, kMax = 3, kQ1 = 4, kMedian = 5, kQ3 = 6, kSkewness = 7, kKurtosis = 8,
              kEntropy = 9, kStatCount = 10;
// Haralick features, in this order.
constexpr int kAsm = 0, kContrast = 1, kCorrelation = 2, kSumSquares = 3, kIdm = 4, kSumAverage = 5,
              kSumVariance = 6, kSumEntropy = 7, kGlcmEntropy = 8, kDiffVariance = 9, kDiffEntropy = 10, kImc1 = 11,
              kImc2 = 12, kHaralickCount = 13;

// Columns of a feature row. Blocks of kStatCount statistics start at kH,
// kE, kGrey, kGrad, kRingH, kRingE, kRingGrey; kGlcm starts the 13 Haralick
// features.
constexpr int kArea = 0, kPerimeter = 1, kEquivDiameter = 2, kMajorAxis = 3, kMinorAxis = 4, kEccentricity = 5,
              kOrientation = 6, kSolidity = 7, kExtent = 8, kCircularity = 9;
constexpr int kH = 10;
constexpr int kE = kH + kStatCount;
constexpr int kGrey = kE + kStatCount;
constexpr int kGrad = kGrey + kStatCount;
constexpr int kCannyFraction = kGrad + kStatCount;
constexpr int kGlcm = kCannyFraction + 1;
constexpr int kRingArea = kGlcm + kHaralickCount;
constexpr int kRingH = kRingArea + 1;
constexpr int kRingE = kRingH + kStatCount;
constexpr int kRingGrey = kRingE + kStatCount;
constexpr int kFeatureCount = kRingGrey + kStatCount;
static_assert(kFeatureCount == 95, "the column list in features.cpp names 95 features");

// Histograms of a nucleus, in this order (the GPU stores them so).
constexpr int kHistH = 0, kHistE = 1, kHistGrey = 2, kHistRingH = 3, kHistRingE = 4, kHistRingGrey = 5, kHistCount = 6;

// A read-only view of counts `stride` elements apart: the CPU passes its
// per-nucleus arrays (stride 1), the GPU arrays laid out bin-major across
// nuclei (stride = number of nuclei) so a warp's threads read adjacent words.
struct Counts {
  const std::uint32_t* p;
  std::int64_t stride;
  FLOWD_FEAT_HD std::uint32_t operator[](std::int64_t i) const { return p[i * stride]; }
};

// What the pixel pass over one nucleus's box produces besides histograms.
// Coordinates are relative to the box origin, so the sums stay exact.
struct NucleusSums {
  std::uint64_t area;                    // pixels
  std::uint64_t sr, sc, srr, scc, src;   // sums of row, col, row^2, col^2, row*col
  std::uint64_t edges;                   // Canny edge pixels in the nucleus
  std::uint64_t ring_area;               // pixels of the cytoplasm ring
  double grad_mean;                      // mean of G (first pass)
  double grad_m2, grad_m3, grad_m4;      // sums of (G - mean)^k (second pass)
  std::uint32_t grad_min2, grad_max2;    // min/max of gx^2 + gy^2 (exact integers)
  std::int32_t box_height, box_width;
};

FLOWD_FEAT_HD inline double nonneg(double v) { return v > 0 ? v : 0; }

// mean std min max q1 median q3 skewness kurtosis entropy of the values v
// with counts h[v] (v = 0..bins-1). Population moments; skewness m3/m2^1.5
// and excess kurtosis m4/m2^2 - 3 are 0 when m2 = 0. Quartile k is the
// smallest v with 4 * #{<= v} >= k * n (nearest rank, "inverted CDF").
// Entropy in bits. All 0 when n = 0.
FLOWD_FEAT_HD inline void quartiles_entropy(Counts h, int bins, std::uint64_t n, double* out) {
  const std::uint64_t target[3] = {n, 2 * n, 3 * n};  // compared with 4 * cumulative count
  std::uint64_t cum = 0;
  int k = 0;
  double entropy = 0;
  const double inv_n = 1.0 / static_cast<double>(n);
  for (int v = 0; v < bins; ++v) {
    const std::uint32_t c = h[v];
    if (c == 0) continue;
    cum += c;
    while (k < 3 && 4 * cum >= target[k]) out[kQ1 + k++] = v;
    const double p = static_cast<double>(c) * inv_n;
    entropy -= p * log2(p);
  }
  out[kEntropy] = entropy;
}

FLOWD_FEAT_HD inline void hist_stats(Counts h, int bins, double* out) {
  for (int s = 0; s < kStatCount; ++s) out[s] = 0;
  std::uint64_t n = 0, s1 = 0;
  int lo = -1, hi = -1;
  for (int v = 0; v < bins; ++v) {
    const std::uint32_t c = h[v];
    if (c == 0) continue;
    n += c;
    s1 += static_cast<std::uint64_t>(c) * static_cast<std::uint64_t>(v);
    if (lo < 0) lo = v;
    hi = v;
  }
  if (n == 0) return;
  const double dn = static_cast<double>(n), mean = static_cast<double>(s1) / dn;
  double m2 = 0, m3 = 0, m4 = 0;
  for (int v = lo; v <= hi; ++v) {
    const std::uint32_t c = h[v];
    if (c == 0) continue;
    const double d = v - mean, d2 = d * d, w = static_cast<double>(c);
    m2 += w * d2;
    m3 += w * d2 * d;
    m4 += w * d2 * d2;
  }
  m2 /= dn, m3 /= dn, m4 /= dn;
  out[kMean] = mean;
  out[kStd] = sqrt(m2);
  out[kMin] = lo;
  out[kMax] = hi;
  out[kSkewness] = m2 > 0 ? m3 / (m2 * sqrt(m2)) : 0;
  out[kKurtosis] = m2 > 0 ? m4 / (m2 * m2) - 3 : 0;
  quartiles_entropy(h, bins, n, out);
}

// The gradient: moments from the exact magnitudes (two passes, so no
// cancellation), quartiles and entropy from the histogram of floor(G).
FLOWD_FEAT_HD inline void grad_stats(const NucleusSums& s, Counts h, double* out) {
  for (int k = 0; k < kStatCount; ++k) out[k] = 0;
  if (s.area == 0) return;
  const double dn = static_cast<double>(s.area);
  const double m2 = s.grad_m2 / dn, m3 = s.grad_m3 / dn, m4 = s.grad_m4 / dn;
  out[kMean] = s.grad_mean;
  out[kStd] = sqrt(nonneg(m2));
  out[kMin] = sqrt(static_cast<double>(s.grad_min2));
  out[kMax] = sqrt(static_cast<double>(s.grad_max2));
  out[kSkewness] = m2 > 0 ? m3 / (m2 * sqrt(m2)) : 0;
  out[kKurtosis] = m2 > 0 ? m4 / (m2 * m2) - 3 : 0;
  quartiles_entropy(h, kGradBins, s.area, out);
}

// Axes, eccentricity and orientation as MATLAB's regionprops: normalised
// second central moments of the pixel centres plus 1/12 (a unit square's own
// variance), x = column, y = -row (orientation counter-clockwise from the
// x axis, degrees in (-90, 90]).
FLOWD_FEAT_HD inline void moment_shape(const NucleusSums& s, double* out) {
  const double n = static_cast<double>(s.area);
  const double sr = static_cast<double>(s.sr), sc = static_cast<double>(s.sc);
  const double uxx = (static_cast<double>(s.scc) - sc * sc / n) / n + 1.0 / 12.0;
  const double uyy = (static_cast<double>(s.srr) - sr * sr / n) / n + 1.0 / 12.0;
  // (b - a) rather than -(a - b): a symmetric shape must give uxy = +0, not
  // -0, or a tall one's orientation would come out as -90 instead of 90.
  const double uxy = (sr * sc / n - static_cast<double>(s.src)) / n;
  const double common = sqrt((uxx - uyy) * (uxx - uyy) + 4 * uxy * uxy);
  const double major = 2 * sqrt(2.0) * sqrt(nonneg(uxx + uyy + common));
  const double minor = 2 * sqrt(2.0) * sqrt(nonneg(uxx + uyy - common));
  out[kMajorAxis] = major;
  out[kMinorAxis] = minor;
  out[kEccentricity] = major > 0 ? 2 * sqrt(nonneg(major * major / 4 - minor * minor / 4)) / major : 0;
  double num, den;
  if (uyy > uxx) {
    num = uyy - uxx + common;
    den = 2 * uxy;
  } else {
    num = 2 * uxy;
    den = uxx - uyy + common;
  }
  out[kOrientation] = num == 0 && den == 0 ? 0 : (180.0 / 3.14159265358979323846) * atan(num / den);
}

// The 13 Haralick features of each direction's normalised symmetric GLCM,
// averaged over the directions that have at least one pixel pair (all 0 if
// none has). c holds kDirections blocks of L*L unsymmetrised counts
// c[i*L + j] = #pairs (p, p + offset) with levels (i, j). Levels count from 1
// as in Haralick (1973), which matters for the sum average only; logarithms
// are natural. Sum variance uses the sum average (the usual correction of
// the paper's f8). HXY2 = HX + HY exactly (the marginals sum to 1), and
// HX = HY for a symmetric matrix. Correlation is 1 where the variance is 0
// (a constant region), IMC1 0 where HX = 0.
FLOWD_FEAT_HD inline void haralick(Counts c, int L, double* out) {
  double acc[kHaralickCount];
  for (int f = 0; f < kHaralickCount; ++f) acc[f] = 0;
  int used = 0;
  double px[kMaxLevels], lpx[kMaxLevels], psum[2 * kMaxLevels - 1], pdiff[kMaxLevels];
  const std::int64_t LL = static_cast<std::int64_t>(L) * L;
  for (int d = 0; d < kDirections; ++d) {
    const std::int64_t base = d * LL;
    std::uint64_t pairs = 0;
    for (std::int64_t e = 0; e < LL; ++e) pairs += c[base + e];
    if (pairs == 0) continue;
    ++used;
    const double inv = 1.0 / (2.0 * static_cast<double>(pairs));
    for (int i = 0; i < L; ++i) px[i] = 0, pdiff[i] = 0;
    for (int k = 0; k < 2 * L - 1; ++k) psum[k] = 0;
    double asm_ = 0, contrast = 0, idm = 0, entropy = 0;
    for (int i = 0; i < L; ++i)
      for (int j = 0; j < L; ++j) {
        const std::uint32_t cij = c[base + i * L + j], cji = c[base + j * L + i];
        if (cij == 0 && cji == 0) continue;
        const double p = static_cast<double>(static_cast<std::uint64_t>(cij) + cji) * inv;
        const int dd = i > j ? i - j : j - i;
        px[i] += p;
        psum[i + j] += p;
        pdiff[dd] += p;
        asm_ += p * p;
        contrast += static_cast<double>(dd * dd) * p;
        idm += p / (1.0 + dd * dd);
        entropy -= p * log(p);
      }
    double mu = 0, hx = 0;
    for (int i = 0; i < L; ++i) {
      mu += (i + 1) * px[i];
      lpx[i] = px[i] > 0 ? log(px[i]) : 0;
      hx -= px[i] * lpx[i];
    }
    double var = 0;
    for (int i = 0; i < L; ++i) var += (i + 1 - mu) * (i + 1 - mu) * px[i];
    double cov = 0, hxy1 = 0;
    for (int i = 0; i < L; ++i)
      for (int j = 0; j < L; ++j) {
        const std::uint32_t cij = c[base + i * L + j], cji = c[base + j * L + i];
        if (cij == 0 && cji == 0) continue;
        const double p = static_cast<double>(static_cast<std::uint64_t>(cij) + cji) * inv;
        cov += (i + 1 - mu) * (j + 1 - mu) * p;
        hxy1 -= p * (lpx[i] + lpx[j]);
      }
    double sum_avg = 0, sum_entropy = 0;
    for (int k = 0; k < 2 * L - 1; ++k) {
      sum_avg += (k + 2) * psum[k];
      if (psum[k] > 0) sum_entropy -= psum[k] * log(psum[k]);
    }
    double sum_var = 0;
    for (int k = 0; k < 2 * L - 1; ++k) sum_var += (k + 2 - sum_avg) * (k + 2 - sum_avg) * psum[k];
    double diff_mean = 0, diff_entropy = 0;
    for (int k = 0; k < L; ++k) {
      diff_mean += k * pdiff[k];
      if (pdiff[k] > 0) diff_entropy -= pdiff[k] * log(pdiff[k]);
    }
    double diff_var = 0;
    for (int k = 0; k < L; ++k) diff_var += (k - diff_mean) * (k - diff_mean) * pdiff[k];
    const double hxy2 = 2 * hx;
    acc[kAsm] += asm_;
    acc[kContrast] += contrast;
    acc[kCorrelation] += var > 0 ? cov / var : 1.0;
    acc[kSumSquares] += var;
    acc[kIdm] += idm;
    acc[kSumAverage] += sum_avg;
    acc[kSumVariance] += sum_var;
    acc[kSumEntropy] += sum_entropy;
    acc[kGlcmEntropy] += entropy;
    acc[kDiffVariance] += diff_var;
    acc[kDiffEntropy] += diff_entropy;
    acc[kImc1] += hx > 0 ? (entropy - hxy1) / hx : 0;
    acc[kImc2] += sqrt(nonneg(1 - exp(-2 * (hxy2 - entropy))));
  }
  for (int f = 0; f < kHaralickCount; ++f) out[f] = used > 0 ? acc[f] / used : 0;
}

// Everything but perimeter, solidity and circularity (which need the
// nucleus's contour: host code, features.cpp) from one nucleus's pixel pass.
// hist[k] is histogram Hist k (kBins bins), grad the kGradBins histogram of
// floor(G), glcm the kDirections x L x L counts.
FLOWD_FEAT_HD inline void finish_nucleus(const NucleusSums& s, const Counts* hist, Counts grad, Counts glcm, int L,
                                         double* row) {
  for (int f = 0; f < kFeatureCount; ++f) row[f] = 0;
  const double area = static_cast<double>(s.area);
  row[kArea] = area;
  row[kEquivDiameter] = sqrt(4 * area / 3.14159265358979323846);
  row[kExtent] = area / (static_cast<double>(s.box_height) * s.box_width);
  moment_shape(s, row);
  hist_stats(hist[kHistH], kBins, row + kH);
  hist_stats(hist[kHistE], kBins, row + kE);
  hist_stats(hist[kHistGrey], kBins, row + kGrey);
  grad_stats(s, grad, row + kGrad);
  row[kCannyFraction] = static_cast<double>(s.edges) / area;
  haralick(glcm, L, row + kGlcm);
  row[kRingArea] = static_cast<double>(s.ring_area);
  hist_stats(hist[kHistRingH], kBins, row + kRingH);
  hist_stats(hist[kHistRingE], kBins, row + kRingE);
  hist_stats(hist[kHistRingGrey], kBins, row + kRingGrey);
}

// Circularity 4 pi area / perimeter^2; 0 for a perimeter of 0 (one pixel).
FLOWD_FEAT_HD inline double circularity(double area, double perimeter) {
  return perimeter > 0 ? 4 * 3.14159265358979323846 * area / (perimeter * perimeter) : 0;
}

}  // namespace flowd::nuclei::features

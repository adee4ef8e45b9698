// Colour deconvolution (Ruifrok & Johnston 2001) to one stain, quantised.
// Compiled with -ffp-contract=off: stain.hpp fixes each float rounding.
#include <cmath>
#include <stdexcept>

#include "segment.hpp"

namespace flowd::nuclei {

const StainInverse& he_stain_inverse() {
  static const StainInverse inverse = [] {
    // Optical-density vectors (R, G, B) of haematoxylin and eosin as in
    // Ruifrok's ImageJ plugin ("H&E"); the residual is completed the same way
    // the plugin does (each channel's missing component from unit column
    // norm), so the matrix is the published one and invertible.
    double m[3][3] = {{0.644211, 0.716556, 0.266844}, {0.092789, 0.954111, 0.283111}, {0, 0, 0}};
    for (auto& row : m) {
      const double n = std::sqrt(row[0] * row[0] + row[1] * row[1] + row[2] * row[2]);
      if (n > 0)
        for (double& v : row) v /= n;
    }
    for (int c = 0; c < 3; ++c) {
      const double s = m[0][c] * m[0][c] + m[1][c] * m[1][c];
      m[2][c] = s > 1 ? 0.0 : std::sqrt(1.0 - s);
    }
    const double n3 = std::sqrt(m[2][0] * m[2][0] + m[2][1] * m[2][1] + m[2][2] * m[2][2]);
    for (double& v : m[2]) v /= n3;
    // od (row vector) = c * M, so c = od * M^-1: stain i's weights are column
    // i of M^-1 (the row of the inverse of the column-stain matrix M^T).
    const double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                       m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    StainInverse inv{};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        const int i1 = (j + 1) % 3, i2 = (j + 2) % 3, j1 = (i + 1) % 3, j2 = (i + 2) % 3;
        inv[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = (m[i1][j1] * m[i2][j2] - m[i1][j2] * m[i2][j1]) / det;
      }
    return inv;
  }();
  return inverse;
}

StainWeights stain_weights(int stain, double od_max) {
  if (stain < 0 || stain > 1) throw std::invalid_argument("stain_weights: stain must be 0 (haematoxylin) or 1 (eosin)");
  if (!(od_max > 0)) throw std::invalid_argument("stain_weights: od_max must be > 0");
  const StainInverse& inv = he_stain_inverse();
  StainWeights sw;
  for (std::size_t c = 0; c < 3; ++c) sw.w[c] = static_cast<float>(inv[c][static_cast<std::size_t>(stain)]);
  sw.scale = static_cast<float>(255.0 / od_max);
  for (int v = 0; v < 256; ++v) sw.lut[v] = static_cast<float>(-std::log10((v + 1) / 256.0));
  return sw;
}

namespace {

// w[c] * lut[v] is one float product whatever v is, so tabulating it keeps
// the defined rounding and leaves two adds and a multiply per pixel.
using StainTable = std::array<std::array<float, 256>, 3>;
StainTable stain_table(const StainWeights& sw) {
  StainTable t{};
  for (int c = 0; c < 3; ++c)
    for (int v = 0; v < 256; ++v) t[c][v] = sw.w[c] * sw.lut[v];
  return t;
}

std::uint8_t quantise(const StainTable& t, const StainWeights& sw, const std::uint8_t* px) {
  const float sum = (t[0][px[0]] + t[1][px[1]]) + t[2][px[2]];
  const float q = sum * sw.scale;
  return q <= 0.0f ? 0 : q >= 255.0f ? 255 : static_cast<std::uint8_t>(static_cast<int>(q + 0.5f));
}

}  // namespace

cv::Mat deconvolve_masked(const cv::Mat& rgb, const StainWeights& sw, int level, int rg_q8, int rb_q8, cv::Mat& tissue,
                          cv::Mat& rbc) {
  if (rgb.type() != CV_8UC3) throw std::invalid_argument("deconvolve_masked: expects CV_8UC3 RGB");
  const StainTable t = stain_table(sw);
  const int limit = 3 * level;
  tissue.create(rgb.size(), CV_8U);
  rbc.create(rgb.size(), CV_8U);
  cv::Mat out(rgb.size(), CV_8U);
  for (int y = 0; y < rgb.rows; ++y) {
    const std::uint8_t* s = rgb.ptr<std::uint8_t>(y);
    std::uint8_t* tm = tissue.ptr<std::uint8_t>(y);
    std::uint8_t* rm = rbc.ptr<std::uint8_t>(y);
    std::uint8_t* d = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x) {
      const int r = s[3 * x], g = s[3 * x + 1], b = s[3 * x + 2];
      const bool on_tissue = r + g + b < limit;
      const bool red = on_tissue && 256 * r >= rg_q8 * g && 256 * r >= rb_q8 * b;
      tm[x] = on_tissue ? 255 : 0;
      rm[x] = red ? 255 : 0;
      d[x] = on_tissue && !red ? quantise(t, sw, s + 3 * x) : 0;
    }
  }
  return out;
}

cv::Mat deconvolve(const cv::Mat& rgb, const StainWeights& sw) {
  if (rgb.type() != CV_8UC3) throw std::invalid_argument("deconvolve: expects CV_8UC3 RGB");
  const StainTable t = stain_table(sw);
  cv::Mat out(rgb.size(), CV_8U);
  for (int y = 0; y < rgb.rows; ++y) {
    const std::uint8_t* s = rgb.ptr<std::uint8_t>(y);
    std::uint8_t* d = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x)
      d[x] = quantise(t, sw, s + 3 * x);
  }
  return out;
}

}  // namespace flowd::nuclei

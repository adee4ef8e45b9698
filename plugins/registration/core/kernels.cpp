#include "kernels.hpp"

#include <algorithm>
#include <cmath>

namespace flowd::registration {

namespace {

// Convolves rows (horizontal) or columns (vertical) with `taps` centred on
// `centre`, replicating the border.
Image convolve_rows(const ImageView& in, const std::vector<float>& taps, int centre) {
  Image out(in.width, in.height);
  const int k = static_cast<int>(taps.size());
  for (int y = 0; y < in.height; ++y) {
    const float* src = in.row(y);
    float* dst = out.row(y);
    for (int x = 0; x < in.width; ++x) {
      float s = 0.0f;
      for (int t = 0; t < k; ++t)
        s += taps[static_cast<std::size_t>(t)] * src[std::clamp(x + t - centre, 0, in.width - 1)];
      dst[x] = s;
    }
  }
  return out;
}

Image convolve_columns(const ImageView& in, const std::vector<float>& taps, int centre) {
  Image out(in.width, in.height);
  const int k = static_cast<int>(taps.size());
  for (int y = 0; y < in.height; ++y) {
    float* dst = out.row(y);
    std::fill(dst, dst + in.width, 0.0f);
    for (int t = 0; t < k; ++t) {
      const float* src = in.row(std::clamp(y + t - centre, 0, in.height - 1));
      const float w = taps[static_cast<std::size_t>(t)];
      for (int x = 0; x < in.width; ++x)
        dst[x] += w * src[x];
    }
  }
  return out;
}

}  // namespace

NccSums& NccSums::operator+=(const NccSums& o) noexcept {
  n += o.n;
  r += o.r;
  rr += o.rr;
  w += o.w;
  ww += o.ww;
  rw += o.rw;
  for (int i = 0; i < 3; ++i) {
    j[i] += o.j[i];
    jw[i] += o.jw[i];
    jr[i] += o.jr[i];
  }
  for (int i = 0; i < 6; ++i)
    jj[i] += o.jj[i];
  return *this;
}

std::vector<float> gaussian_taps(double sigma) {
  const int radius = std::max(1, static_cast<int>(std::ceil(3.0 * sigma)));
  std::vector<float> taps(static_cast<std::size_t>(2 * radius + 1));
  double total = 0.0;
  for (int i = -radius; i <= radius; ++i)
    total += std::exp(-0.5 * i * i / (sigma * sigma));
  for (int i = -radius; i <= radius; ++i)
    taps[static_cast<std::size_t>(i + radius)] = static_cast<float>(std::exp(-0.5 * i * i / (sigma * sigma)) / total);
  return taps;
}

Image gaussian_blur(const ImageView& in, double sigma) {
  if (sigma <= 0.0) {
    Image out(in.width, in.height);
    for (int y = 0; y < in.height; ++y)
      std::copy(in.row(y), in.row(y) + in.width, out.row(y));
    return out;
  }
  const std::vector<float> taps = gaussian_taps(sigma);
  const int radius = static_cast<int>(taps.size() / 2);
  const Image h = convolve_rows(in, taps, radius);
  return convolve_columns(h.view(), taps, radius);
}

Image pyramid_down(const ImageView& in) {
  const int w = in.width / 2, h = in.height / 2;
  if (w < 1 || h < 1) throw std::invalid_argument("pyramid_down: image too small");
  constexpr float taps[6] = {1.0f / 32, 5.0f / 32, 10.0f / 32, 10.0f / 32, 5.0f / 32, 1.0f / 32};
  // Horizontal pass with stride 2: w x in.height.
  Image half(w, in.height);
  for (int y = 0; y < in.height; ++y) {
    const float* src = in.row(y);
    float* dst = half.row(y);
    for (int x = 0; x < w; ++x) {
      float s = 0.0f;
      for (int t = 0; t < 6; ++t)
        s += taps[t] * src[std::clamp(2 * x - 2 + t, 0, in.width - 1)];
      dst[x] = s;
    }
  }
  Image out(w, h);
  for (int y = 0; y < h; ++y) {
    float* dst = out.row(y);
    std::fill(dst, dst + w, 0.0f);
    for (int t = 0; t < 6; ++t) {
      const float* src = half.row(std::clamp(2 * y - 2 + t, 0, in.height - 1));
      for (int x = 0; x < w; ++x)
        dst[x] += taps[t] * src[x];
    }
  }
  return out;
}

void gradient(const ImageView& in, Image& gx, Image& gy) {
  gx = Image(in.width, in.height);
  gy = Image(in.width, in.height);
  const int w = in.width, h = in.height;
  for (int y = 0; y < h; ++y) {
    const float* src = in.row(y);
    const float* up = in.row(std::max(y - 1, 0));
    const float* down = in.row(std::min(y + 1, h - 1));
    const float dy_scale = (y == 0 || y == h - 1) ? 1.0f : 0.5f;
    float* ox = gx.row(y);
    float* oy = gy.row(y);
    for (int x = 0; x < w; ++x) {
      const int l = std::max(x - 1, 0), r = std::min(x + 1, w - 1);
      ox[x] = (r - l) > 0 ? (src[r] - src[l]) / static_cast<float>(r - l) : 0.0f;
      oy[x] = h > 1 ? (down[x] - up[x]) * dy_scale : 0.0f;
    }
  }
}

NccSums ncc_sums(const ImageView& ref, const ImageView& tmpl, const ImageView& gx, const ImageView& gy,
                 const WarpParams& p, bool with_jacobian) {
  if (gx.stride != tmpl.stride || gy.stride != tmpl.stride)
    throw std::invalid_argument("ncc_sums: the template and its gradients must share one stride");
  NccSums total;
  const double xmax = tmpl.width - 1, ymax = tmpl.height - 1;
  const double c = p.cos_a, s = p.sin_a;
  for (int y = 0; y < ref.height; ++y) {
    // p(x) = p(0) + x (cos, sin) along the row.
    const double dy = y - p.cy;
    double px = p.cx + c * (0.0 - p.cx) - s * dy + p.tx;
    double py = p.cy + s * (0.0 - p.cx) + c * dy + p.ty;
    // The run of x for which p stays inside [0, xmax] x [0, ymax].
    double lo = 0.0, hi = ref.width - 1.0;
    auto clip = [&](double start, double step, double limit) {
      if (std::abs(step) < 1e-12) {
        if (start < 0.0 || start > limit) hi = -1.0;
        return;
      }
      double a = (0.0 - start) / step, b = (limit - start) / step;
      if (a > b) std::swap(a, b);
      lo = std::max(lo, a);
      hi = std::min(hi, b);
    };
    clip(px, c, xmax);
    clip(py, s, ymax);
    if (hi < lo) continue;
    const int x0 = static_cast<int>(std::ceil(lo - 1e-9)), x1 = static_cast<int>(std::floor(hi + 1e-9));
    NccSums row;
    const float* rrow = ref.row(y);
    for (int x = std::max(x0, 0); x <= std::min(x1, ref.width - 1); ++x) {
      const double qx = px + c * x, qy = py + s * x;
      if (qx < 0.0 || qy < 0.0 || qx > xmax || qy > ymax) continue;  // rounding at the ends of the run
      int ix = static_cast<int>(qx), iy = static_cast<int>(qy);
      ix = std::min(ix, tmpl.width - 2 < 0 ? 0 : tmpl.width - 2);
      iy = std::min(iy, tmpl.height - 2 < 0 ? 0 : tmpl.height - 2);
      const double fx = qx - ix, fy = qy - iy;
      const double w00 = (1 - fx) * (1 - fy), w10 = fx * (1 - fy), w01 = (1 - fx) * fy, w11 = fx * fy;
      const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(iy) * tmpl.stride + ix;
      const std::ptrdiff_t ox = tmpl.width > 1 ? 1 : 0, oy = tmpl.height > 1 ? tmpl.stride : 0;
      auto sample = [&](const float* d) {
        return w00 * d[o] + w10 * d[o + ox] + w01 * d[o + oy] + w11 * d[o + ox + oy];
      };
      const double r = rrow[x];
      const double v = sample(tmpl.data);
      row.n += 1;
      row.r += r;
      row.rr += r * r;
      row.w += v;
      row.ww += v * v;
      row.rw += r * v;
      if (!with_jacobian) continue;
      const double g_x = sample(gx.data), g_y = sample(gy.data);
      // dphi/dangle = R'(a)(x - c) = (-(q - c - t)_y, (q - c - t)_x)
      const double ja = -g_x * (qy - p.cy - p.ty) + g_y * (qx - p.cx - p.tx);
      const double jv[3] = {ja, g_x, g_y};
      for (int i = 0; i < 3; ++i) {
        row.j[i] += jv[i];
        row.jw[i] += jv[i] * v;
        row.jr[i] += jv[i] * r;
      }
      row.jj[0] += ja * ja;
      row.jj[1] += ja * g_x;
      row.jj[2] += ja * g_y;
      row.jj[3] += g_x * g_x;
      row.jj[4] += g_x * g_y;
      row.jj[5] += g_y * g_y;
    }
    total += row;
  }
  return total;
}

Image warp(const ImageView& tmpl, const WarpParams& p, int width, int height, float outside) {
  Image out(width, height);
  const double xmax = tmpl.width - 1, ymax = tmpl.height - 1;
  for (int y = 0; y < height; ++y) {
    float* dst = out.row(y);
    const double dy = y - p.cy;
    for (int x = 0; x < width; ++x) {
      const double dx = x - p.cx;
      const double qx = p.cx + p.cos_a * dx - p.sin_a * dy + p.tx;
      const double qy = p.cy + p.sin_a * dx + p.cos_a * dy + p.ty;
      if (!(qx >= 0.0 && qy >= 0.0 && qx <= xmax && qy <= ymax)) {
        dst[x] = outside;
        continue;
      }
      const int ix = std::min(static_cast<int>(qx), std::max(tmpl.width - 2, 0));
      const int iy = std::min(static_cast<int>(qy), std::max(tmpl.height - 2, 0));
      const double fx = qx - ix, fy = qy - iy;
      const std::ptrdiff_t ox = tmpl.width > 1 ? 1 : 0, oy = tmpl.height > 1 ? tmpl.stride : 0;
      const float* d = tmpl.data + static_cast<std::ptrdiff_t>(iy) * tmpl.stride + ix;
      dst[x] = static_cast<float>((1 - fx) * (1 - fy) * d[0] + fx * (1 - fy) * d[ox] + (1 - fx) * fy * d[oy] +
                                  fx * fy * d[ox + oy]);
    }
  }
  return out;
}

}  // namespace flowd::registration

#include "local_energy.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "simd.hpp"

namespace flowd::prnu {

namespace {

constexpr int kPad = 4;  // the largest half window

// best[x] = (First ? mean : min(best[x], mean)), mean the (2R+1)-wide mean of
// col around x. col has kPad readable samples (zeros) before index 0 and
// after the last.
template <int R, bool First>
inline __attribute__((always_inline)) void window_pass(const float* col, float* best, std::size_t n) {
  constexpr float scale = 1.0f / static_cast<float>((2 * R + 1) * (2 * R + 1));
  const float* c = col - R;
  for (std::size_t x = 0; x < n; ++x) {
    float s = c[x];
    for (int d = 1; d <= 2 * R; ++d)
      s += c[x + static_cast<std::size_t>(d)];
    const float mean = s * scale;
    if constexpr (First)
      best[x] = mean;
    else
      best[x] = std::min(best[x], mean);
  }
}

// One output row: rows[4 + d] is input row y + d (nullptr outside the
// array). The column sums grow in the order of the plain loop: rows y-1, y,
// y+1, then y-2, y+2, and so on; each is summed along the row.
FLOWD_PRNU_CLONES
void estimate_row(const float* const rows[9], float* col, float* best, std::size_t iw, std::size_t ow) {
  const float* first[3] = {rows[4], rows[4], rows[4]};  // row y always exists
  int k = 0;
  for (int d = -1; d <= 1; ++d)
    if (rows[4 + d] != nullptr) first[k++] = rows[4 + d];
  if (k == 1) {
    std::copy(first[0], first[0] + iw, col);
  } else if (k == 2) {
    const float* a = first[0];
    const float* b = first[1];
    for (std::size_t x = 0; x < iw; ++x)
      col[x] = a[x] + b[x];
  } else {
    const float* a = first[0];
    const float* b = first[1];
    const float* c = first[2];
    for (std::size_t x = 0; x < iw; ++x)
      col[x] = (a[x] + b[x]) + c[x];
  }
  window_pass<1, true>(col, best, ow);
  for (int half = 2; half <= kPad; ++half) {
    const float* a = rows[4 - half];
    const float* b = rows[4 + half];
    if (a != nullptr && b != nullptr) {
      for (std::size_t x = 0; x < iw; ++x)
        col[x] = (col[x] + a[x]) + b[x];
    } else if (a != nullptr || b != nullptr) {
      const float* s = a != nullptr ? a : b;
      for (std::size_t x = 0; x < iw; ++x)
        col[x] += s[x];
    }
    if (half == 2)
      window_pass<2, false>(col, best, ow);
    else if (half == 3)
      window_pass<3, false>(col, best, ow);
    else
      window_pass<4, false>(col, best, ow);
  }
}

// The row loop. row(r) gives input row r (in_width samples) for r within
// four of the current y, called in increasing y; emit(y, best) receives the
// estimate of row y (out_width samples) once rows up to y + 4 are no longer
// needed by it.
template <class Row, class Emit>
void min_local_mean_rows(int in_width, int height, int out_width, Row&& row, Emit&& emit) {
  const auto iw = static_cast<std::size_t>(in_width);
  const auto ow = static_cast<std::size_t>(out_width);
  // Column sums with kPad zeros either side: the zero border without branches.
  std::vector<float> column(iw + 2 * kPad, 0.0f);
  float* col = column.data() + kPad;
  std::vector<float> best(ow);
  for (int y = 0; y < height; ++y) {
    // In the order the plain loop reads them (row() may make rows lazily).
    const float* rows[9] = {};
    for (int d = -1; d <= 1; ++d)
      if (y + d >= 0 && y + d < height) rows[4 + d] = row(y + d);
    for (int half = 2; half <= kPad; ++half) {
      if (y - half >= 0) rows[4 - half] = row(y - half);
      if (y + half < height) rows[4 + half] = row(y + half);
    }
    estimate_row(rows, col, best.data(), iw, ow);
    emit(y, static_cast<const float*>(best.data()));
  }
}

// In place on rows `stride` apart: output row y overwrites input row y, so
// the rows above it that later windows still read are kept in a ring (row r
// in slot r % ring_rows).
void in_place_strided(float* data, std::size_t stride, int in_width, int height, int out_width) {
  constexpr int ring_rows = kPad + 1;
  const auto iw = static_cast<std::size_t>(in_width);
  const auto ow = static_cast<std::size_t>(out_width);
  std::vector<float> ring(ring_rows * iw);
  int done = 0;  // rows already overwritten (emit runs in order)
  min_local_mean_rows(
      in_width, height, out_width,
      [&](int r) -> const float* {
        if (r < done) return ring.data() + static_cast<std::size_t>(r % ring_rows) * iw;
        return data + static_cast<std::size_t>(r) * stride;
      },
      [&](int y, const float* best) {
        float* target = data + static_cast<std::size_t>(y) * stride;
        std::copy(target, target + iw, ring.data() + static_cast<std::size_t>(y % ring_rows) * iw);
        std::copy(best, best + ow, target);
        done = y + 1;
      });
}

}  // namespace

void min_local_mean(std::span<const float> energy, int in_width, int height, int out_width, std::span<float> out) {
  if (in_width < 1 || height < 1 || out_width < 1 || out_width > in_width ||
      energy.size() != static_cast<std::size_t>(in_width) * static_cast<std::size_t>(height) ||
      out.size() != static_cast<std::size_t>(out_width) * static_cast<std::size_t>(height))
    throw std::invalid_argument("prnu min_local_mean: inconsistent sizes");
  const bool in_place = static_cast<const void*>(out.data()) == static_cast<const void*>(energy.data());
  if (in_place) {
    if (out_width != in_width) throw std::invalid_argument("prnu min_local_mean: in place needs out_width == in_width");
    in_place_strided(out.data(), static_cast<std::size_t>(in_width), in_width, height, out_width);
    return;
  }
  const auto iw = static_cast<std::size_t>(in_width);
  const auto ow = static_cast<std::size_t>(out_width);
  min_local_mean_rows(
      in_width, height, out_width, [&](int r) { return energy.data() + static_cast<std::size_t>(r) * iw; },
      [&](int y, const float* best) { std::copy(best, best + ow, out.data() + static_cast<std::size_t>(y) * ow); });
}

void min_local_mean_in_place(std::span<float> data, int stride, int height, int out_width) {
  if (stride < 1 || height < 1 || out_width < 1 || out_width > stride ||
      data.size() != static_cast<std::size_t>(stride) * static_cast<std::size_t>(height))
    throw std::invalid_argument("prnu min_local_mean_in_place: inconsistent sizes");
  in_place_strided(data.data(), static_cast<std::size_t>(stride), stride, height, out_width);
}

void wiener_noise_part_in_place(std::span<float> band, int width, int height, float noise_var) {
  if (width < 1 || height < 1 || band.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height))
    throw std::invalid_argument("prnu wiener_noise_part: inconsistent sizes");
  constexpr int ring_rows = 2 * kPad + 1;
  const auto w = static_cast<std::size_t>(width);
  std::vector<float> squares(ring_rows * w);
  int squared = 0;  // rows squared so far (in order)
  float* data = band.data();
  min_local_mean_rows(
      width, height, width,
      [&](int r) -> const float* {
        float* slot = squares.data() + static_cast<std::size_t>(r % ring_rows) * w;
        for (; squared <= r; ++squared) {
          const float* src = data + static_cast<std::size_t>(squared) * w;
          float* dst = squares.data() + static_cast<std::size_t>(squared % ring_rows) * w;
          for (std::size_t x = 0; x < w; ++x)
            dst[x] = src[x] * src[x];
        }
        return slot;
      },
      [&](int y, const float* best) {
        // Row y is read again only through its square (already taken).
        float* c = data + static_cast<std::size_t>(y) * w;
        for (std::size_t x = 0; x < w; ++x) {
          const float v = std::max(0.0f, best[x] - noise_var);
          c[x] = c[x] * noise_var / (v + noise_var);
        }
      });
}

}  // namespace flowd::prnu

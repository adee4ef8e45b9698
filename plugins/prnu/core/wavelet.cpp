#include "wavelet.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "filters.hpp"
#include "local_energy.hpp"
#include "simd.hpp"

namespace flowd::prnu {

namespace {

constexpr int kTaps = Db4::taps;

// The filters in float: the transform runs in float, as pywt's does on the
// float32 planes prnu-python gives it.
struct FloatBank {
  std::array<float, 8> dec_lo{}, dec_hi{}, rec_lo{}, rec_hi{};
  FloatBank() {
    for (std::size_t i = 0; i < 8; ++i) {
      dec_lo[i] = static_cast<float>(Db4::dec_lo[i]);
      dec_hi[i] = static_cast<float>(Db4::dec_hi[i]);
      rec_lo[i] = static_cast<float>(Db4::rec_lo[i]);
      rec_hi[i] = static_cast<float>(Db4::rec_hi[i]);
    }
  }
};
const FloatBank& bank() {
  static const FloatBank b;
  return b;
}

// PyWavelets' 'symmetric' extension: half-sample mirror, repeated for
// indices more than one length away (period 2n).
int mirror(int k, int n) noexcept {
  const int period = 2 * n;
  int m = k % period;
  if (m < 0) m += period;
  return m < n ? m : period - 1 - m;
}

// pywt's downsampling convolution out[o] = sum_j f[j] x[2o + 1 - j] along a
// row, on the mirrored extension split into its even and odd samples, so
// that every tap is a unit-stride load and the loop over o vectorises. The
// sum runs over j in order, as the plain loop's.
struct RowScratch {
  std::vector<float> extended, even, odd;
};

FLOWD_PRNU_CLONES
void analyse_row(const float* x, int n, float* __restrict approx, float* __restrict detail, RowScratch& s) {
  const auto& f = bank();
  const int na = dwt_coeff_length(n);
  constexpr int pad = kTaps - 1;
  const int total = n + 2 * pad;
  s.extended.resize(static_cast<std::size_t>(total) + 1);
  float* e = s.extended.data();
  for (int t = 0; t < pad; ++t) {
    e[t] = x[mirror(t - pad, n)];
    e[pad + n + t] = x[mirror(n + t, n)];
  }
  std::copy(x, x + n, e + pad);
  e[total] = 0.0f;
  const int half = (total + 1) / 2;
  s.even.resize(static_cast<std::size_t>(half));
  s.odd.resize(static_cast<std::size_t>(half));
  float* ev = s.even.data();
  float* od = s.odd.data();
  for (int k = 0; k < half; ++k) {
    ev[k] = e[2 * k];
    od[k] = e[2 * k + 1];
  }
  // Tap j reads extended[2o + 8 - j]: even[o + 4 - j/2] for even j,
  // odd[o + 3 - (j-1)/2] for odd j.
  const float l0 = f.dec_lo[0], l1 = f.dec_lo[1], l2 = f.dec_lo[2], l3 = f.dec_lo[3], l4 = f.dec_lo[4],
              l5 = f.dec_lo[5], l6 = f.dec_lo[6], l7 = f.dec_lo[7];
  const float h0 = f.dec_hi[0], h1 = f.dec_hi[1], h2 = f.dec_hi[2], h3 = f.dec_hi[3], h4 = f.dec_hi[4],
              h5 = f.dec_hi[5], h6 = f.dec_hi[6], h7 = f.dec_hi[7];
  for (int o = 0; o < na; ++o) {
    const float e4 = ev[o + 4], e3 = ev[o + 3], e2 = ev[o + 2], e1 = ev[o + 1];
    const float o3 = od[o + 3], o2 = od[o + 2], o1 = od[o + 1], o0 = od[o];
    approx[o] = l0 * e4 + l1 * o3 + l2 * e3 + l3 * o2 + l4 * e2 + l5 * o1 + l6 * e1 + l7 * o0;
    detail[o] = h0 * e4 + h1 * o3 + h2 * e3 + h3 * o2 + h4 * e2 + h5 * o1 + h6 * e1 + h7 * o0;
  }
}

// One output row of the column analysis: a[c] = sum_j lo[j] rows[j][c] (and
// d with hi), j in order, over the eight input rows 2o + 1 - j (mirrored).
FLOWD_PRNU_CLONES
void analyse_column_row(const float* const rows[8], std::size_t w, float* __restrict a, float* __restrict d) {
  const auto& f = bank();
  const float* __restrict r0 = rows[0];
  const float* __restrict r1 = rows[1];
  const float* __restrict r2 = rows[2];
  const float* __restrict r3 = rows[3];
  const float* __restrict r4 = rows[4];
  const float* __restrict r5 = rows[5];
  const float* __restrict r6 = rows[6];
  const float* __restrict r7 = rows[7];
  const float l0 = f.dec_lo[0], l1 = f.dec_lo[1], l2 = f.dec_lo[2], l3 = f.dec_lo[3], l4 = f.dec_lo[4],
              l5 = f.dec_lo[5], l6 = f.dec_lo[6], l7 = f.dec_lo[7];
  const float h0 = f.dec_hi[0], h1 = f.dec_hi[1], h2 = f.dec_hi[2], h3 = f.dec_hi[3], h4 = f.dec_hi[4],
              h5 = f.dec_hi[5], h6 = f.dec_hi[6], h7 = f.dec_hi[7];
  for (std::size_t c = 0; c < w; ++c) {
    a[c] = l0 * r0[c] + l1 * r1[c] + l2 * r2[c] + l3 * r3[c] + l4 * r4[c] + l5 * r5[c] + l6 * r6[c] + l7 * r7[c];
    d[c] = h0 * r0[c] + h1 * r1[c] + h2 * r2[c] + h3 * r3[c] + h4 * r4[c] + h5 * r5[c] + h6 * r6[c] + h7 * r7[c];
  }
}

// pywt's upsampling "valid" convolution, both bands at once:
// out[2m] = sum_t a[m+t] rec_lo[6-2t] + d[m+t] rec_hi[6-2t], out[2m+1] the
// same with taps 7-2t, for the first `count` of the 2*na - 6 outputs.
FLOWD_PRNU_CLONES
void synthesise_row(const float* __restrict a, const float* __restrict d, float* __restrict out, int count) {
  const auto& f = bank();
  const float le0 = f.rec_lo[6], le1 = f.rec_lo[4], le2 = f.rec_lo[2], le3 = f.rec_lo[0];
  const float he0 = f.rec_hi[6], he1 = f.rec_hi[4], he2 = f.rec_hi[2], he3 = f.rec_hi[0];
  const float lo0 = f.rec_lo[7], lo1 = f.rec_lo[5], lo2 = f.rec_lo[3], lo3 = f.rec_lo[1];
  const float ho0 = f.rec_hi[7], ho1 = f.rec_hi[5], ho2 = f.rec_hi[3], ho3 = f.rec_hi[1];
  const int pairs = count / 2;
  for (int m = 0; m < pairs; ++m) {
    const float a0 = a[m], a1 = a[m + 1], a2 = a[m + 2], a3 = a[m + 3];
    const float d0 = d[m], d1 = d[m + 1], d2 = d[m + 2], d3 = d[m + 3];
    out[2 * m] = (a0 * le0 + d0 * he0) + (a1 * le1 + d1 * he1) + (a2 * le2 + d2 * he2) + (a3 * le3 + d3 * he3);
    out[2 * m + 1] = (a0 * lo0 + d0 * ho0) + (a1 * lo1 + d1 * ho1) + (a2 * lo2 + d2 * ho2) + (a3 * lo3 + d3 * ho3);
  }
  if (count % 2 == 1) {
    const int m = pairs;
    out[2 * m] = (a[m] * le0 + d[m] * he0) + (a[m + 1] * le1 + d[m + 1] * he1) + (a[m + 2] * le2 + d[m + 2] * he2) +
                 (a[m + 3] * le3 + d[m + 3] * he3);
  }
}

// One output row (phase p) of the column synthesis from rows m..m+3 of the
// row-synthesised low and high parts.
FLOWD_PRNU_CLONES
void synthesise_column_row(const float* const low[4], const float* const high[4], int phase, std::size_t w,
                           float* __restrict dst) {
  const auto& f = bank();
  float lo[4], hi[4];
  for (int t = 0; t < 4; ++t) {
    lo[t] = f.rec_lo[static_cast<std::size_t>(6 + phase - 2 * t)];
    hi[t] = f.rec_hi[static_cast<std::size_t>(6 + phase - 2 * t)];
  }
  const float* __restrict a0 = low[0];
  const float* __restrict a1 = low[1];
  const float* __restrict a2 = low[2];
  const float* __restrict a3 = low[3];
  const float* __restrict d0 = high[0];
  const float* __restrict d1 = high[1];
  const float* __restrict d2 = high[2];
  const float* __restrict d3 = high[3];
  for (std::size_t c = 0; c < w; ++c)
    dst[c] = (lo[0] * a0[c] + hi[0] * d0[c]) + (lo[1] * a1[c] + hi[1] * d1[c]) + (lo[2] * a2[c] + hi[2] * d2[c]) +
             (lo[3] * a3[c] + hi[3] * d3[c]);
}

// One 2-D level, pywt.dwt2's order: along axis 0 (down the columns), then
// along axis 1 (the rows) of both halves, an output row at a time: row(r)
// gives input row r (w samples; called for at most eight distinct rows
// around 2o, in increasing o), no column-filtered plane is kept.
struct Level {
  Image approx;                 // aa
  std::array<Image, 3> detail;  // da (H), ad (V), dd (D)
};

// An image of the given size: `im` itself when it has it (contents kept,
// to be overwritten), a new one otherwise.
void reshape(Image& im, int w, int h) {
  if (im.width != w || im.height != h || im.channels != 1) im = Image(w, h, 1);
}

template <class Row>
void analyse_2d(int w, int h, Row&& row, Level& out) {
  const int ha = dwt_coeff_length(h);
  const int wa = dwt_coeff_length(w);
  const auto uw = static_cast<std::size_t>(w);
  reshape(out.approx, wa, ha);
  for (Image& band : out.detail)
    reshape(band, wa, ha);
  std::vector<float> low(uw), high(uw);
  RowScratch scratch;
  for (int o = 0; o < ha; ++o) {
    const float* rows[8];
    for (int j = 0; j < kTaps; ++j)
      rows[j] = row(mirror(2 * o + 1 - j, h));
    analyse_column_row(rows, uw, low.data(), high.data());
    const std::size_t out_row = static_cast<std::size_t>(o) * static_cast<std::size_t>(wa);
    analyse_row(low.data(), w, out.approx.data.data() + out_row, out.detail[1].data.data() + out_row, scratch);
    analyse_row(high.data(), w, out.detail[0].data.data() + out_row, out.detail[2].data.data() + out_row, scratch);
  }
}

template <class Row>
Level analyse_2d(int w, int h, Row&& row) {
  Level out;
  analyse_2d(w, h, row, out);
  return out;
}

Level analyse_2d(const ImageView& x) {
  const auto uw = static_cast<std::size_t>(x.width);
  return analyse_2d(x.width, x.height, [&](int r) { return x.data.data() + static_cast<std::size_t>(r) * uw; });
}

void analyse_2d(const ImageView& x, Level& out) {
  const auto uw = static_cast<std::size_t>(x.width);
  analyse_2d(
      x.width, x.height, [&](int r) { return x.data.data() + static_cast<std::size_t>(r) * uw; }, out);
}

// The inverse of one 2-D level (pywt.idwt2: axis 1 first, then axis 0), cut
// to out_w x out_h (at most 2 * band size - 6 each way), an output row at a
// time to emit(i, row): the row-synthesised rows m..m+3 that output rows 2m
// and 2m+1 need are kept in a ring of four.
template <class Emit>
void synthesise_2d(const ImageView& approx, const std::array<Image, 3>& detail, int out_w, int out_h, Emit&& emit) {
  const int wa = approx.width;
  const int ha = approx.height;
  for (const Image& band : detail)
    if (band.width != wa || band.height != ha) throw std::invalid_argument("prnu idwt2: bands of different sizes");
  if (wa < 4 || ha < 4 || out_w > 2 * wa - 6 || out_h > 2 * ha - 6)
    throw std::invalid_argument("prnu idwt2: " + std::to_string(wa) + "x" + std::to_string(ha) + " bands cannot give " +
                                std::to_string(out_w) + "x" + std::to_string(out_h));
  const auto uow = static_cast<std::size_t>(out_w);
  std::vector<float> low(4 * uow), high(4 * uow), out(uow);
  int made = 0;  // row-synthesised rows so far
  auto make_to = [&](int m) {
    for (; made <= m; ++made) {
      const std::size_t in_row = static_cast<std::size_t>(made) * static_cast<std::size_t>(wa);
      const std::size_t slot = static_cast<std::size_t>(made % 4) * uow;
      synthesise_row(approx.data.data() + in_row, detail[1].data.data() + in_row, low.data() + slot, out_w);
      synthesise_row(detail[0].data.data() + in_row, detail[2].data.data() + in_row, high.data() + slot, out_w);
    }
  };
  for (int i = 0; i < out_h; ++i) {
    const int m = i / 2;
    make_to(m + 3);
    const float* lo[4];
    const float* hi[4];
    for (int t = 0; t < 4; ++t) {
      lo[t] = low.data() + static_cast<std::size_t>((m + t) % 4) * uow;
      hi[t] = high.data() + static_cast<std::size_t>((m + t) % 4) * uow;
    }
    synthesise_column_row(lo, hi, i & 1, uow, out.data());
    emit(i, static_cast<const float*>(out.data()));
  }
}

Image synthesise_2d(const ImageView& approx, const std::array<Image, 3>& detail, int out_w, int out_h) {
  Image out(out_w, out_h);
  const auto uw = static_cast<std::size_t>(out_w);
  synthesise_2d(approx, detail, out_w, out_h, [&](int i, const float* row) {
    std::copy(row, row + uw, out.data.data() + static_cast<std::size_t>(i) * uw);
  });
  return out;
}

// The wavelet residual of a plane whose rows come from row(r) (in the
// order analyse_2d asks), each output row to emit(y, row): the analysis
// keeps the bands only, the Wiener rule runs on each band in place and the
// last synthesis streams its rows out.
// The bands and reconstructions of wavelet_noise_rows, kept between the
// channels of one image so that their memory is reused.
struct WaveletWork {
  std::vector<Level> levels;  // finest first
  std::vector<Image> recon;   // reconstructions, coarsest first
};

template <class Row, class Emit>
void wavelet_noise_rows(int w, int h, Row&& row, float sigma, int levels, Emit&& emit, WaveletWork& work) {
  const int used = wavelet_levels(w, h, levels);
  if (used == 0) {
    const std::vector<float> zeros(static_cast<std::size_t>(w), 0.0f);
    for (int y = 0; y < h; ++y)
      emit(y, zeros.data());
    return;
  }
  const auto n = static_cast<std::size_t>(used);
  work.levels.resize(n);
  analyse_2d(w, h, row, work.levels[0]);
  for (std::size_t l = 1; l < n; ++l)
    analyse_2d(work.levels[l - 1].approx, work.levels[l]);
  const float noise_var = sigma * sigma;
  for (Level& level : work.levels)
    for (Image& band : level.detail)
      wiener_noise_part_in_place(band.data, band.width, band.height, noise_var);
  Image& coarsest = work.levels[n - 1].approx;
  std::fill(coarsest.data.begin(), coarsest.data.end(), 0.0f);
  // Coarsest first; a reconstruction one sample too long for the next
  // level's bands is trimmed (as pywt does), the last is cut to the plane.
  work.recon.resize(n);
  const Image* approx = &coarsest;
  for (std::size_t i = n; i-- > 1;) {
    const Image& next = work.levels[i - 1].detail[0];
    Image& out = work.recon[i];
    reshape(out, next.width, next.height);
    const auto uw = static_cast<std::size_t>(out.width);
    synthesise_2d(*approx, work.levels[i].detail, out.width, out.height, [&](int y, const float* r) {
      std::copy(r, r + uw, out.data.data() + static_cast<std::size_t>(y) * uw);
    });
    approx = &out;
  }
  synthesise_2d(*approx, work.levels[0].detail, w, h, emit);
}

template <class Row, class Emit>
void wavelet_noise_rows(int w, int h, Row&& row, float sigma, int levels, Emit&& emit) {
  WaveletWork work;
  wavelet_noise_rows(w, h, row, sigma, levels, emit, work);
}

// Rows of channel c of an interleaved image, de-interleaved on demand into
// a small cache (analyse_2d asks for eight rows around 2o, so a row is made
// once away from the borders).
class ChannelRows {
public:
  ChannelRows(const ImageView& image, int channel)
      : image_(image),
        channel_(channel),
        width_(static_cast<std::size_t>(image.width)),
        store_(kSlots * width_),
        tag_(kSlots, -1) {}
  const float* operator()(int r) {
    const auto slot = static_cast<std::size_t>(r % kSlots);
    float* dst = store_.data() + slot * width_;
    if (tag_[slot] != r) {
      const auto ch = static_cast<std::size_t>(image_.channels);
      const float* src =
          image_.data.data() + static_cast<std::size_t>(r) * width_ * ch + static_cast<std::size_t>(channel_);
      if (ch == 3)  // a constant stride: vectorised
        for (std::size_t x = 0; x < width_; ++x)
          dst[x] = src[x * 3];
      else
        for (std::size_t x = 0; x < width_; ++x)
          dst[x] = src[x * ch];
      tag_[slot] = r;
    }
    return dst;
  }

private:
  static constexpr int kSlots = 16;
  const ImageView& image_;
  int channel_;
  std::size_t width_;
  std::vector<float> store_;
  std::vector<int> tag_;
};

}  // namespace

int dwt_max_level(int length, int filter_length) {
  if (filter_length < 2 || length < 1) return 0;
  // floor(log2(length / (filter_length - 1))) without floating point.
  const long long unit = filter_length - 1;
  int level = 0;
  while ((unit << (level + 1)) <= length)
    ++level;
  return level;
}

void dwt_db4(std::span<const float> x, std::span<float> approx, std::span<float> detail) {
  const int n = static_cast<int>(x.size());
  const auto na = static_cast<std::size_t>(dwt_coeff_length(n));
  if (n < 1 || approx.size() != na || detail.size() != na) throw std::invalid_argument("prnu dwt_db4: sizes");
  RowScratch scratch;
  analyse_row(x.data(), n, approx.data(), detail.data(), scratch);
}

void idwt_db4(std::span<const float> approx, std::span<const float> detail, std::span<float> out) {
  const std::size_t na = approx.size();
  if (na < 4 || detail.size() != na || out.size() != 2 * na - 6) throw std::invalid_argument("prnu idwt_db4: sizes");
  synthesise_row(approx.data(), detail.data(), out.data(), static_cast<int>(out.size()));
}

WaveletBands wavedec2_db4(const ImageView& plane, int levels) {
  require_grey(plane, "wavedec2_db4");
  if (levels < 0) throw std::invalid_argument("prnu wavedec2_db4: negative level");
  WaveletBands out;
  out.width = plane.width;
  out.height = plane.height;
  out.approx = Image::copy_of(plane);
  for (int l = 0; l < levels; ++l) {
    Level level = analyse_2d(out.approx);
    out.approx = std::move(level.approx);
    out.details.insert(out.details.begin(), std::move(level.detail));
  }
  return out;
}

Image waverec2_db4(const WaveletBands& bands) {
  Image a = bands.approx;
  for (std::size_t i = 0; i < bands.details.size(); ++i) {
    const auto& d = bands.details[i];
    // pywt trims a reconstruction one longer than the next bands; the last
    // one is cut to the plane the way prnu-python cuts its residual.
    const bool last = i + 1 == bands.details.size();
    const int out_w = last ? bands.width : bands.details[i + 1][0].width;
    const int out_h = last ? bands.height : bands.details[i + 1][0].height;
    a = synthesise_2d(a, d, out_w, out_h);
  }
  if (a.width != bands.width || a.height != bands.height)
    throw std::invalid_argument("prnu waverec2_db4: bands do not match the plane size");
  return a;
}

int wavelet_levels(int width, int height, int levels) {
  return std::max(0, std::min(levels, dwt_max_level(std::min(width, height))));
}

Image wiener_noise_part(const ImageView& band, float noise_var) {
  require_grey(band, "wiener_noise_part");
  Image out = Image::copy_of(band);
  wiener_noise_part_in_place(out.data, out.width, out.height, noise_var);
  return out;
}

Image wavelet_noise(const ImageView& plane, float sigma, int levels) {
  require_grey(plane, "wavelet_noise");
  Image out(plane.width, plane.height, 1);
  const auto uw = static_cast<std::size_t>(plane.width);
  wavelet_noise_rows(
      plane.width, plane.height, [&](int r) { return plane.data.data() + static_cast<std::size_t>(r) * uw; }, sigma,
      levels,
      [&](int y, const float* row) { std::copy(row, row + uw, out.data.data() + static_cast<std::size_t>(y) * uw); });
  return out;
}

Image wavelet_noise_channels(const ImageView& image, float sigma, int levels) {
  if (image.channels == 1) return wavelet_noise(image, sigma, levels);
  const int ch = image.channels;
  const auto uch = static_cast<std::size_t>(ch);
  const auto uw = static_cast<std::size_t>(image.width);
  Image out(image.width, image.height, ch);
  WaveletWork work;
  for (int c = 0; c < ch; ++c) {
    ChannelRows rows(image, c);
    wavelet_noise_rows(
        image.width, image.height, rows, sigma, levels,
        [&](int y, const float* row) {
          float* dst = out.data.data() + static_cast<std::size_t>(y) * uw * uch + static_cast<std::size_t>(c);
          for (std::size_t x = 0; x < uw; ++x)
            dst[x * uch] = row[x];
        },
        work);
  }
  return out;
}

Image residual_wavelet(const ImageView& rgb, FftPlans& plans, float sigma, int levels) {
  // grey_matlab(wavelet_noise_channels(rgb)) with each channel's residual
  // added to the grey as its rows come out (the sum in grey_matlab's
  // order, so the same bits), then the steps of the composition, the
  // Wiener filter writing over the grey.
  Image grey;
  if (rgb.channels == 1) {
    grey = wavelet_noise(rgb, sigma, levels);
  } else if (rgb.channels == 3) {
    grey = Image(rgb.width, rgb.height, 1);
    const auto uw = static_cast<std::size_t>(rgb.width);
    const float weight[3] = {0.29893602f, 0.58704307f, 0.11402090f};
    WaveletWork work;
    for (int c = 0; c < 3; ++c) {
      ChannelRows rows(rgb, c);
      const float wc = weight[c];
      wavelet_noise_rows(
          rgb.width, rgb.height, rows, sigma, levels,
          [&](int y, const float* row) {
            float* dst = grey.data.data() + static_cast<std::size_t>(y) * uw;
            if (c == 0)
              for (std::size_t x = 0; x < uw; ++x)
                dst[x] = wc * row[x];
            else
              for (std::size_t x = 0; x < uw; ++x)
                dst[x] = dst[x] + wc * row[x];
          },
          work);
    }
  } else {
    // What the composition does: the residual, then grey_matlab's refusal.
    return grey_matlab(wavelet_noise_channels(rgb, sigma, levels));
  }
  zero_mean_total_in_place(grey);
  const float noise_var = sample_variance(grey);
  if (!(noise_var > 0.0f)) return Image(grey.width, grey.height, 1);
  const auto uw = static_cast<std::size_t>(grey.width);
  detail::wiener_dft_into(
      grey.width, grey.height,
      [&](int y, float* row) {
        const float* src = grey.data.data() + static_cast<std::size_t>(y) * uw;
        std::copy(src, src + uw, row);
      },
      [noise_var] { return noise_var; }, grey.data.data(), plans);
  return grey;
}

}  // namespace flowd::prnu

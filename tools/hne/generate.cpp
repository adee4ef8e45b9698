#include "hne/generate.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "neuropil.hpp"
#include "random.hpp"

namespace flowd::hne {

namespace {

using namespace detail;

constexpr double ln10 = 2.302585092994046;
constexpr int max_side = 65536;
constexpr double max_pixels = 1024.0 * 1024.0 * 1024.0;

// Per-image staining and acquisition: real slides differ in stain batch,
// staining time and scanner, so each image draws its own.
struct Look {
  std::array<double, 3> h, e, hb;  // unit optical-density vectors (R, G, B)
  double h_gain, e_gain;           // stain strength
  std::array<double, 3> white;     // glass brightness per channel (0..255)
  double cell_bias;                // shifts the field between stroma-rich and cell-rich
  double gamma = 1.0;              // scanner tone curve: out = 255 (in / 255)^gamma
};

std::array<double, 3> unit(std::array<double, 3> v) {
  const double n = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  return {v[0] / n, v[1] / n, v[2] / n};
}

// centre + j * spread * N, clamped to the range [lo, hi] widened j times
// about the centre (floored at `floor`); j = 1 is exactly today's range.
double jittered(double centre, double spread, double lo, double hi, double j, double n, double floor = 0.01) {
  if (j != 1.0) {
    lo = std::max(floor, centre - (centre - lo) * j);
    hi = centre + (hi - centre) * j;
  }
  return std::clamp(centre + j * spread * n, lo, hi);
}

// `rng` is the layout's stream (its draws are today's, scaled by
// stain_jitter); `scan` a separate stream for the scanner, so scanner = 0
// leaves every other draw as it was.
Look draw_look(const Params& p, Rng& rng, Rng& scan) {
  Look k{};
  const double j = p.stain_jitter;
  // Around Ruifrok & Johnston's vectors, with the spread seen between labs.
  const double h0 = rng.normal(), h1 = rng.normal(), h2 = rng.normal();
  k.h = unit({jittered(0.65, 0.05, 0.5, 0.8, j, h0), jittered(0.70, 0.04, 0.6, 0.8, j, h1),
              jittered(0.29, 0.06, 0.15, 0.45, j, h2)});
  // Eosin's blue share is skewed upwards: vectors estimated from real slides
  // (Macenko) absorb more blue than Ruifrok's, which look magenta.
  const double e0 = rng.normal(), e1 = rng.normal(), e2 = std::abs(rng.normal());
  k.e = unit({jittered(0.07, 0.04, 0.02, 0.2, j, e0, 0.005), jittered(0.99, 0.02, 0.9, 1.0, j, e1),
              jittered(0.11, 0.15, 0.05, 0.45, j, e2)});
  // Oxyhaemoglobin absorbs blue (Soret band) and green, hardly red.
  k.hb = unit({0.10, 0.60, 0.79});
  k.h_gain = p.stain * std::exp(0.15 * j * rng.normal());
  k.e_gain = p.stain * std::exp(0.20 * j * rng.normal());
  const double level = jittered(0.955, 0.015, 0.9, 0.995, j, rng.normal());
  for (auto& w : k.white)
    w = 255.0 * std::min(1.0, jittered(level, 0.008, 0.88, 1.0, j, rng.normal()));
  k.cell_bias = rng.uniform(-0.6, 1.2);
  if (p.scanner > 0.0) {
    // Scanners differ in exposure, white balance and tone curve.
    const double bright = std::exp(0.05 * p.scanner * scan.normal());
    for (auto& w : k.white)
      w = std::min(255.0, w * bright * std::exp(0.03 * p.scanner * scan.normal()));
    k.gamma = std::clamp(std::exp(0.12 * p.scanner * scan.normal()), 0.6, 1.6);
  }
  return k;
}

struct Nucleus {
  double cx = 0, cy = 0;  // centre, pixels (pixel (x, y) covers [x, x+1) x [y, y+1))
  double a = 1, b = 1;    // semi-axes in pixels, a along (ct, st)
  double ct = 1, st = 0;
  double bend = 0;                   // banana shape of spindle nuclei
  std::array<double, 4> hc{}, hs{};  // outline harmonics 2..5
  double h = 0;                      // haematoxylin concentration
  double tex = 0;                    // chromatin texture amplitude (relative)
  double rim = 0;                    // extra concentration at the nuclear membrane
  double e_keep = 0.5;               // share of the cytoplasmic eosin left inside
  double halo = 0;                   // perinuclear clearing width in pixels
  int ox = 0, oy = 0;                // texture offsets
  int nucleoli = 0;
  std::array<double, 2> nx{}, ny{}, nr{};
  double extent = 1;     // no part of the outline is farther from the centre
  double skip2 = 1e300;  // squared normalised radius beyond which probe() need not look
  Kind kind = Kind::tumour;
  bool pale = false;  // vesicular
  int layer = 0;      // nuclei on a higher layer lie in front and own shared pixels
  int front_of = -1;  // index of the nucleus this one lies over
};

// Radius of the (a, b) ellipse oriented (ct, st) in the direction (dx, dy).
double radius_towards(double a, double b, double ct, double st, double dx, double dy) {
  const double u = dx * ct + dy * st, v = dy * ct - dx * st;
  return 1.0 / std::sqrt((u * u) / (a * a) + (v * v) / (b * b));
}

struct Probe {
  double q;     // distance from the centre relative to the outline: 0 centre, 1 outline
  double dist;  // pixels inside the outline (negative outside)
};

Probe probe(const Nucleus& k, double dx, double dy) {
  const double u = (dx * k.ct + dy * k.st) / k.a;
  double v = (dy * k.ct - dx * k.st) / k.b;
  v -= k.bend * (u * u - 0.35);
  const double r2 = u * u + v * v;
  // Beyond the largest outline (1.3) plus the halo: far outside, so the
  // harmonics need not be summed.
  if (r2 > k.skip2) return {2.0, -1e9};
  const double r = std::sqrt(r2);
  double bound = 1.0, scale = k.b;
  if (r > 1e-9) {
    const double c1 = u / r, s1 = v / r;
    double ck = c1, sk = s1;
    for (std::size_t i = 0; i < 4; ++i) {
      const double c = ck * c1 - sk * s1, s = sk * c1 + ck * s1;
      ck = c;
      sk = s;
      bound += k.hc[i] * ck + k.hs[i] * sk;
    }
    scale = std::sqrt(k.a * k.a * c1 * c1 + k.b * k.b * s1 * s1);
  }
  return {r / bound, (bound - r) * scale};
}

struct Rbc {
  double cx, cy, r, squash, ct, st, e, hb;
};

// A uniform grid of body centres for overlap tests. Cells are as wide as
// the largest body, so candidates lie in the 3x3 block around a point.
class Grid {
public:
  Grid(int width, int height, double cell, double margin)
      : cell_(cell),
        margin_(margin),
        cols_(static_cast<int>((width + 2 * margin) / cell) + 1),
        rows_(static_cast<int>((height + 2 * margin) / cell) + 1),
        cells_(static_cast<std::size_t>(cols_) * static_cast<std::size_t>(rows_)) {}

  void add(double x, double y, int id) { cells_[index(cell_of(x), cell_of_y(y))].push_back(id); }

  template <class F>
  bool all_near(double x, double y, F&& ok) const {
    const int cx = cell_of(x), cy = cell_of_y(y);
    for (int j = std::max(0, cy - 1); j <= std::min(rows_ - 1, cy + 1); ++j)
      for (int i = std::max(0, cx - 1); i <= std::min(cols_ - 1, cx + 1); ++i)
        for (int id : cells_[index(i, j)])
          if (!ok(id)) return false;
    return true;
  }

private:
  int cell_of(double x) const { return std::clamp(static_cast<int>((x + margin_) / cell_), 0, cols_ - 1); }
  int cell_of_y(double y) const { return std::clamp(static_cast<int>((y + margin_) / cell_), 0, rows_ - 1); }
  std::size_t index(int i, int j) const {
    return static_cast<std::size_t>(j) * static_cast<std::size_t>(cols_) + static_cast<std::size_t>(i);
  }
  double cell_, margin_;
  int cols_, rows_;
  std::vector<std::vector<int>> cells_;
};

// Body shared by nuclei and red cells in the overlap test: an ellipse.
struct Body {
  double cx, cy, a, b, ct, st;
  bool rbc;
};

// Centre distance over the sum of the two radii along the joining line:
// 1 = touching, smaller = overlapping.
double separation(const Body& p, const Body& q) {
  const double dx = q.cx - p.cx, dy = q.cy - p.cy;
  const double d = std::sqrt(dx * dx + dy * dy);
  if (d < 1e-9) return 0.0;
  const double ux = dx / d, uy = dy / d;
  return d / (radius_towards(p.a, p.b, p.ct, p.st, ux, uy) + radius_towards(q.a, q.b, q.ct, q.st, ux, uy));
}

struct Scene {
  const Params& p;
  int w, h;
  double px_per_um;
  Rng& rng;
  Rng& side;  // draws that only parameters off by default need, so the defaults' stream stays as it was
  Look look;
  Field tissue_f, cell_f, theta_f, stain_h, stain_e;
  double tissue_threshold = 0;
  Texture fine, coarse, gran1, gran2;

  Scene(const Params& params, Rng& r, Rng& side_rng, Rng& scan)
      : p(params),
        w(params.width),
        h(params.height),
        px_per_um(1.0 / params.mpp),
        rng(r),
        side(side_rng),
        look(draw_look(params, r, scan)),
        tissue_f(w, h, 120.0 * px_per_um, r),
        cell_f(w, h, 45.0 * px_per_um, r),
        theta_f(w, h, 40.0 * px_per_um, r),
        stain_h(w, h, 150.0 * px_per_um, r),
        stain_e(w, h, 150.0 * px_per_um, r),
        fine(256, 0.3 * px_per_um, r),
        coarse(256, 0.8 * px_per_um, r),
        gran1(1024, 0.6 * px_per_um, r),
        gran2(512, 1.5 * px_per_um, r) {
    tissue_threshold = glass_threshold();
    const double bias = look.cell_bias;
    cell_f.transform([bias](double f) { return 1.0 / (1.0 + std::exp(-(2.2 * f + bias))); });
  }

  // The tissue-field level below which a `background` share of the image
  // lies, from samples every few microns.
  double glass_threshold() const {
    if (p.background <= 0.0) return -std::numeric_limits<double>::infinity();
    if (p.background >= 1.0) return std::numeric_limits<double>::infinity();
    const int nx = std::clamp(static_cast<int>(w / (4.0 * px_per_um)), 16, 512);
    const int ny = std::clamp(static_cast<int>(h / (4.0 * px_per_um)), 16, 512);
    std::vector<float> v;
    v.reserve(static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny));
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i)
        v.push_back(tissue_f.at((i + 0.5) * w / nx, (j + 0.5) * h / ny));
    const auto k = static_cast<std::size_t>(p.background * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
  }

  // The tissue edge is a few microns wide: the field moves ~1 unit per 120 um.
  double tissue_from(double f) const { return smoothstep((f - tissue_threshold) / 0.05 + 0.5); }
  double tissue_at(double x, double y) const { return tissue_from(tissue_f.at(x, y)); }
  // Cellularity in [0, 1]: the share of the tissue that is epithelium.
  double cell_at(double x, double y) const { return cell_f.at(x, y); }
};

// Nuclei per square micron of tissue: epithelial nests are packed, stroma
// sparse. A 250 um square of average tumour tissue gets ~400 (the range of
// the 40x tiles annotated in MoNuSeg).
constexpr double rate_stroma = 1.0 / 600.0;
constexpr double rate_cellular = 1.0 / 85.0;
double nucleus_rate(double c) { return rate_stroma + c * (rate_cellular - rate_stroma); }

Kind draw_kind(double c, Rng& rng) {
  const double epi = 0.08 + 0.82 * c;
  const double u = rng.uniform();
  if (u < epi) return Kind::tumour;
  return u < epi + (1.0 - epi) * 0.45 ? Kind::lymphocyte : Kind::stromal;
}

Nucleus draw_nucleus(Kind kind, double cx, double cy, double px_per_um, double pale, Rng& rng) {
  Nucleus k;
  k.kind = kind;
  k.cx = cx;
  k.cy = cy;
  double d_um = 8.0, aspect = 1.0, irregular = 0.05;
  switch (kind) {
    case Kind::tumour:
      d_um = std::clamp(8.5 * std::exp(0.18 * rng.normal()), 6.0, 12.0);
      aspect = std::min(2.0, 1.0 + std::abs(0.25 * rng.normal()));
      irregular = rng.uniform(0.3, 1.0);
      break;
    case Kind::lymphocyte:
      d_um = std::clamp(6.0 + 0.5 * rng.normal(), 5.0, 7.5);
      aspect = 1.0 + std::abs(0.08 * rng.normal());
      irregular = 0.25;
      break;
    case Kind::stromal:
      d_um = std::clamp(6.5 + 0.9 * rng.normal(), 5.0, 9.0);
      aspect = rng.uniform(2.5, 4.5);
      irregular = 0.3;
      k.bend = 0.25 * rng.normal();
      break;
  }
  const double r = 0.5 * d_um * px_per_um;  // equivalent-circle radius
  k.a = r * std::sqrt(aspect);
  k.b = r / std::sqrt(aspect);
  std::tie(k.ct, k.st) = rng.direction();
  // Decaying harmonics: lobulation and dents, not noise. Each pair has an
  // amplitude below sqrt(2) * amp, so the outline stays within 0.7 .. 1.3
  // of the ellipse and star-shaped around the centre.
  const std::array<double, 4> amp{0.08, 0.06, 0.04, 0.03};
  for (std::size_t i = 0; i < 4; ++i) {
    k.hc[i] = irregular * amp[i] * rng.uniform(-1.0, 1.0);
    k.hs[i] = irregular * amp[i] * rng.uniform(-1.0, 1.0);
  }
  k.extent = k.a * 1.3 * (1.0 + std::abs(k.bend)) + 1.0;
  k.ox = static_cast<int>(rng.bits() & 0xffff);
  k.oy = static_cast<int>(rng.bits() & 0xffff);
  switch (kind) {
    case Kind::tumour:
      if (rng.chance(pale)) {
        // Vesicular: open chromatin, a stained membrane, nucleoli.
        k.pale = true;
        k.h = rng.uniform(0.25, 0.45);
        k.tex = 0.55;
        k.rim = rng.uniform(0.2, 0.45);
        k.nucleoli = rng.chance(0.7) ? 1 + static_cast<int>(rng.chance(0.3)) : 0;
      } else {
        k.h = rng.uniform(0.45, 0.85);
        k.tex = 0.3;
      }
      k.halo = rng.chance(0.15) ? rng.uniform(0.5, 1.5) * px_per_um : 0.0;
      break;
    case Kind::lymphocyte:
      k.h = rng.uniform(0.8, 1.2);
      k.tex = 0.18;
      break;
    case Kind::stromal:
      k.h = rng.uniform(0.55, 0.9);
      k.tex = 0.25;
      break;
  }
  // Nuclei cut near their pole by the 4 um section are pale: still nuclei
  // to an annotator, but a hard case for thresholds.
  if (rng.chance(0.10)) k.h *= rng.uniform(0.35, 0.6);
  k.e_keep = rng.uniform(0.35, 0.7);
  {
    const double far = 1.3 + (k.halo + 1.0) / k.b;
    k.skip2 = far * far;
  }
  for (int i = 0; i < k.nucleoli; ++i) {
    const auto s = static_cast<std::size_t>(i);
    const double rr = rng.uniform(0.0, 0.45);
    const auto [dx, dy] = rng.direction();
    k.nx[s] = dx * rr * k.b;
    k.ny[s] = dy * rr * k.b;
    k.nr[s] = rng.uniform(0.5, 0.9) * px_per_um;
  }
  return k;
}

Body body_of(const Nucleus& k) { return {k.cx, k.cy, k.a, k.b, k.ct, k.st, false}; }
Body body_of(const Rbc& c) { return {c.cx, c.cy, c.r * c.squash, c.r / c.squash, c.ct, c.st, true}; }

struct Layout {
  std::vector<Nucleus> nuclei;
  std::vector<Rbc> rbcs;
};

Layout place(Scene& s) {
  const Params& p = s.p;
  Rng& rng = s.rng;
  const double um = s.px_per_um;
  const double margin = 6.0 * um;  // nuclei may be cut by the image border
  Grid grid(s.w, s.h, 2.0 * 12.0 * um, margin + 12.0 * um);
  std::vector<Body> bodies;
  Layout out;

  // Expected count from the tissue and cellularity maps, sampled every 8 um.
  const int nx = std::max(1, static_cast<int>(std::ceil(s.w / (8.0 * um))));
  const int ny = std::max(1, static_cast<int>(std::ceil(s.h / (8.0 * um))));
  double expected = 0.0;
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      const double x = (i + 0.5) * s.w / nx, y = (j + 0.5) * s.h / ny;
      expected += s.tissue_at(x, y) * nucleus_rate(s.cell_at(x, y));
    }
  const double area_um2 = static_cast<double>(s.w) * s.h * p.mpp * p.mpp;
  const auto target = static_cast<std::size_t>(std::llround(p.density * expected / (nx * ny) * area_um2));

  auto fits = [&](const Body& b, int anchor, double anchor_need) {
    return grid.all_near(b.cx, b.cy, [&](int id) {
      const Body& o = bodies[static_cast<std::size_t>(id)];
      const double need = id == anchor ? anchor_need : 0.92;
      return separation(b, o) >= need;
    });
  };
  auto keep = [&](const Nucleus& k) {
    const int id = static_cast<int>(bodies.size());
    bodies.push_back(body_of(k));
    grid.add(k.cx, k.cy, id);
    out.nuclei.push_back(k);
  };
  std::vector<int> nucleus_body;  // body id of each nucleus, for cluster anchors
  const std::size_t max_attempts = 30 * target + 1000;
  for (std::size_t attempt = 0; attempt < max_attempts && out.nuclei.size() < target; ++attempt) {
    if (!out.nuclei.empty() && rng.chance(p.cluster)) {
      // Touching neighbour of an existing nucleus, overlapping it a little.
      const auto ai = static_cast<std::size_t>(rng.uniform() * static_cast<double>(out.nuclei.size()));
      const Nucleus& anchor = out.nuclei[std::min(ai, out.nuclei.size() - 1)];
      const auto [dx, dy] = rng.direction();
      const double c = s.cell_at(anchor.cx, anchor.cy);
      const Kind kind = rng.chance(0.8) ? anchor.kind : draw_kind(c, rng);
      Nucleus k = draw_nucleus(kind, 0.0, 0.0, um, p.pale, rng);
      const double ra = radius_towards(anchor.a, anchor.b, anchor.ct, anchor.st, dx, dy);
      const double rk = radius_towards(k.a, k.b, k.ct, k.st, dx, dy);
      const double touch = rng.uniform(0.8, 0.95);
      // Overlap: one nucleus lies over the other in the section's depth,
      // hiding up to about half of it.
      const bool over = p.overlap > 0.0 && s.side.chance(p.overlap);
      const double d = (ra + rk) * (over ? s.side.uniform(0.55, 0.8) : touch);
      k.cx = anchor.cx + dx * d;
      k.cy = anchor.cy + dy * d;
      if (k.cx < -margin || k.cy < -margin || k.cx > s.w + margin || k.cy > s.h + margin) continue;
      if (s.tissue_at(k.cx, k.cy) < 0.5) continue;
      const auto anchor_index = static_cast<std::size_t>(&anchor - out.nuclei.data());
      const int anchor_id = nucleus_body[anchor_index];
      if (!fits(body_of(k), anchor_id, over ? 0.5 : 0.75)) continue;
      if (over) {
        k.layer = anchor.layer + 1;
        k.front_of = static_cast<int>(anchor_index);
      }
      nucleus_body.push_back(static_cast<int>(bodies.size()));
      keep(k);
      continue;
    }
    const double x = rng.uniform(-margin, s.w + margin), y = rng.uniform(-margin, s.h + margin);
    const double c = s.cell_at(x, y);
    if (!rng.chance(s.tissue_at(x, y) * nucleus_rate(c) / rate_cellular)) continue;
    Nucleus k = draw_nucleus(draw_kind(c, rng), x, y, um, p.pale, rng);
    // Packed tissue leaves gaps smaller than a nucleus: nudge a few times
    // before giving the spot up.
    bool placed = false;
    for (int tries = 0; tries < 4 && !placed; ++tries) {
      if (tries > 0) {
        const auto [dx, dy] = rng.direction();
        const double d = rng.uniform(0.3, 1.0) * 2.0 * k.a;
        k.cx = x + dx * d;
        k.cy = y + dy * d;
      }
      placed = fits(body_of(k), -1, 0.92);
    }
    if (!placed) continue;
    nucleus_body.push_back(static_cast<int>(bodies.size()));
    keep(k);
  }

  // Red cells: short runs along capillaries, mostly in stroma, and a few
  // extravasated singles. They avoid nuclei and overlap each other a bit.
  const double area_mm2 = area_um2 * 1e-6;
  auto draw_rbc = [&](double x, double y) {
    Rbc c{};
    c.cx = x;
    c.cy = y;
    c.r = 0.5 * std::clamp(7.2 + 0.4 * rng.normal(), 6.0, 8.5) * um;
    c.squash = 1.0 + std::abs(0.07 * rng.normal());
    std::tie(c.ct, c.st) = rng.direction();
    c.e = rng.uniform(0.28, 0.45);
    c.hb = rng.uniform(0.30, 0.50);
    return c;
  };
  auto try_rbc = [&](const Rbc& c) {
    if (c.cx < -margin || c.cy < -margin || c.cx > s.w + margin || c.cy > s.h + margin) return false;
    if (s.tissue_at(c.cx, c.cy) < 0.5) return false;
    const Body b = body_of(c);
    const bool ok = grid.all_near(b.cx, b.cy, [&](int id) {
      const Body& o = bodies[static_cast<std::size_t>(id)];
      return separation(b, o) >= (o.rbc ? 0.7 : 1.0);
    });
    if (!ok) return false;
    grid.add(c.cx, c.cy, static_cast<int>(bodies.size()));
    bodies.push_back(b);
    out.rbcs.push_back(c);
    return true;
  };
  const auto vessels = static_cast<int>(std::llround(p.rbc * area_mm2 * 60.0 * rng.uniform(0.5, 1.5)));
  for (int v = 0; v < vessels; ++v) {
    double x = 0, y = 0;
    bool found = false;
    for (int tries = 0; tries < 30 && !found; ++tries) {
      x = rng.uniform(0.0, s.w);
      y = rng.uniform(0.0, s.h);
      found = rng.chance(s.tissue_at(x, y) * (1.0 - 0.8 * s.cell_at(x, y)));
    }
    if (!found) continue;
    double theta = rng.uniform(0.0, 2.0 * std::numbers::pi);
    const int n = 3 + static_cast<int>(40.0 * rng.uniform() * rng.uniform());
    for (int i = 0; i < n; ++i) {
      const double step = rng.uniform(4.0, 7.0) * um;
      theta += 0.3 * rng.normal();
      x += std::cos(theta) * step;
      y += std::sin(theta) * step;
      try_rbc(draw_rbc(x, y));
      if (rng.chance(0.3)) {
        const double side = rng.uniform(5.0, 8.0) * um * (rng.chance(0.5) ? 1 : -1);
        try_rbc(draw_rbc(x - std::sin(theta) * side, y + std::cos(theta) * side));
      }
    }
  }
  const auto singles = static_cast<int>(std::llround(p.rbc * area_mm2 * 150.0));
  for (int i = 0; i < singles; ++i)
    try_rbc(draw_rbc(rng.uniform(0.0, s.w), rng.uniform(0.0, s.h)));
  return out;
}

// Collagen: wavy eosinophilic bundles following a smooth orientation field,
// drawn into an 8-bit density map (anti-aliased, so thin fibres stay smooth).
cv::Mat draw_fibres(Scene& s) {
  cv::Mat f = cv::Mat::zeros(s.h, s.w, CV_8U);
  Rng& rng = s.rng;
  const double um = s.px_per_um;
  const double area_um2 = static_cast<double>(s.w) * s.h * s.p.mpp * s.p.mpp;
  const auto n = static_cast<std::size_t>(area_um2 / (90.0 * 2.5));
  constexpr int shift = 4;  // sub-pixel vertex coordinates
  std::vector<cv::Point> pts;
  for (std::size_t i = 0; i < n; ++i) {
    double x = rng.uniform(-20.0 * um, s.w + 20.0 * um), y = rng.uniform(-20.0 * um, s.h + 20.0 * um);
    if (!rng.chance(0.1 + 0.9 * s.tissue_at(x, y) * (1.0 - s.cell_at(x, y)))) continue;
    const int steps = 8 + static_cast<int>(rng.uniform() * 30.0);
    const double wave = rng.uniform(0.15, 0.45), freq = rng.uniform(0.3, 0.9), phase = rng.uniform(0.0, 6.3);
    const double thick_um = rng.uniform(0.8, 3.5);
    const int thickness = std::max(1, static_cast<int>(std::lround(thick_um * um)));
    const double value = rng.uniform(110.0, 255.0);
    const double flip = rng.chance(0.5) ? 0.0 : std::numbers::pi;
    pts.clear();
    for (int k = 0; k < steps; ++k) {
      pts.emplace_back(static_cast<int>(std::lround(x * (1 << shift))),
                       static_cast<int>(std::lround(y * (1 << shift))));
      const double theta = 0.5 * std::numbers::pi * s.theta_f.at(x, y) + flip + wave * std::sin(phase + freq * k);
      x += std::cos(theta) * 4.0 * um;
      y += std::sin(theta) * 4.0 * um;
    }
    const std::vector<std::vector<cv::Point>> polys{pts};
    cv::polylines(f, polys, false, cv::Scalar(value), thickness, cv::LINE_AA, shift);
  }
  return f;
}

// Concentration maps of the tissue without nuclei or red cells: cytoplasm
// (eosin with a little haematoxylin, granular) where the field is cellular,
// stroma (pale eosin plus collagen bundles) elsewhere, faint glass; where
// there is neuropil, it replaces both (its cells show little cytoplasm).
void paint_background(Scene& s, const cv::Mat& fibres, Neuropil* neuropil, cv::Mat& ch, cv::Mat& ce) {
  const auto n = static_cast<std::size_t>(s.w);
  std::vector<float> tf(n), cf(n), np_share(n), np_h(n), np_e(n);
  for (int y = 0; y < s.h; ++y) {
    s.tissue_f.row(y, tf.data());
    s.cell_f.row(y, cf.data());
    if (neuropil) neuropil->row(y, np_share.data(), np_h.data(), np_e.data());
    const std::uint8_t* fib = fibres.ptr<std::uint8_t>(y);
    float* hp = ch.ptr<float>(y);
    float* ep = ce.ptr<float>(y);
    // The second texture is read transposed so the two periods do not align.
    const float* g1 = s.gran1.row(y);
    const int m1 = s.gran1.mask(), m2 = s.gran2.mask();
    for (int x = 0; x < s.w; ++x) {
      const auto i = static_cast<std::size_t>(x);
      const double t = s.tissue_from(tf[i]);
      const double c = cf[i];
      const double g = 0.7 * g1[x & m1] + 0.7 * s.gran2.row(x)[y & m2];
      const double cyto_e = 0.20 + 0.035 * g, cyto_h = 0.05 + 0.01 * g;
      const double stroma_e = 0.07 + 0.32 * (fib[x] * (1.0 / 255.0)) + 0.015 * g;
      double e = t * (c * cyto_e + (1.0 - c) * std::max(0.0, stroma_e)) + (1.0 - t) * 0.01;
      double hh = t * (c * cyto_h + (1.0 - c) * 0.03) + (1.0 - t) * 0.004;
      if (neuropil) {
        const double m = t * np_share[i];
        e += m * (np_e[i] - e);
        hh += m * (np_h[i] - hh);
      }
      hp[x] = static_cast<float>(std::max(0.0, hh));
      ep[x] = static_cast<float>(std::max(0.0, e));
    }
  }
}

// Does nucleus k take pixel (x, y) from nucleus o, which has it so far?
// The one in front does; on one layer (touching nuclei, which overlap a
// little) the one the pixel is relatively deeper in, which splits the
// overlap along a natural line.
// (odx, ody): the pixel centre relative to o's centre.
bool takes(const Nucleus& k, double q, const Nucleus& o, double odx, double ody) {
  if (k.layer != o.layer) return k.layer > o.layer;
  return q < probe(o, odx, ody).q;
}

void paint_nuclei(const Scene& s, const std::vector<Nucleus>& nuclei, cv::Mat& ch, cv::Mat& ce, cv::Mat& labels,
                  cv::Mat& depth) {
  for (std::size_t n = 0; n < nuclei.size(); ++n) {
    const Nucleus& k = nuclei[n];
    const double reach = k.extent + k.halo + 1.5;
    const int x0 = std::max(0, static_cast<int>(std::floor(k.cx - reach)));
    const int x1 = std::min(s.w - 1, static_cast<int>(std::ceil(k.cx + reach)));
    const int y0 = std::max(0, static_cast<int>(std::floor(k.cy - reach)));
    const int y1 = std::min(s.h - 1, static_cast<int>(std::ceil(k.cy + reach)));
    const int label = static_cast<int>(n) + 1;
    for (int y = y0; y <= y1; ++y) {
      float* hp = ch.ptr<float>(y);
      float* ep = ce.ptr<float>(y);
      int* lp = labels.ptr<int>(y);
      std::uint8_t* dp = depth.ptr<std::uint8_t>(y);
      const double dy = y + 0.5 - k.cy;
      for (int x = x0; x <= x1; ++x) {
        const double dx = x + 0.5 - k.cx;
        const Probe pr = probe(k, dx, dy);
        if (pr.dist <= -0.5) {
          if (k.halo > 0.0 && pr.dist > -0.5 - k.halo && lp[x] == 0) {
            // Retraction artefact: a clear ring where cytoplasm pulled away.
            const double ring = smoothstep((pr.dist + 0.5 + k.halo) / std::max(1.0, 0.5 * k.halo));
            ep[x] = static_cast<float>(ep[x] * (1.0 - 0.45 * ring));
            hp[x] = static_cast<float>(hp[x] * (1.0 - 0.45 * ring));
          }
          continue;
        }
        // Partial volume: the share of the pixel inside the outline.
        const double cover = std::min(1.0, pr.dist + 0.5);
        const int tx = x + k.ox, ty = y + k.oy;
        double conc = k.h * std::max(0.15, 1.0 + k.tex * (0.65 * s.fine.at(tx, ty) + 0.55 * s.coarse.at(ty, tx)));
        if (k.rim > 0.0) conc += k.rim * smoothstep((pr.q - 0.75) / 0.2);
        double e_extra = 0.03;
        for (int i = 0; i < k.nucleoli; ++i) {
          const auto si = static_cast<std::size_t>(i);
          const double ux = dx - k.nx[si], uy = dy - k.ny[si];
          const double d2 = (ux * ux + uy * uy) / (k.nr[si] * k.nr[si]);
          if (d2 < 1.0) {
            conc += 0.5 * (1.0 - d2);
            e_extra += 0.35 * (1.0 - d2);
          }
        }
        hp[x] = static_cast<float>(hp[x] + cover * conc);
        ep[x] = static_cast<float>(ep[x] * (1.0 - cover * (1.0 - k.e_keep)) + cover * e_extra);
        if (pr.dist > 0.0) {
          if (dp[x] < 255) ++dp[x];
          const int owner = lp[x];
          if (owner == 0) {
            lp[x] = label;
          } else {
            const Nucleus& o = nuclei[static_cast<std::size_t>(owner - 1)];
            if (takes(k, pr.q, o, x + 0.5 - o.cx, dy + k.cy - o.cy)) lp[x] = label;
          }
        }
      }
    }
  }
}

void paint_rbcs(const Scene& s, const std::vector<Rbc>& rbcs, cv::Mat& ch, cv::Mat& ce, cv::Mat& cr) {
  for (const Rbc& c : rbcs) {
    const double a = c.r * c.squash, b = c.r / c.squash;
    const double reach = a + 1.5;
    const int x0 = std::max(0, static_cast<int>(std::floor(c.cx - reach)));
    const int x1 = std::min(s.w - 1, static_cast<int>(std::ceil(c.cx + reach)));
    const int y0 = std::max(0, static_cast<int>(std::floor(c.cy - reach)));
    const int y1 = std::min(s.h - 1, static_cast<int>(std::ceil(c.cy + reach)));
    for (int y = y0; y <= y1; ++y) {
      float* hp = ch.ptr<float>(y);
      float* ep = ce.ptr<float>(y);
      float* rp = cr.ptr<float>(y);
      const double dy = y + 0.5 - c.cy;
      for (int x = x0; x <= x1; ++x) {
        const double dx = x + 0.5 - c.cx;
        const double u = (dx * c.ct + dy * c.st) / a, v = (dy * c.ct - dx * c.st) / b;
        const double rho = std::sqrt(u * u + v * v);
        const double cover = clamp01((1.0 - rho) * c.r + 0.5);
        if (cover <= 0.0) continue;
        // Biconcave disc: thin in the middle, the central pallor.
        const double thick = 0.55 + 0.45 * std::min(1.0, rho * rho * 1.3);
        ep[x] = static_cast<float>(ep[x] * (1.0 - cover) + cover * c.e * thick);
        hp[x] = static_cast<float>(hp[x] * (1.0 - 0.9 * cover));
        rp[x] = static_cast<float>(rp[x] + cover * c.hb * thick);
      }
    }
  }
}

// Light through the stained section (Beer-Lambert), then optics (Gaussian
// point spread) and the sensor (shot noise growing with the signal plus a
// floor), in horizontal strips so the float working set stays small.
void render(Scene& s, const cv::Mat& ch, const cv::Mat& ce, const cv::Mat& cr, cv::Mat& rgb, std::uint64_t noise_seed) {
  const double sigma = s.p.blur * 0.25 / s.p.mpp;
  const int halo = sigma >= 0.05 ? static_cast<int>(std::ceil(4.0 * sigma)) + 1 : 0;
  constexpr int strip = 128;
  cv::RNG noise_rng(noise_seed);
  cv::Mat light, noise;
  std::vector<float> fh(static_cast<std::size_t>(s.w)), fe(static_cast<std::size_t>(s.w));
  const Look& L = s.look;
  const bool tone = L.gamma != 1.0;
  const auto gamma = static_cast<float>(L.gamma);
  // Photon shot noise has variance proportional to the signal; the constant
  // is the read-out and quantisation floor. Tabulated by grey level.
  std::array<float, 256> noise_sd{};
  for (std::size_t v = 0; v < noise_sd.size(); ++v)
    noise_sd[v] = static_cast<float>(s.p.noise * std::sqrt(0.02 * (static_cast<double>(v) + 0.5) + 0.6));
  for (int y0 = 0; y0 < s.h; y0 += strip) {
    const int y1 = std::min(s.h, y0 + strip);
    const int a = std::max(0, y0 - halo), b = std::min(s.h, y1 + halo);
    light.create(b - a, s.w, CV_32FC3);
    for (int y = a; y < b; ++y) {
      s.stain_h.row(y, fh.data());
      s.stain_e.row(y, fe.data());
      const float* hp = ch.ptr<float>(y);
      const float* ep = ce.ptr<float>(y);
      const float* rp = cr.ptr<float>(y);
      float* out = light.ptr<float>(y - a);
      for (int x = 0; x < s.w; ++x) {
        const auto i = static_cast<std::size_t>(x);
        // Uneven staining across the slide: +-12% per standard deviation.
        const double gh = L.h_gain * std::max(0.3, 1.0 + 0.12 * fh[i]);
        const double ge = L.e_gain * std::max(0.3, 1.0 + 0.12 * fe[i]);
        const double h = gh * hp[x], e = ge * ep[x], r = rp[x];
        for (std::size_t c = 0; c < 3; ++c)
          out[3 * x + static_cast<int>(c)] = static_cast<float>(-ln10 * (h * L.h[c] + e * L.e[c] + r * L.hb[c]));
      }
    }
    cv::exp(light, light);
    cv::multiply(light, cv::Scalar(L.white[0], L.white[1], L.white[2]), light);
    if (halo > 0) cv::GaussianBlur(light, light, cv::Size(), sigma, sigma, cv::BORDER_REFLECT);
    noise.create(y1 - y0, s.w, CV_32FC3);
    noise_rng.fill(noise, cv::RNG::NORMAL, 0.0, 1.0);
    for (int y = y0; y < y1; ++y) {
      const float* in = light.ptr<float>(y - a);
      const float* nz = noise.ptr<float>(y - y0);
      std::uint8_t* o = rgb.ptr<std::uint8_t>(y);
      for (int i = 0; i < 3 * s.w; ++i) {
        const float v = in[i];
        float n = v + noise_sd[static_cast<std::size_t>(std::clamp(static_cast<int>(v), 0, 255))] * nz[i];
        if (tone) n = 255.0f * std::pow(std::max(0.0f, n) * (1.0f / 255.0f), gamma);
        o[i] = static_cast<std::uint8_t>(std::clamp(n + 0.5f, 0.0f, 255.0f));
      }
    }
  }
}

// Labels 1..N in placement order, without the nuclei that lost every pixel
// to their neighbours or to the image border; returns what the truth
// knows of each.
std::vector<NucleusInfo> compact(cv::Mat& labels, const std::vector<Nucleus>& nuclei) {
  const std::size_t n = nuclei.size();
  std::vector<int> map(n + 1, 0);
  for (int y = 0; y < labels.rows; ++y) {
    const int* p = labels.ptr<int>(y);
    for (int x = 0; x < labels.cols; ++x)
      map[static_cast<std::size_t>(p[x])] = 1;
  }
  int next = 0;
  map[0] = 0;
  for (std::size_t i = 1; i <= n; ++i)
    map[i] = map[i] ? ++next : 0;
  for (int y = 0; y < labels.rows; ++y) {
    int* p = labels.ptr<int>(y);
    for (int x = 0; x < labels.cols; ++x)
      p[x] = map[static_cast<std::size_t>(p[x])];
  }
  std::vector<NucleusInfo> info(static_cast<std::size_t>(next));
  for (std::size_t i = 0; i < n; ++i) {
    if (!map[i + 1]) continue;
    const Nucleus& k = nuclei[i];
    NucleusInfo& out = info[static_cast<std::size_t>(map[i + 1] - 1)];
    out.kind = k.kind;
    out.pale = k.pale;
    out.front_of = k.front_of >= 0 ? map[static_cast<std::size_t>(k.front_of) + 1] : 0;
  }
  return info;
}

std::string number(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

void check_range(const char* name, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi))
    throw std::invalid_argument(std::string("flowd::hne: ") + name + " must be in [" + number(lo) + ", " + number(hi) +
                                "], got " + number(v));
}

// What a scanner or a tile server that stores JPEG hands on: 8x8 block
// edges, ringing at sharp edges, chroma at half resolution.
cv::Mat jpeg_roundtrip(const cv::Mat& rgb, int quality) {
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<std::uint8_t> bytes;
  if (!cv::imencode(".jpg", bgr, bytes, {cv::IMWRITE_JPEG_QUALITY, quality}))
    throw std::runtime_error("flowd::hne: JPEG encoding failed");
  const cv::Mat back = cv::imdecode(bytes, cv::IMREAD_COLOR);
  if (back.empty() || back.size() != rgb.size()) throw std::runtime_error("flowd::hne: JPEG decoding failed");
  cv::Mat out;
  cv::cvtColor(back, out, cv::COLOR_BGR2RGB);
  return out;
}

}  // namespace

std::string_view name_of(Tissue t) {
  switch (t) {
    case Tissue::stroma: return "stroma";
    case Tissue::neuropil: return "neuropil";
    case Tissue::mixed: return "mixed";
  }
  return "stroma";
}

Tissue tissue_from_name(std::string_view name) {
  for (Tissue t : {Tissue::stroma, Tissue::neuropil, Tissue::mixed})
    if (name == name_of(t)) return t;
  throw std::invalid_argument("flowd::hne: tissue must be one of stroma, neuropil, mixed, got '" + std::string(name) +
                              "'");
}

void validate(const Params& p) {
  check_range("width", p.width, 1, max_side);
  check_range("height", p.height, 1, max_side);
  if (static_cast<double>(p.width) * p.height > max_pixels)
    throw std::invalid_argument("flowd::hne: " + std::to_string(p.width) + "x" + std::to_string(p.height) +
                                " is more than 2^30 pixels");
  check_range("mpp", p.mpp, 0.05, 4.0);
  check_range("density", p.density, 0.0, 20.0);
  check_range("stain", p.stain, 0.0, 5.0);
  check_range("blur", p.blur, 0.0, 10.0);
  check_range("noise", p.noise, 0.0, 10.0);
  check_range("rbc", p.rbc, 0.0, 20.0);
  check_range("cluster", p.cluster, 0.0, 1.0);
  check_range("background", p.background, 0.0, 1.0);
  if (p.tissue != Tissue::stroma && p.tissue != Tissue::neuropil && p.tissue != Tissue::mixed)
    throw std::invalid_argument("flowd::hne: tissue must be one of stroma, neuropil, mixed, got " +
                                std::to_string(static_cast<int>(p.tissue)));
  check_range("neuropil_share", p.neuropil_share, 0.0, 1.0);
  check_range("pale", p.pale, 0.0, 1.0);
  check_range("overlap", p.overlap, 0.0, 1.0);
  check_range("stain_jitter", p.stain_jitter, 0.0, 4.0);
  check_range("scanner", p.scanner, 0.0, 4.0);
  check_range("jpeg", p.jpeg, 0, 100);
}

Sample generate(const Params& p, int index) {
  validate(p);
  if (index < 0) throw std::invalid_argument("flowd::hne: index must be >= 0, got " + std::to_string(index));
  const std::uint64_t base = mix64(mix64(p.seed) ^ mix64(0x686e65ULL + static_cast<std::uint64_t>(index)));
  Rng rng(base);
  // Streams of their own for what later parameters added, so that with
  // those off an image is what it was before they existed.
  Rng side(mix64(base ^ 0x73696465ULL)), scan(mix64(base ^ 0x7363616eULL));
  Scene scene(p, rng, side, scan);
  const Layout layout = place(scene);
  const cv::Mat fibres = draw_fibres(scene);
  std::optional<Neuropil> neuropil;
  if (p.tissue != Tissue::stroma) {
    Rng np(mix64(base ^ 0x6e6575726fULL));
    neuropil.emplace(p, np);
  }

  cv::Mat ch(p.height, p.width, CV_32F), ce(p.height, p.width, CV_32F);
  cv::Mat cr = cv::Mat::zeros(p.height, p.width, CV_32F);
  paint_background(scene, fibres, neuropil ? &*neuropil : nullptr, ch, ce);
  neuropil.reset();
  Sample out;
  out.labels = cv::Mat::zeros(p.height, p.width, CV_32S);
  out.depth = cv::Mat::zeros(p.height, p.width, CV_8U);
  paint_nuclei(scene, layout.nuclei, ch, ce, out.labels, out.depth);
  paint_rbcs(scene, layout.rbcs, ch, ce, cr);
  out.nuclei = compact(out.labels, layout.nuclei);
  out.rgb.create(p.height, p.width, CV_8UC3);
  render(scene, ch, ce, cr, out.rgb, mix64(base ^ 0x6e6f697365ULL));
  if (p.jpeg > 0) out.rgb = jpeg_roundtrip(out.rgb, p.jpeg);
  return out;
}

}  // namespace flowd::hne

#include "tem/generate.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "synth/counter_stream.hpp"

namespace flowd::tem {

namespace {

constexpr double pi = std::numbers::pi;

// The generators' counter-based stream (tools/common/synth): any draw (a
// lattice site's properties, a frame's noise) is found without replaying the
// others, so the specimen does not depend on how much of it a series shows.
class Stream : public synth::CounterStream {
public:
  explicit Stream(std::uint64_t key) : CounterStream(mix(key)) {}
  Stream(std::uint64_t key, std::uint64_t a, std::uint64_t b = 0)
      : CounterStream(mix(mix(mix(key) ^ a) ^ (b + 0x5bd1e995))) {}
};

// Stream purposes, so the draws of one never correlate with another's.
enum Purpose : std::uint64_t { lattice = 1, trajectory, site, frame_noise, frame_jitter, frame_dose };

struct Wave {  // amplitude * cos(k . x + phase)
  double kx, ky, phase, amplitude;
  double at(double x, double y) const noexcept { return amplitude * std::cos(kx * x + ky * y + phase); }
};

Wave random_wave(Stream& s, double min_wavelength, double max_wavelength, double amplitude) {
  const double theta = s.uniform(0.0, 2.0 * pi), k = 2.0 * pi / s.uniform(min_wavelength, max_wavelength);
  return {k * std::cos(theta), k * std::sin(theta), s.uniform(0.0, 2.0 * pi), amplitude};
}

// The specimen in frame 0's coordinates.
struct Specimen {
  double ox, oy;       // a lattice origin
  double e1x, e1y;     // unit lattice vectors: e1 and e2 = rot90(e1)
  Wave distortion[4];  // x, x, y, y components
  Wave background[3];
  double column_mean;  // mean intensity of the columns alone
};

Specimen make_specimen(const Params& p) {
  Stream s(p.seed, lattice);
  Specimen sp{};
  const double theta = s.uniform(0.0, pi / 2);
  sp.e1x = std::cos(theta);
  sp.e1y = std::sin(theta);
  sp.ox = s.uniform(0.0, p.period);
  sp.oy = s.uniform(0.0, p.period);
  for (auto& w : sp.distortion)
    w = random_wave(s, 150.0, 400.0, p.distortion / 2.0);
  for (auto& w : sp.background)
    w = random_wave(s, 200.0, 600.0, 1.0 / 3.0);
  const double sigma_b = 0.9 * p.column_sigma;
  sp.column_mean = (1.0 - p.vacancies) * 2.0 * pi *
                   (p.column_sigma * p.column_sigma + p.species_ratio * sigma_b * sigma_b) / (p.period * p.period);
  return sp;
}

struct Site {
  double x, y, amplitude;
};

class Lattice {
public:
  Lattice(const Params& p, const Specimen& sp, double x0, double y0, double x1, double y1)
      : p_(p), sp_(sp), sigma_b_(0.9 * p.column_sigma) {
    // The index range of the sites whose columns reach into [x0,x1]x[y0,y1].
    const double margin = reach() + 1.0;
    double umin = 1e300, umax = -1e300, vmin = 1e300, vmax = -1e300;
    for (const double x : {x0 - margin, x1 + margin})
      for (const double y : {y0 - margin, y1 + margin}) {
        const auto [u, v] = lattice_coords(x, y);
        umin = std::min(umin, u), umax = std::max(umax, u), vmin = std::min(vmin, v), vmax = std::max(vmax, v);
      }
    i0_ = static_cast<int>(std::floor(umin)) - 1;
    j0_ = static_cast<int>(std::floor(vmin)) - 1;
    ni_ = static_cast<int>(std::ceil(umax)) + 2 - i0_;
    nj_ = static_cast<int>(std::ceil(vmax)) + 2 - j0_;
    sites_.resize(static_cast<std::size_t>(ni_) * static_cast<std::size_t>(nj_) * 2);
    for (int i = 0; i < ni_; ++i)
      for (int j = 0; j < nj_; ++j)
        for (int b = 0; b < 2; ++b)
          sites_[index(i, j, b)] = make_site(i + i0_, j + j0_, b);
  }

  // Sum of the Gaussian columns at (x, y).
  double columns(double x, double y) const noexcept {
    const auto [u, v] = lattice_coords(x, y);
    const double r = reach() / p_.period, cut2 = 16.0 * p_.column_sigma * p_.column_sigma;
    const double inv2a = 0.5 / (p_.column_sigma * p_.column_sigma), inv2b = 0.5 / (sigma_b_ * sigma_b_);
    double sum = 0.0;
    for (int b = 0; b < 2; ++b) {
      const double shift = 0.5 * b;
      const int ia = static_cast<int>(std::ceil(u - shift - r)), ib = static_cast<int>(std::floor(u - shift + r));
      const int ja = static_cast<int>(std::ceil(v - shift - r)), jb = static_cast<int>(std::floor(v - shift + r));
      for (int i = ia; i <= ib; ++i)
        for (int j = ja; j <= jb; ++j) {
          const Site& s = sites_[index(i - i0_, j - j0_, b)];
          const double dx = x - s.x, dy = y - s.y, d2 = dx * dx + dy * dy;
          if (d2 < cut2 && s.amplitude > 0.0) sum += s.amplitude * std::exp(-d2 * (b == 0 ? inv2a : inv2b));
        }
    }
    return sum;
  }

private:
  double reach() const noexcept { return 4.0 * p_.column_sigma + p_.distortion + 0.5; }

  std::pair<double, double> lattice_coords(double x, double y) const noexcept {
    const double dx = x - sp_.ox, dy = y - sp_.oy;
    return {(dx * sp_.e1x + dy * sp_.e1y) / p_.period, (-dx * sp_.e1y + dy * sp_.e1x) / p_.period};
  }

  std::size_t index(int i, int j, int b) const noexcept {
    return (static_cast<std::size_t>(i) * static_cast<std::size_t>(nj_) + static_cast<std::size_t>(j)) * 2 +
           static_cast<std::size_t>(b);
  }

  Site make_site(int i, int j, int b) const {
    Stream s(p_.seed ^ site, static_cast<std::uint64_t>(static_cast<std::int64_t>(i)),
             static_cast<std::uint64_t>(static_cast<std::int64_t>(j)) * 2 + static_cast<std::uint64_t>(b));
    const double u = (i + 0.5 * b) * p_.period, v = (j + 0.5 * b) * p_.period;
    double x = sp_.ox + u * sp_.e1x - v * sp_.e1y, y = sp_.oy + u * sp_.e1y + v * sp_.e1x;
    const double ux = sp_.distortion[0].at(x, y) + sp_.distortion[1].at(x, y);
    const double uy = sp_.distortion[2].at(x, y) + sp_.distortion[3].at(x, y);
    x += ux + 0.05 * s.normal();
    y += uy + 0.05 * s.normal();
    const bool vacant = s.uniform() < p_.vacancies;
    const double amplitude = vacant ? 0.0 : (b == 0 ? 1.0 : p_.species_ratio) * (1.0 + 0.05 * s.normal());
    return {x, y, amplitude};
  }

  const Params& p_;
  const Specimen& sp_;
  double sigma_b_;
  int i0_ = 0, j0_ = 0, ni_ = 0, nj_ = 0;
  std::vector<Site> sites_;
};

double to_radians(double degrees) noexcept { return degrees * pi / 180.0; }

void check(bool ok, const char* name, const std::string& range, double value) {
  if (!ok)
    throw std::invalid_argument(std::string("flowd::tem: ") + name + " must be " + range + ", got " +
                                std::to_string(value));
}

}  // namespace

void validate(const Params& p) {
  check(p.frames >= 1 && p.frames <= 100000, "frames", "in [1, 100000]", p.frames);
  check(p.width >= 16 && p.width <= 16384, "width", "in [16, 16384]", p.width);
  check(p.height >= 16 && p.height <= 16384, "height", "in [16, 16384]", p.height);
  check(p.period >= 3.0 && p.period <= 100.0, "period", "in [3, 100] pixels", p.period);
  check(p.column_sigma >= 0.3 && p.column_sigma <= p.period / 2, "column_sigma", "in [0.3, period/2] pixels",
        p.column_sigma);
  check(p.species_ratio >= 0.0 && p.species_ratio <= 2.0, "species_ratio", "in [0, 2]", p.species_ratio);
  check(p.vacancies >= 0.0 && p.vacancies <= 0.5, "vacancies", "in [0, 0.5]", p.vacancies);
  check(p.distortion >= 0.0 && p.distortion <= 2.0, "distortion", "in [0, 2] pixels", p.distortion);
  check(p.drift >= 0.0 && p.drift <= 20.0, "drift", "in [0, 20] pixels per frame", p.drift);
  check(p.rotation >= 0.0 && p.rotation <= 1.0, "rotation", "in [0, 1] degrees per frame", p.rotation);
  check(p.dose > 0.0 && p.dose <= 10000.0, "dose", "in (0, 10000] counts per pixel", p.dose);
  check(p.background >= 0.0 && p.background <= 10.0, "background", "in [0, 10]", p.background);
  check(p.fixed_background >= 0.0 && p.fixed_background <= 1.0, "fixed_background", "in [0, 1]", p.fixed_background);
  check(p.jitter >= 0.0 && p.jitter <= 5.0, "jitter", "in [0, 5] pixels", p.jitter);
}

std::vector<Motion> truth(const Params& p) {
  validate(p);
  Stream s(p.seed, trajectory);
  // A persistent velocity (70% of the motion) plus a random walk (the rest),
  // and a rotation of `rotation` degrees per frame in a random sense with
  // 30% per-frame variation.
  const double heading = s.uniform(0.0, 2.0 * pi);
  const double vx = 0.7 * p.drift * std::cos(heading), vy = 0.7 * p.drift * std::sin(heading);
  const double step_sigma = 0.5 * p.drift;
  const double sense = s.uniform() < 0.5 ? -1.0 : 1.0;
  std::vector<Motion> out(static_cast<std::size_t>(p.frames));
  double angle = 0.0, tx = 0.0, ty = 0.0;
  for (int k = 1; k < p.frames; ++k) {
    // frame k = step o frame k-1, the step a rotation about the centre plus a translation.
    const double da = to_radians(sense * p.rotation * (1.0 + 0.3 * s.normal()));
    const double sx = vx + step_sigma * s.normal(), sy = vy + step_sigma * s.normal();
    const double c = std::cos(da), sn = std::sin(da);
    const double ntx = c * tx - sn * ty + sx, nty = sn * tx + c * ty + sy;
    angle += da, tx = ntx, ty = nty;
    out[static_cast<std::size_t>(k)] = {tx, ty, angle * 180.0 / pi};
  }
  return out;
}

cv::Mat generate(const Params& p, int index) {
  validate(p);
  if (index < 0 || index >= p.frames)
    throw std::out_of_range("flowd::tem: no frame " + std::to_string(index) + " in a series of " +
                            std::to_string(p.frames));
  const std::vector<Motion> motions = truth(p);
  const Specimen sp = make_specimen(p);
  const double cx = (p.width - 1) / 2.0, cy = (p.height - 1) / 2.0;
  const Motion& m = motions[static_cast<std::size_t>(index)];
  // Pixel x of this frame shows the specimen at x_0 = c + R(-a)(x - c - t).
  const double a = to_radians(m.angle), ca = std::cos(a), sa = std::sin(a);
  auto to_specimen = [&](double x, double y) {
    const double dx = x - cx - m.tx, dy = y - cy - m.ty;
    return std::pair{cx + ca * dx + sa * dy, cy - sa * dx + ca * dy};
  };

  // Scan-line jitter: an AR(1) sequence along the rows (correlation 0.8 from
  // one line to the next), scaled to `jitter` pixels RMS.
  std::vector<double> jitter(static_cast<std::size_t>(p.height), 0.0);
  if (p.jitter > 0.0) {
    Stream js(p.seed, frame_jitter, static_cast<std::uint64_t>(index));
    constexpr double rho = 0.8;
    double j = js.normal();
    for (auto& v : jitter) {
      v = j;
      j = rho * j + std::sqrt(1.0 - rho * rho) * js.normal();
    }
    // Least-squares line through the offsets, removed: a mean would move the
    // frame and a trend would shear it, and how a shear splits into rotation
    // and distortion is a convention the truth should not depend on.
    const double n = static_cast<double>(jitter.size()), ym = (n - 1.0) / 2.0;
    double mean = 0.0, slope = 0.0, syy = 0.0, var = 0.0;
    for (std::size_t y = 0; y < jitter.size(); ++y)
      mean += jitter[y] / n;
    for (std::size_t y = 0; y < jitter.size(); ++y) {
      slope += (static_cast<double>(y) - ym) * (jitter[y] - mean);
      syy += (static_cast<double>(y) - ym) * (static_cast<double>(y) - ym);
    }
    slope = syy > 0.0 ? slope / syy : 0.0;
    for (std::size_t y = 0; y < jitter.size(); ++y) {
      jitter[y] -= mean + slope * (static_cast<double>(y) - ym);
      var += jitter[y] * jitter[y];
    }
    const double rms = std::sqrt(var / static_cast<double>(jitter.size()));
    for (double& v : jitter)
      v *= rms > 0.0 ? p.jitter / rms : 0.0;
  }

  double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
  const double jmax = 6.0 * p.jitter + 1.0;
  for (const double x : {-jmax, p.width - 1.0 + jmax})
    for (const double y : {0.0, p.height - 1.0}) {
      const auto [sx, sy] = to_specimen(x, y);
      x0 = std::min(x0, sx), y0 = std::min(y0, sy), x1 = std::max(x1, sx), y1 = std::max(y1, sy);
    }
  const Lattice lattice(p, sp, x0, y0, x1, y1);

  Stream dose_stream(p.seed, frame_dose, static_cast<std::uint64_t>(index));
  const double probe = std::max(0.5, 1.0 + 0.03 * dose_stream.normal());
  // The backgrounds are relative to the columns' mean intensity, and the
  // whole scaled to `dose` counts per pixel on average.
  const double scale = p.dose * probe / (sp.column_mean * (1.0 + p.background + p.fixed_background));
  Stream noise(p.seed, frame_noise, static_cast<std::uint64_t>(index));
  cv::Mat out(p.height, p.width, CV_16UC1);
  for (int y = 0; y < p.height; ++y) {
    auto* row = out.ptr<std::uint16_t>(y);
    const double jy = jitter[static_cast<std::size_t>(y)];
    for (int x = 0; x < p.width; ++x) {
      const auto [sx, sy] = to_specimen(x + jy, y);
      double bg = 1.0;
      for (const Wave& w : sp.background)
        bg += w.at(sx, sy);
      const double specimen = lattice.columns(sx, sy) + sp.column_mean * p.background * bg;
      const double detector =
          sp.column_mean * p.fixed_background * (1.0 + (x - cx) / p.width + 0.5 * (y - cy) / p.height);
      row[x] = static_cast<std::uint16_t>(std::min(65535, noise.poisson(scale * (specimen + detector))));
    }
  }
  return out;
}

std::string frame_name(const Params& p, int index) {
  const int digits = std::max(3, static_cast<int>(std::to_string(std::max(p.frames - 1, 0)).size()));
  std::string n = std::to_string(index);
  return "frame_" + std::string(static_cast<std::size_t>(std::max(0, digits - static_cast<int>(n.size()))), '0') + n;
}

}  // namespace flowd::tem

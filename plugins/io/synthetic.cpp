#include "synthetic.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "flowd/error.hpp"
#include "hne/conditions.hpp"
#include "hne/generate.hpp"

namespace flowd::io {

namespace {

constexpr std::string_view valid_generators = "blobs, hne, tem";
constexpr std::string_view blobs_keys = "width, height, count, seed";
constexpr std::string_view hne_keys =
    "width, height, count, seed, condition, mpp, density, stain, blur, noise, rbc, cluster, background, tissue, "
    "neuropil_share, pale, overlap, stain_jitter, scanner, jpeg";
constexpr std::string_view tem_keys =
    "frames, size, width, height, seed, period, column_sigma, species_ratio, vacancies, distortion, drift, rotation, "
    "dose, background, fixed_background, jitter";
constexpr int max_side = 65536;
constexpr std::int64_t max_count = 1'000'000;

// splitmix64's finaliser: decorrelates seeds that differ in a few bits.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Transforms of std::mt19937_64 written out here because the standard
// distributions are allowed to differ between standard libraries.
class Random {
public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t bits() { return engine_(); }
  // [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Irwin-Hall with 12 terms: mean 0, variance 1, tails cut at +-6, and only
  // additions, so no libm function whose last bit may vary is involved.
  double normal() {
    double s = 0.0;
    for (int i = 0; i < 12; ++i)
      s += uniform();
    return s - 6.0;
  }
  // A uniformly distributed unit vector by rejection, again without libm.
  std::pair<double, double> direction() {
    for (;;) {
      const double x = uniform(-1.0, 1.0), y = uniform(-1.0, 1.0);
      const double r2 = x * x + y * y;
      if (r2 > 1e-4 && r2 <= 1.0) {
        const double r = std::sqrt(r2);
        return {x / r, y / r};
      }
    }
  }

private:
  std::mt19937_64 engine_;
};

std::uint8_t to_u8(double v) noexcept { return static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0) + 0.5); }
std::uint8_t clamp_u8(int v) noexcept { return static_cast<std::uint8_t>(std::clamp(v, 0, 255)); }

double smoothstep(double t) noexcept { return t * t * (3.0 - 2.0 * t); }

// Two octaves of value noise in [0, 1] mixing a near-white and an eosin-pink
// tone: the uneven staining and empty areas of a real field.
void paint_background(cv::Mat& img, Random& rng) {
  struct Octave {
    int cell;
    double weight;
    int grid_w = 0;
    std::vector<double> grid{};  // (rows/cell + 2) x (cols/cell + 2) lattice values
    std::vector<int> x0{};       // lattice column left of each pixel column
    std::vector<double> wx{};    // smoothed weight of the right lattice column
    std::vector<double> row{};   // lattice interpolated vertically for the current pixel row
  };
  Octave octaves[] = {{256, 0.65}, {64, 0.35}};
  const int w = img.cols, h = img.rows;
  for (auto& o : octaves) {
    o.grid_w = w / o.cell + 2;
    const int grid_h = h / o.cell + 2;
    o.grid.resize(static_cast<std::size_t>(o.grid_w) * static_cast<std::size_t>(grid_h));
    for (auto& g : o.grid)
      g = rng.uniform();
    o.x0.resize(static_cast<std::size_t>(w));
    o.wx.resize(static_cast<std::size_t>(w));
    for (int x = 0; x < w; ++x) {
      o.x0[static_cast<std::size_t>(x)] = x / o.cell;
      o.wx[static_cast<std::size_t>(x)] = smoothstep((x % o.cell + 0.5) / o.cell);
    }
    o.row.resize(static_cast<std::size_t>(o.grid_w));
  }
  const double light[3] = {246.0, 232.0, 240.0};
  const double pink[3] = {228.0, 160.0, 200.0};
  for (int y = 0; y < h; ++y) {
    for (auto& o : octaves) {
      const std::size_t gy = static_cast<std::size_t>(y / o.cell);
      const double ty = smoothstep((y % o.cell + 0.5) / o.cell);
      const double* top = &o.grid[gy * static_cast<std::size_t>(o.grid_w)];
      const double* bottom = top + o.grid_w;
      for (int gx = 0; gx < o.grid_w; ++gx)
        o.row[static_cast<std::size_t>(gx)] = top[gx] * (1.0 - ty) + bottom[gx] * ty;
    }
    std::uint8_t* p = img.ptr<std::uint8_t>(y);
    for (int x = 0; x < w; ++x) {
      double f = 0.0;
      for (const auto& o : octaves) {
        const auto i = static_cast<std::size_t>(x);
        const auto g = static_cast<std::size_t>(o.x0[i]);
        f += o.weight * (o.row[g] * (1.0 - o.wx[i]) + o.row[g + 1] * o.wx[i]);
      }
      for (int c = 0; c < 3; ++c)
        p[3 * x + c] = to_u8(light[c] + (pink[c] - light[c]) * f);
    }
  }
}

struct Nucleus {
  double cx, cy;          // centre, pixels
  double a, b;            // semi-axes, a >= b
  double cos_t, sin_t;    // orientation of the a axis
  double c2, s2, c3, s3;  // 2nd and 3rd boundary harmonics: the irregular outline
  int colour[3];
  double opacity;
  std::uint64_t salt;  // seeds the chromatin texture
};

std::vector<Nucleus> place_nuclei(int w, int h, Random& rng) {
  const std::int64_t area = static_cast<std::int64_t>(w) * h;
  const std::int64_t n = std::max<std::int64_t>(1, (area + 800) / 1600);
  std::vector<Nucleus> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    Nucleus k{};
    const double d = std::clamp(15.0 + 4.5 * rng.normal(), 8.0, 30.0);
    k.a = d / 2.0;
    k.b = std::max(4.0, k.a * rng.uniform(0.6, 1.0));
    if (!out.empty() && rng.uniform() < 0.3) {
      // A neighbour of the previous nucleus, at about the sum of the radii:
      // touching or slightly overlapping, as in crowded tissue.
      const Nucleus& prev = out.back();
      const auto [dx, dy] = rng.direction();
      const double dist = (prev.a + k.a) * rng.uniform(0.75, 1.0);
      k.cx = prev.cx + dx * dist;
      k.cy = prev.cy + dy * dist;
    } else {
      k.cx = rng.uniform(0.0, w);
      k.cy = rng.uniform(0.0, h);
    }
    std::tie(k.cos_t, k.sin_t) = rng.direction();
    k.c2 = rng.uniform(-0.10, 0.10);
    k.s2 = rng.uniform(-0.10, 0.10);
    k.c3 = rng.uniform(-0.07, 0.07);
    k.s3 = rng.uniform(-0.07, 0.07);
    const double shade = 10.0 * rng.normal();
    k.colour[0] = static_cast<int>(to_u8(72.0 + shade));
    k.colour[1] = static_cast<int>(to_u8(42.0 + 0.6 * shade));
    k.colour[2] = static_cast<int>(to_u8(118.0 + 0.8 * shade));
    k.opacity = rng.uniform(0.85, 0.97);
    k.salt = rng.bits();
    out.push_back(k);
  }
  return out;
}

void paint_nucleus(cv::Mat& img, const Nucleus& k) {
  // The harmonics move the outline by at most 0.1*sqrt(2) + 0.07*sqrt(2) < 0.25
  // of the radius, and anti-aliasing adds half a pixel (b >= 4: 0.125 units).
  const double reach = k.a * 1.4 + 1.0;
  const int x0 = std::max(0, static_cast<int>(std::floor(k.cx - reach)));
  const int x1 = std::min(img.cols - 1, static_cast<int>(std::ceil(k.cx + reach)));
  const int y0 = std::max(0, static_cast<int>(std::floor(k.cy - reach)));
  const int y1 = std::min(img.rows - 1, static_cast<int>(std::ceil(k.cy + reach)));
  for (int y = y0; y <= y1; ++y) {
    std::uint8_t* p = img.ptr<std::uint8_t>(y);
    const double dy = y + 0.5 - k.cy;
    for (int x = x0; x <= x1; ++x) {
      const double dx = x + 0.5 - k.cx;
      const double u = (dx * k.cos_t + dy * k.sin_t) / k.a;
      const double v = (dy * k.cos_t - dx * k.sin_t) / k.b;
      const double r2 = u * u + v * v;
      if (r2 >= 1.96) continue;
      const double r = std::sqrt(r2);
      double bound = 1.0;
      if (r > 1e-9) {
        // cos/sin of 2 and 3 times the polar angle from the unit vector, by
        // the multiple-angle identities: no trigonometric calls.
        const double cu = u / r, sv = v / r;
        const double cos2 = cu * cu - sv * sv, sin2 = 2.0 * cu * sv;
        const double cos3 = cu * cos2 - sv * sin2, sin3 = sv * cos2 + cu * sin2;
        bound += k.c2 * cos2 + k.s2 * sin2 + k.c3 * cos3 + k.s3 * sin3;
      }
      // Signed distance to the outline in pixels (along the short axis),
      // shifted so the one-pixel transition is anti-aliased.
      const double cover = std::min(1.0, (bound - r) * k.b + 0.5);
      if (cover <= 0.0) continue;
      const auto ux = static_cast<std::uint64_t>(x), uy = static_cast<std::uint64_t>(y);
      const std::uint64_t fine = mix64(k.salt ^ (uy << 32 | ux));
      const std::uint64_t clump = mix64(~k.salt ^ ((uy >> 2) << 32 | (ux >> 2)));
      int texture = static_cast<int>(fine & 0xff) + static_cast<int>(clump & 0xff) - 255;  // [-255, 255]
      texture = texture * 30 / 255;
      if (r > 0.78 * bound) texture -= 16;  // a darker nuclear membrane
      const double alpha = cover * k.opacity;
      for (int c = 0; c < 3; ++c) {
        const int target = std::clamp(k.colour[c] + texture, 0, 255);
        const int before = p[3 * x + c];
        p[3 * x + c] = to_u8(before + (target - before) * alpha);
      }
    }
  }
}

// 3x3 binomial kernel (1 2 1)^T (1 2 1) / 16 with replicated borders, in
// integers so it rounds the same everywhere.
void blur3(cv::Mat& img) {
  const int w = img.cols, h = img.rows, n = 3 * w;
  std::vector<std::uint16_t> rows[3];
  for (auto& r : rows)
    r.resize(static_cast<std::size_t>(n));
  auto horizontal = [&](int y, std::vector<std::uint16_t>& out) {
    const std::uint8_t* p = img.ptr<std::uint8_t>(std::clamp(y, 0, h - 1));
    for (int x = 0; x < w; ++x) {
      const int l = std::max(x - 1, 0), r = std::min(x + 1, w - 1);
      for (int c = 0; c < 3; ++c)
        out[static_cast<std::size_t>(3 * x + c)] =
            static_cast<std::uint16_t>(p[3 * l + c] + 2 * p[3 * x + c] + p[3 * r + c]);
    }
  };
  // rows[0..2] hold the horizontal sums of rows y-1, y, y+1; row y is
  // overwritten only after its sums have been taken.
  horizontal(-1, rows[0]);
  horizontal(0, rows[1]);
  for (int y = 0; y < h; ++y) {
    horizontal(y + 1, rows[2]);
    std::uint8_t* p = img.ptr<std::uint8_t>(y);
    for (int i = 0; i < n; ++i) {
      const auto s = static_cast<std::size_t>(i);
      p[i] = static_cast<std::uint8_t>((rows[0][s] + 2 * rows[1][s] + rows[2][s] + 8) >> 4);
    }
    std::swap(rows[0], rows[1]);
    std::swap(rows[1], rows[2]);
  }
}

// Sensor noise: a luminance part shared by the channels (+-5) and a smaller
// per-channel part (+-3), both triangular, from one 64-bit draw per pixel.
void add_noise(cv::Mat& img, Random& rng) {
  auto tri = [](std::uint64_t r, int shift, int amplitude) {
    const int s = static_cast<int>((r >> shift) & 0xff) + static_cast<int>((r >> (shift + 8)) & 0xff) - 255;
    return s * amplitude / 255;
  };
  for (int y = 0; y < img.rows; ++y) {
    std::uint8_t* p = img.ptr<std::uint8_t>(y);
    for (int x = 0; x < img.cols; ++x) {
      const std::uint64_t r = rng.bits();
      const int lum = tri(r, 0, 5);
      for (int c = 0; c < 3; ++c)
        p[3 * x + c] = clamp_u8(p[3 * x + c] + lum + tri(r, 16 + 16 * c, 3));
    }
  }
}

}  // namespace

[[noreturn]] void bad_uri(std::string_view uri, const std::string& what) {
  throw Error("synthetic data set '" + std::string(uri) + "': " + what);
}

std::uint64_t parse_number(std::string_view uri, std::string_view key, std::string_view text, std::uint64_t lo,
                           std::uint64_t hi) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    bad_uri(uri, "'" + std::string(key) + "' must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got '" + std::string(text) + "'");
  return v;
}

double parse_real(std::string_view uri, std::string_view key, std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    bad_uri(uri, "'" + std::string(key) + "' must be a number, got '" + std::string(text) + "'");
  return v;
}

namespace {

// Shortest text that reads back as the same double, so uri() round-trips.
std::string real_text(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

// The real-valued hne keys, each a field of both SyntheticSpec and
// hne::Params under the same name.
struct RealKey {
  std::string_view key;
  double SyntheticSpec::*spec;
  double hne::Params::*params;
  bool always;  // spelled out in uri() even at its default
};
constexpr RealKey real_keys[] = {
    {"mpp", &SyntheticSpec::mpp, &hne::Params::mpp, true},
    {"density", &SyntheticSpec::density, &hne::Params::density, true},
    {"stain", &SyntheticSpec::stain, &hne::Params::stain, true},
    {"blur", &SyntheticSpec::blur, &hne::Params::blur, true},
    {"noise", &SyntheticSpec::noise, &hne::Params::noise, true},
    {"rbc", &SyntheticSpec::rbc, &hne::Params::rbc, false},
    {"cluster", &SyntheticSpec::cluster, &hne::Params::cluster, false},
    {"background", &SyntheticSpec::background, &hne::Params::background, false},
    {"neuropil_share", &SyntheticSpec::neuropil_share, &hne::Params::neuropil_share, false},
    {"pale", &SyntheticSpec::pale, &hne::Params::pale, false},
    {"overlap", &SyntheticSpec::overlap, &hne::Params::overlap, false},
    {"stain_jitter", &SyntheticSpec::stain_jitter, &hne::Params::stain_jitter, false},
    {"scanner", &SyntheticSpec::scanner, &hne::Params::scanner, false},
};

const RealKey* find_real_key(std::string_view key) {
  for (const RealKey& k : real_keys)
    if (k.key == key) return &k;
  return nullptr;
}

// The real-valued tem keys: fields of flowd::tem::Params under the same name.
struct TemKey {
  std::string_view key;
  double tem::Params::*field;
};
constexpr TemKey tem_real_keys[] = {
    {"period", &tem::Params::period},
    {"column_sigma", &tem::Params::column_sigma},
    {"species_ratio", &tem::Params::species_ratio},
    {"vacancies", &tem::Params::vacancies},
    {"distortion", &tem::Params::distortion},
    {"drift", &tem::Params::drift},
    {"rotation", &tem::Params::rotation},
    {"dose", &tem::Params::dose},
    {"background", &tem::Params::background},
    {"fixed_background", &tem::Params::fixed_background},
    {"jitter", &tem::Params::jitter},
};

const TemKey* find_tem_key(std::string_view key) {
  for (const TemKey& k : tem_real_keys)
    if (k.key == key) return &k;
  return nullptr;
}

// Throws std::invalid_argument for an unknown tissue name.
hne::Params hne_params(const SyntheticSpec& spec) {
  hne::Params p;
  p.width = spec.width;
  p.height = spec.height;
  p.seed = spec.seed;
  for (const RealKey& k : real_keys)
    p.*k.params = spec.*k.spec;
  p.tissue = hne::tissue_from_name(spec.tissue);
  p.jpeg = spec.jpeg;
  return p;
}

void set_hne_fields(SyntheticSpec& spec, const hne::Params& p) {
  for (const RealKey& k : real_keys)
    spec.*k.spec = p.*k.params;
  spec.tissue = std::string(hne::name_of(p.tissue));
  spec.jpeg = p.jpeg;
}

// The error of flowd::hne without its prefix: the URI already says where.
std::string hne_message(const std::invalid_argument& e) {
  std::string what = e.what();
  constexpr std::string_view prefix = "flowd::hne: ";
  if (what.starts_with(prefix)) what.erase(0, prefix.size());
  return what;
}

// The value of `key` in a query string, if given.
std::optional<std::string_view> query_value(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == key) return pair.substr(eq + 1);
  }
  return std::nullopt;
}

}  // namespace

std::string SyntheticSpec::uri() const {
  if (generator == "tem") {
    std::string u = std::string(synthetic_scheme) + "tem?frames=" + std::to_string(count) +
                    "&width=" + std::to_string(width) + "&height=" + std::to_string(height) +
                    "&seed=" + std::to_string(seed);
    const tem::Params defaults;
    for (const TemKey& k : tem_real_keys)
      if (tem.*k.field != defaults.*k.field) u += "&" + std::string(k.key) + "=" + real_text(tem.*k.field);
    return u;
  }
  std::string u = std::string(synthetic_scheme) + generator + "?width=" + std::to_string(width) +
                  "&height=" + std::to_string(height) + "&count=" + std::to_string(count) +
                  "&seed=" + std::to_string(seed);
  if (generator != "hne") return u;
  const SyntheticSpec defaults;
  for (const RealKey& k : real_keys)
    if (k.always || this->*k.spec != defaults.*k.spec) u += "&" + std::string(k.key) + "=" + real_text(this->*k.spec);
  if (tissue != defaults.tissue) u += "&tissue=" + tissue;
  if (jpeg != defaults.jpeg) u += "&jpeg=" + std::to_string(jpeg);
  return u;
}

std::string SyntheticSpec::key(std::int64_t index) const {
  if (generator == "tem") return tem::frame_name(tem_params(), static_cast<int>(index));
  return generator + "-" + std::to_string(index);
}

tem::Params SyntheticSpec::tem_params() const {
  tem::Params p = tem;
  p.width = width;
  p.height = height;
  p.frames = static_cast<int>(count);
  p.seed = seed;
  return p;
}

Json SyntheticSpec::truth_attrs(std::int64_t index) const {
  if (generator != "tem" || index < 0 || index >= count) return Json::object();
  const tem::Params p = tem_params();
  const tem::Motion m = tem::truth(p).at(static_cast<std::size_t>(index));
  return {{"truth", {{"tx", m.tx}, {"ty", m.ty}, {"angle", m.angle}}}, {"lattice_period", p.period}};
}

SyntheticSpec parse_synthetic_uri(std::string_view uri) {
  if (!is_synthetic_uri(uri))
    throw Error("'" + std::string(uri) + "' is not a synthetic data set (expected synthetic:GENERATOR?key=value&...)");
  std::string_view rest = uri.substr(synthetic_scheme.size());
  const auto q = rest.find('?');
  SyntheticSpec spec;
  spec.generator = std::string(rest.substr(0, q));
  if (spec.generator != "blobs" && spec.generator != "hne" && spec.generator != "tem")
    bad_uri(uri, "unknown generator '" + spec.generator + "' (valid: " + std::string(valid_generators) + ")");
  const bool is_hne = spec.generator == "hne", is_tem = spec.generator == "tem";
  const std::string_view valid_keys = is_hne ? hne_keys : is_tem ? tem_keys : blobs_keys;
  if (is_tem) {
    const tem::Params defaults;
    spec.width = defaults.width;
    spec.height = defaults.height;
    spec.count = defaults.frames;
  }
  auto check_hne = [&] {
    try {
      if (is_hne) hne::validate(hne_params(spec));
      if (is_tem) tem::validate(spec.tem_params());
    } catch (const std::invalid_argument& e) {
      std::string what = e.what();
      constexpr std::string_view tem_prefix = "flowd::tem: ";
      if (what.starts_with(tem_prefix)) what.erase(0, tem_prefix.size());
      bad_uri(uri, is_hne ? hne_message(e) : what);
    }
  };
  if (q == std::string_view::npos) {
    check_hne();
    return spec;
  }
  std::string_view query = rest.substr(q + 1);
  // A condition is a starting point: the keys given beside it override it,
  // wherever they stand, so it is applied first.
  if (const auto condition = is_hne ? query_value(query, "condition") : std::nullopt) {
    hne::Params p;
    try {
      hne::apply_condition(*condition, p);
    } catch (const std::invalid_argument& e) {
      bad_uri(uri, hne_message(e));
    }
    set_hne_fields(spec, p);
  }
  std::vector<std::string_view> seen;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    if (eq == std::string_view::npos) bad_uri(uri, "'" + std::string(key) + "' has no value (expected key=value)");
    const std::string_view value = pair.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) bad_uri(uri, "'" + std::string(key) + "' given twice");
    seen.push_back(key);
    if (is_tem && key == "frames")
      spec.count = static_cast<std::int64_t>(parse_number(uri, key, value, 1, 100000));
    else if (is_tem && key == "size")
      spec.width = spec.height = static_cast<int>(parse_number(uri, key, value, 1, max_side));
    else if (is_tem && key == "count")
      bad_uri(uri, "'count' is called 'frames' for tem");
    else if (const TemKey* t = is_tem ? find_tem_key(key) : nullptr)
      spec.tem.*t->field = parse_real(uri, key, value);
    else if (key == "width")
      spec.width = static_cast<int>(parse_number(uri, key, value, 1, max_side));
    else if (key == "height")
      spec.height = static_cast<int>(parse_number(uri, key, value, 1, max_side));
    else if (key == "count")
      spec.count = static_cast<std::int64_t>(parse_number(uri, key, value, 1, max_count));
    else if (key == "seed")
      spec.seed = parse_number(uri, key, value, 0, UINT64_MAX);
    else if (is_hne && key == "condition")
      continue;  // applied above
    else if (is_hne && key == "tissue")
      spec.tissue = std::string(value);
    else if (is_hne && key == "jpeg")
      spec.jpeg = static_cast<int>(parse_number(uri, key, value, 0, 100));
    else if (const RealKey* k = is_hne ? find_real_key(key) : nullptr)
      spec.*k->spec = parse_real(uri, key, value);
    else
      bad_uri(uri, "unknown key '" + std::string(key) + "' (valid: " + std::string(valid_keys) + ")");
  }
  check_hne();
  return spec;
}

cv::Mat synthetic_blobs(int width, int height, std::uint64_t index, std::uint64_t seed) {
  if (width < 1 || height < 1 || width > max_side || height > max_side)
    throw Error("synthetic_blobs: size " + std::to_string(width) + "x" + std::to_string(height) + " outside [1, " +
                std::to_string(max_side) + "]");
  const std::uint64_t base = mix64(mix64(mix64(seed) ^ index) ^
                                   (static_cast<std::uint64_t>(width) << 32 | static_cast<std::uint64_t>(height)));
  Random layout(base);
  Random noise(mix64(base ^ 0x6e6f697365ULL));
  cv::Mat img(height, width, CV_8UC3);
  paint_background(img, layout);
  for (const auto& k : place_nuclei(width, height, layout))
    paint_nucleus(img, k);
  blur3(img);
  add_noise(img, noise);
  return img;
}

cv::Mat synthetic_image(const SyntheticSpec& spec, std::int64_t index) {
  if (index < 0 || index >= spec.count)
    throw Error("synthetic data set '" + spec.uri() + "' has no image " + std::to_string(index));
  if (spec.generator == "tem") {
    try {
      return tem::generate(spec.tem_params(), static_cast<int>(index));
    } catch (const std::exception& e) {
      throw Error("synthetic data set '" + spec.uri() + "': " + e.what());
    }
  }
  if (spec.generator == "hne") {
    try {
      return hne::generate(hne_params(spec), static_cast<int>(index)).rgb;
    } catch (const std::invalid_argument& e) {
      throw Error("synthetic data set '" + spec.uri() + "': " + e.what());
    }
  }
  return synthetic_blobs(spec.width, spec.height, static_cast<std::uint64_t>(index), spec.seed);
}

}  // namespace flowd::io

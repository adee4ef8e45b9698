#include "prnu/generate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <stdexcept>
#include <string>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "synth/counter_stream.hpp"

namespace flowd::prnu {

namespace {

constexpr double pi = std::numbers::pi;

// The generators' counter-based stream (tools/common/synth): a camera, a
// file or a scene is found without replaying the others, and adding cameras
// or images leaves the existing ones as they were.
class Stream : public synth::CounterStream {
public:
  explicit Stream(std::uint64_t key) : CounterStream(mix(key)) {}
  Stream(std::uint64_t key, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0)
      : CounterStream(mix(mix(mix(mix(key) ^ a) ^ (b + 0x5bd1e995)) ^ (c + 0x27d4eb2f165667c5ULL))) {}
  // cv::RNG fills whole fields far faster than per-pixel hashing; seeding it
  // from the stream keeps the field a function of the stream's key.
  cv::RNG rng() { return cv::RNG(bits() | 1); }
};

// Stream purposes, so the draws of one never correlate with another's.
enum Purpose : std::uint64_t {
  model_traits = 1,
  model_pattern,
  camera_traits,
  camera_prnu,
  camera_dark,
  scene_draws,
  exposure_draws,
  plan_flat,
  plan_image,
  photo_pick,
};

void check(bool ok, const std::string& name, const std::string& range, double value) {
  if (!ok) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", value);
    throw std::invalid_argument("flowd::prnu: " + name + " must be " + range + ", got " + buf);
  }
}

cv::Mat normal_field(cv::Size size, Stream& s) {
  cv::Mat m(size, CV_32FC1);
  cv::RNG rng = s.rng();
  rng.fill(m, cv::RNG::NORMAL, 0.0, 1.0);
  return m;
}

// Zero mean, RMS `rms` exactly, so a camera's sigma in the truth is the
// sigma of its pattern and not only of the distribution it came from.
void standardise(cv::Mat& m, double rms) {
  cv::Scalar mean, sd;
  cv::meanStdDev(m, mean, sd);
  m.convertTo(m, CV_32F, sd[0] > 0.0 ? rms / sd[0] : 0.0, sd[0] > 0.0 ? -mean[0] * rms / sd[0] : 0.0);
}

// 1/f-like noise: white noise added at every scale of a pyramid, coarse to
// fine, each level cubic-upsampled into the next, amplitude proportional to
// the scale^roughness (1: the amplitude spectrum of natural images).
// `min_cell` > 1 stops before the finest levels (only smooth variation).
// Zero mean, unit RMS.
cv::Mat fractal(cv::Size size, Stream& s, double roughness, int min_cell = 1) {
  std::vector<cv::Size> levels;  // finest first; each about half the one before, plus a margin
  for (int cell = 1; cell <= std::max(size.width, size.height) / 2; cell *= 2)
    levels.emplace_back(size.width / cell + 2, size.height / cell + 2);
  cv::Mat sum;
  for (int l = static_cast<int>(levels.size()) - 1; l >= 0; --l) {
    if (!sum.empty()) {
      cv::Mat up;
      cv::resize(sum, up, levels[static_cast<std::size_t>(l)], 0, 0, cv::INTER_CUBIC);
      sum = up;
    }
    const int cell = 1 << l;
    if (cell < min_cell) {
      if (sum.empty()) sum = cv::Mat::zeros(levels[static_cast<std::size_t>(l)], CV_32FC1);
      continue;
    }
    const cv::Mat g = normal_field(levels[static_cast<std::size_t>(l)], s);
    if (sum.empty())
      sum = g * std::pow(static_cast<double>(cell), roughness);
    else
      cv::scaleAdd(g, std::pow(static_cast<double>(cell), roughness), sum, sum);
  }
  cv::Mat out = sum(cv::Rect(1, 1, size.width, size.height)).clone();
  standardise(out, 1.0);
  return out;
}

double luminance(const cv::Mat& bgr) {
  const cv::Scalar m = cv::mean(bgr);
  return 0.114 * m[0] + 0.587 * m[1] + 0.299 * m[2];
}

// Blend `colour` (CV_32FC3, same size as the ROI) into img through an 8-bit
// mask drawn in roi coordinates, softened by a Gaussian of `soft` pixels.
void blend(cv::Mat& img, cv::Rect roi, cv::Mat mask8, cv::Mat colour, double soft) {
  // Only the part the (softened) mask covers: most masks are small.
  const int pad = static_cast<int>(std::ceil(4.0 * soft)) + 1;
  cv::Rect box = cv::boundingRect(mask8);
  if (box.area() == 0) return;
  box = cv::Rect(box.x - pad, box.y - pad, box.width + 2 * pad, box.height + 2 * pad) &
        cv::Rect(0, 0, mask8.cols, mask8.rows);
  mask8 = mask8(box);
  colour = colour(box);
  roi = cv::Rect(roi.x + box.x, roi.y + box.y, box.width, box.height);
  cv::Mat m;
  mask8.convertTo(m, CV_32F, 1.0 / 255.0);
  if (soft > 0.0) cv::GaussianBlur(m, m, cv::Size(), soft, soft, cv::BORDER_CONSTANT);
  cv::Mat m3;
  cv::merge(std::vector<cv::Mat>{m, m, m}, m3);
  cv::Mat target = img(roi);
  const cv::Mat inv = cv::Scalar::all(1.0) - m3;
  const cv::Mat kept = target.mul(inv), added = colour.mul(m3);
  cv::add(kept, added, target);  // into the ROI of img
}

cv::Vec3f random_colour(Stream& s, double lo, double hi) {
  // Mostly muted colours: a grey level and a smaller per-channel spread.
  const double grey = s.uniform(lo, hi), sat = s.uniform(0.0, 0.8);
  cv::Vec3f c;
  for (int i = 0; i < 3; ++i)
    c[i] = static_cast<float>(std::max(0.002, grey * (1.0 + sat * s.uniform(-1.0, 1.0))));
  return c;
}

cv::Mat textured(const cv::Mat& tex, const cv::Rect& roi, cv::Vec3f colour, double amount) {
  cv::Mat t;
  cv::exp(tex(roi) * amount, t);
  cv::Mat out;
  cv::merge(std::vector<cv::Mat>{t * colour[0], t * colour[1], t * colour[2]}, out);
  return out;
}

cv::Mat flat_scene(cv::Size size, Stream& s) {
  // A sky or wall: one tint, a linear gradient of up to +-15 %, and very
  // smooth undulations of a few percent; the brightest point stays well
  // below saturation whatever the PRNU and noise add.
  cv::Vec3f tint;
  for (int i = 0; i < 3; ++i)  // near-neutral, so the colour matrix cannot push a channel to saturation
    tint[i] = static_cast<float>(1.0 + s.uniform(-0.1, 0.1));
  const double slope = s.uniform(0.0, 0.15), theta = s.uniform(0.0, 2.0 * pi);
  const double amp = s.uniform(0.0, 0.03);
  cv::Mat wave = fractal(size, s, 1.0, std::max(32, std::max(size.width, size.height) / 8));
  cv::Mat lum(size, CV_32FC1);
  const double cx = size.width / 2.0, cy = size.height / 2.0, r = std::hypot(cx, cy);
  for (int y = 0; y < size.height; ++y) {
    auto* row = lum.ptr<float>(y);
    const auto* w = wave.ptr<float>(y);
    for (int x = 0; x < size.width; ++x)
      row[x] = static_cast<float>(1.0 + slope * ((x - cx) * std::cos(theta) + (y - cy) * std::sin(theta)) / r +
                                  amp * w[x]);
  }
  const double level = s.uniform(0.45, 0.62);
  cv::Mat out;
  cv::merge(std::vector<cv::Mat>{lum * tint[0], lum * tint[1], lum * tint[2]}, out);
  out *= level / std::max(1e-6, luminance(out));
  return out;
}

const char* const glyphs = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 .,:-/";

cv::Mat natural_scene(cv::Size size, Stream& s) {
  const int W = size.width, H = size.height, side = std::min(W, H);
  cv::Mat t1 = fractal(size, s, s.uniform(0.8, 1.2));  // smooth, large-scale texture
  cv::Mat t2 = fractal(size, s, s.uniform(0.2, 0.6));  // rough, fine texture (foliage, fabric, gravel)
  const cv::Rect all(0, 0, W, H);

  // Ground: a coloured texture, the fine part in varying strength.
  const double w1 = s.uniform(0.3, 0.8), w2 = s.uniform(0.1, 0.9);
  cv::Mat tex = t1 * w1 + t2 * w2;
  cv::Mat img = textured(tex, all, random_colour(s, 0.05, 0.4), 1.0);

  // Foliage, gravel, fabric: a region of fine, high-contrast texture - the
  // scene content that leaks most into a noise residual.
  if (s.uniform() < 0.6) {
    cv::Mat t3 = fractal(size, s, s.uniform(0.0, 0.3));
    cv::Mat leaves;
    cv::exp(t3 * -s.uniform(2.0, 5.0), leaves);
    leaves = 1.0 / (1.0 + leaves);  // a sigmoid: lit leaves and dark gaps
    cv::Mat region = fractal(size, s, 1.0, std::max(16, side / 16));
    cv::Mat mask;
    cv::threshold(region, mask, s.uniform(-0.5, 0.8), 255.0, cv::THRESH_BINARY);
    mask.convertTo(mask, CV_8U);
    const cv::Vec3f colour = random_colour(s, 0.05, 0.6);
    cv::Mat content;
    cv::merge(std::vector<cv::Mat>{leaves * colour[0], leaves * colour[1], leaves * colour[2]}, content);
    blend(img, all, mask, content, s.uniform(0.0, 2.0));
  }

  // Sky above a wavy horizon in half the scenes: a bright vertical gradient,
  // often beyond full scale (saturated), with faint clouds.
  if (s.uniform() < 0.5) {
    const double horizon = s.uniform(0.15, 0.55) * H, sky = s.uniform(0.6, 2.5);
    const cv::Vec3f blue = s.uniform() < 0.6 ? cv::Vec3f(1.0f, 0.8f, 0.6f) : cv::Vec3f(1.0f, 1.0f, 1.0f);
    cv::Mat mask = cv::Mat::zeros(size, CV_8UC1);
    std::vector<cv::Point> poly{{0, 0}, {W - 1, 0}};
    const double a1 = s.uniform(-0.1, 0.1) * H, f1 = s.uniform(1.0, 6.0), p1 = s.uniform(0.0, 2 * pi);
    for (int i = 0; i <= 32; ++i) {
      const double x = (W - 1) * (1.0 - i / 32.0);
      poly.emplace_back(static_cast<int>(x), static_cast<int>(horizon + a1 * std::sin(f1 * x / W * 2 * pi + p1) +
                                                              0.03 * H * t1.at<float>(H / 2, static_cast<int>(x))));
    }
    cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{poly}, cv::Scalar(255), cv::LINE_AA);
    cv::Mat grad(size, CV_32FC3);
    for (int y = 0; y < H; ++y) {
      const float g = static_cast<float>(sky * (0.55 + 0.45 * y / std::max(1.0, horizon)));
      const auto* c = t1.ptr<float>(y);
      auto* row = grad.ptr<cv::Vec3f>(y);
      for (int x = 0; x < W; ++x)
        row[x] = blue * (g * (1.0f + 0.05f * c[x]));
    }
    blend(img, all, mask, grad, s.uniform(0.0, 1.5));
  }

  // Objects: ellipses, rotated boxes and polygons, each textured, some out
  // of focus (soft edges), sizes log-uniform from 2 % to 40 % of the frame.
  const int objects = s.uniform_int(5, 40);
  for (int i = 0; i < objects; ++i) {
    const double r = side * std::exp(s.uniform(std::log(0.01), std::log(0.2)));
    const double cx = s.uniform(-0.1, 1.1) * W, cy = s.uniform(-0.1, 1.1) * H;
    const int pad = static_cast<int>(r * 1.5) + 8;
    const cv::Rect roi =
        cv::Rect(static_cast<int>(cx) - pad, static_cast<int>(cy) - pad, 2 * pad, 2 * pad) & all;
    if (roi.area() == 0) continue;
    cv::Mat mask = cv::Mat::zeros(roi.size(), CV_8UC1);
    const cv::Point2f c(static_cast<float>(cx - roi.x), static_cast<float>(cy - roi.y));
    const int kind = s.uniform_int(0, 2);
    const double angle = s.uniform(0.0, 180.0), aspect = s.uniform(0.3, 1.0);
    if (kind == 0) {
      cv::ellipse(mask, cv::RotatedRect(c, cv::Size2f(static_cast<float>(2 * r), static_cast<float>(2 * r * aspect)),
                                        static_cast<float>(angle)),
                  cv::Scalar(255), cv::FILLED, cv::LINE_AA);
    } else {
      std::vector<cv::Point> pts;
      if (kind == 1) {
        cv::Point2f v[4];
        cv::RotatedRect(c, cv::Size2f(static_cast<float>(2 * r), static_cast<float>(2 * r * aspect)),
                        static_cast<float>(angle))
            .points(v);
        for (const auto& q : v)
          pts.emplace_back(cvRound(q.x), cvRound(q.y));
      } else {
        const int n = s.uniform_int(3, 8);
        for (int k = 0; k < n; ++k) {
          const double a = 2 * pi * (k + s.uniform(-0.3, 0.3)) / n, rr = r * s.uniform(0.5, 1.0);
          pts.emplace_back(cvRound(c.x + rr * std::cos(a)), cvRound(c.y + rr * std::sin(a)));
        }
      }
      cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{pts}, cv::Scalar(255), cv::LINE_AA);
    }
    const double soft = s.uniform() < 0.6 ? 0.0 : s.uniform(0.5, 4.0);
    const double o1 = s.uniform(0.0, 0.6), o2 = s.uniform(0.0, 0.6);
    cv::Mat otex = t1(roi) * o1 + t2(roi) * o2;
    blend(img, roi, mask, textured(otex, cv::Rect(0, 0, roi.width, roi.height), random_colour(s, 0.02, 0.8), 1.0),
          soft);
  }

  // Thin high-contrast strokes: wires, branches, edges of railings.
  const int strokes = s.uniform_int(0, 12);
  if (strokes > 0) {
    cv::Mat mask = cv::Mat::zeros(size, CV_8UC1);
    for (int i = 0; i < strokes; ++i) {
      std::vector<cv::Point> pts;
      double x = s.uniform(0.0, W), y = s.uniform(0.0, H), a = s.uniform(0.0, 2 * pi);
      for (int k = 0; k < 8; ++k) {
        pts.emplace_back(cvRound(x), cvRound(y));
        a += s.uniform(-0.4, 0.4);
        const double step = s.uniform(0.02, 0.15) * side;
        x += step * std::cos(a), y += step * std::sin(a);
      }
      cv::polylines(mask, std::vector<std::vector<cv::Point>>{pts}, false, cv::Scalar(255), s.uniform_int(1, 3),
                    cv::LINE_AA);
    }
    blend(img, all, mask, cv::Mat(size, CV_32FC3, cv::Scalar::all(s.uniform(0.005, 0.03))), 0.0);
  }

  // Text: signs, labels, printed pages - dark on light or light on dark.
  if (s.uniform() < 0.6) {
    const int lines = s.uniform_int(1, 8);
    const double scale = s.uniform(0.3, 2.0) * side / 512.0;
    const int thickness = std::max(1, static_cast<int>(std::lround(scale * s.uniform(1.0, 2.5))));
    const int x0 = static_cast<int>(s.uniform(0.0, 0.5) * W), y0 = static_cast<int>(s.uniform(0.1, 0.7) * H);
    const int line_h = static_cast<int>(30 * scale) + 4, chars = s.uniform_int(6, 30);
    const cv::Rect board = cv::Rect(x0 - line_h / 2, y0 - line_h, W, (lines + 1) * line_h) & all;
    const bool dark_text = s.uniform() < 0.7;
    if (board.area() > 0) {
      // The board behind the text: paper or a sign.
      cv::Mat back = cv::Mat::zeros(board.size(), CV_8UC1);
      back.setTo(255);
      blend(img, board, back,
            cv::Mat(board.size(), CV_32FC3,
                    cv::Scalar::all(dark_text ? s.uniform(0.4, 0.9) : s.uniform(0.01, 0.06))),
            0.0);
      cv::Mat mask = cv::Mat::zeros(size, CV_8UC1);
      const std::string g = glyphs;
      for (int l = 0; l < lines; ++l) {
        std::string text;
        for (int k = 0; k < chars; ++k)
          text += g[static_cast<std::size_t>(s.uniform_int(0, static_cast<int>(g.size()) - 1))];
        cv::putText(mask, text, cv::Point(x0, y0 + l * line_h), s.uniform_int(0, 7), scale, cv::Scalar(255),
                    thickness, cv::LINE_AA);
      }
      blend(img, all, mask,
            cv::Mat(size, CV_32FC3, cv::Scalar::all(dark_text ? s.uniform(0.005, 0.03) : s.uniform(0.6, 1.2))), 0.0);
    }
  }

  // Uneven light: a smooth illumination field and a shadow that makes part
  // of the scene dark (where PRNU is buried in read noise).
  cv::Mat light = fractal(size, s, 1.0, std::max(16, side / 8));
  cv::exp(light * s.uniform(0.1, 0.5), light);
  if (s.uniform() < 0.6) {
    cv::Mat mask = cv::Mat::zeros(size, CV_8UC1);
    std::vector<cv::Point> pts;
    const int n = s.uniform_int(3, 7);
    const double cx = s.uniform(0.0, W), cy = s.uniform(0.0, H), r = s.uniform(0.2, 0.7) * side;
    for (int k = 0; k < n; ++k) {
      const double a = 2 * pi * (k + s.uniform(-0.3, 0.3)) / n;
      pts.emplace_back(cvRound(cx + r * std::cos(a)), cvRound(cy + r * std::sin(a)));
    }
    cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{pts}, cv::Scalar(255), cv::LINE_AA);
    cv::Mat m;
    mask.convertTo(m, CV_32F, 1.0 / 255.0);
    const double soft = s.uniform(2.0, 0.05 * side);
    cv::GaussianBlur(m, m, cv::Size(), soft, soft);
    light = light.mul(1.0 - m * (1.0 - s.uniform(0.02, 0.25)));
  }
  cv::Mat light3;
  cv::merge(std::vector<cv::Mat>{light, light, light}, light3);
  img = img.mul(light3);

  // Light sources and specular highlights: far beyond full scale.
  const int lamps = s.uniform() < 0.5 ? s.uniform_int(1, 6) : 0;
  for (int i = 0; i < lamps; ++i) {
    const double r = side * std::exp(s.uniform(std::log(0.003), std::log(0.06)));
    const int lx = cvRound(s.uniform(0.0, W)), ly = cvRound(s.uniform(0.0, H));
    const cv::Point c(lx, ly);
    const int pad = static_cast<int>(3 * r) + 8;
    const cv::Rect roi = cv::Rect(c.x - pad, c.y - pad, 2 * pad, 2 * pad) & all;
    if (roi.area() == 0) continue;
    cv::Mat mask = cv::Mat::zeros(roi.size(), CV_8UC1);
    cv::circle(mask, c - roi.tl(), std::max(1, cvRound(r)), cv::Scalar(255), cv::FILLED, cv::LINE_AA);
    blend(img, roi, mask, cv::Mat(roi.size(), CV_32FC3, cv::Scalar::all(s.uniform(3.0, 30.0))), r / 3.0);
  }

  // Auto exposure's reference: a mid-grey mean, the camera varies it.
  img = cv::max(img, 0.0);
  img *= 0.18 / std::max(1e-6, luminance(img));
  return img;
}

int bayer_code(Cfa cfa, bool edge_aware) {
  // OpenCV names a Bayer layout by the second row's second and third pixels
  // (checked by demosaicing known colours): RGGB is its "BG".
  switch (cfa) {
  case Cfa::rggb:
    return edge_aware ? cv::COLOR_BayerBG2BGR_EA : cv::COLOR_BayerBG2BGR;
  case Cfa::bggr:
    return edge_aware ? cv::COLOR_BayerRG2BGR_EA : cv::COLOR_BayerRG2BGR;
  case Cfa::grbg:
    return edge_aware ? cv::COLOR_BayerGB2BGR_EA : cv::COLOR_BayerGB2BGR;
  case Cfa::gbrg:
    return edge_aware ? cv::COLOR_BayerGR2BGR_EA : cv::COLOR_BayerGR2BGR;
  }
  return cv::COLOR_BayerBG2BGR;
}

// The BGR channel index of the colour filter at (x, y).
std::array<int, 4> cfa_channels(Cfa cfa) {  // (0,0), (1,0), (0,1), (1,1) as [2*(y&1) + (x&1)]
  switch (cfa) {
  case Cfa::rggb:
    return {2, 1, 1, 0};
  case Cfa::bggr:
    return {0, 1, 1, 2};
  case Cfa::grbg:
    return {1, 2, 0, 1};
  case Cfa::gbrg:
    return {1, 0, 2, 1};
  }
  return {2, 1, 1, 0};
}

// Colour matrix, clipping, gamma and sharpening of a demosaiced linear
// image (CV_32FC3): the model's pipeline after demosaicing.
cv::Mat finish(const Camera& cam, const cv::Mat& linear) {
  cv::Mat f;
  cv::transform(linear, f, cv::Matx33f(cam.colour));
  f = cv::min(cv::max(f, 0.0), 1.0);
  cv::pow(f, 1.0 / cam.gamma, f);
  if (cam.sharpen > 0.0) {
    cv::Mat blur;
    cv::GaussianBlur(f, blur, cv::Size(), 1.0, 1.0, cv::BORDER_REFLECT);
    cv::addWeighted(f, 1.0 + cam.sharpen, blur, -cam.sharpen, 0.0, f);
  }
  return f;
}

std::vector<std::uint8_t> encode(const cv::Mat& img, int quality) {
  std::vector<std::uint8_t> bytes;
  const bool ok = quality > 0 ? cv::imencode(".jpg", img, bytes, {cv::IMWRITE_JPEG_QUALITY, quality})
                              : cv::imencode(".png", img, bytes);
  if (!ok) throw std::runtime_error("flowd::prnu: the image could not be encoded");
  return bytes;
}

std::string padded(int k, int count) {
  const int digits = std::max(2, static_cast<int>(std::to_string(std::max(count - 1, 0)).size()));
  const std::string n = std::to_string(k);
  return std::string(static_cast<std::size_t>(std::max(0, digits - static_cast<int>(n.size()))), '0') + n;
}

}  // namespace

void validate(const Params& p) {
  check(p.cameras >= 1 && p.cameras <= 100, "cameras", "in [1, 100]", p.cameras);
  check(p.models >= 1 && p.models <= 8, "models", "in [1, 8]", p.models);
  check(p.flatfields >= 0 && p.flatfields <= 10000, "flatfields", "in [0, 10000]", p.flatfields);
  check(p.images >= 0 && p.images <= 10000, "images", "in [0, 10000]", p.images);
  check(p.shifted >= 0 && p.shifted <= 10000, "shift", "in [0, 10000]", p.shifted);
  check(p.width >= 64 && p.width <= 16384, "width", "in [64, 16384]", p.width);
  check(p.height >= 64 && p.height <= 16384, "height", "in [64, 16384]", p.height);
  check(p.qualities.size() >= 1, "quality", "a list of at least one JPEG quality", 0);
  for (const int q : p.qualities)
    check(q >= 1 && q <= 100, "quality", "in [1, 100]", q);
  check(p.flat_quality >= 0 && p.flat_quality <= 100, "flat_quality", "in [0, 100] (0: PNG)", p.flat_quality);
  check(p.portrait >= 0.0 && p.portrait <= 1.0, "portrait", "in [0, 1]", p.portrait);
  check(p.sigma_min >= 0.0 && p.sigma_min <= 0.2, "sigma_min", "in [0, 0.2]", p.sigma_min);
  check(p.sigma_max >= p.sigma_min && p.sigma_max <= 0.2, "sigma_max", "in [sigma_min, 0.2]", p.sigma_max);
  check(p.common >= 0.0 && p.common <= 0.05, "common", "in [0, 0.05]", p.common);
}

cv::Size sensor_size(const Params& p, int model) {
  if (model < 0 || model >= p.models)
    throw std::out_of_range("flowd::prnu: no model " + std::to_string(model) + " of " + std::to_string(p.models));
  if (model == 0) return {p.width, p.height};
  auto grow = [&](int v) { return std::max(16, static_cast<int>(std::lround(v * (1.0 + model / 8.0) / 16.0)) * 16); };
  return {grow(p.width), grow(p.height)};
}

std::string camera_name(int index) {
  if (index < 0) throw std::out_of_range("flowd::prnu: negative camera index");
  std::string letters;
  for (int n = index + 1; n > 0; n = (n - 1) / 26)  // bijective base 26: A..Z, AA..
    letters.insert(letters.begin(), static_cast<char>('A' + (n - 1) % 26));
  return "cam" + letters;
}

Camera make_camera(const Params& p, int index) {
  validate(p);
  if (index < 0 || index >= p.cameras * p.models)
    throw std::out_of_range("flowd::prnu: no camera " + std::to_string(index) + " of " +
                            std::to_string(p.cameras * p.models));
  Camera cam;
  cam.name = camera_name(index);
  cam.index = index;
  cam.model = index / p.cameras;
  cam.size = sensor_size(p, cam.model);
  const cv::Size size = cam.size;

  // What every camera of the model shares: sensor design, lens, pipeline.
  Stream m(p.seed, model_traits, static_cast<std::uint64_t>(cam.model));
  cam.cfa = static_cast<Cfa>(m.uniform_int(0, 3));
  cam.edge_aware = m.uniform() < 0.5;
  cam.full_well = m.uniform(5000.0, 15000.0);
  cam.read_noise = m.uniform(1.5, 4.0);
  const double blue = m.uniform(0.55, 0.8), red = m.uniform(0.45, 0.65);
  cam.sensitivity = cv::Vec3d(blue, 1.0, red);
  const double mix = m.uniform(0.3, 0.7);
  for (int i = 0; i < 3; ++i) {
    double off = 0.0;
    for (int j = 0; j < 3; ++j)
      if (i != j) off += (cam.colour(i, j) = -0.5 * mix * m.uniform(0.5, 1.5));
    cam.colour(i, i) = 1.0 - off;
  }
  cam.gamma = m.uniform(2.1, 2.3);
  cam.sharpen = m.uniform(0.0, 0.8);
  const double vignetting = m.uniform(0.1, 0.3);

  // The model's non-unique pattern: column and row gains (readout
  // amplifiers) and a periodic 8x8 tile, scaled to `common` RMS.
  Stream mp(p.seed, model_pattern, static_cast<std::uint64_t>(cam.model));
  cv::Mat cols = normal_field(cv::Size(size.width, 1), mp), rows = normal_field(cv::Size(1, size.height), mp);
  cv::Mat tile = normal_field(cv::Size(8, 8), mp);
  cv::Mat common = cv::repeat(cols, size.height, 1) * 0.6 + cv::repeat(rows, 1, size.width) * 0.3;
  cv::Mat tiled = cv::repeat(tile, (size.height + 7) / 8, (size.width + 7) / 8);
  common += tiled(cv::Rect(0, 0, size.width, size.height)) * 0.6;
  standardise(common, p.common);
  cam.common = common;

  // The camera's own: PRNU strength, lens mounting, K, dark signal.
  Stream c(p.seed, camera_traits, static_cast<std::uint64_t>(index));
  cam.sigma = c.uniform(p.sigma_min, p.sigma_max);
  cam.vignetting = std::clamp(vignetting + 0.02 * c.normal(), 0.05, 0.4);
  cam.optical_centre = {(size.width - 1) / 2.0 + 0.02 * size.width * c.normal(),
                        (size.height - 1) / 2.0 + 0.02 * size.height * c.normal()};
  const double correlated = c.uniform(0.15, 0.35);  // share of K's variance that is spatially correlated

  Stream k(p.seed, camera_prnu, static_cast<std::uint64_t>(index));
  cv::Mat white = normal_field(size, k), smooth = normal_field(size, k);
  cv::GaussianBlur(smooth, smooth, cv::Size(), 1.5, 1.5, cv::BORDER_REFLECT);
  standardise(smooth, 1.0);
  cv::Mat prnu = white * std::sqrt(1.0 - correlated) + smooth * std::sqrt(correlated);
  standardise(prnu, cam.sigma);
  cam.prnu = prnu;

  Stream d(p.seed, camera_dark, static_cast<std::uint64_t>(index));
  cv::Mat dark = normal_field(size, d);
  const double dsnu = d.uniform(0.5, 2.0);
  dark = cv::abs(dark * dsnu + 1.0);
  // Hot pixels: about 2 per 100 000, tens to thousands of electrons.
  const int hot = static_cast<int>(size.area() * 2e-5);
  for (int i = 0; i < hot; ++i) {
    const int x = d.uniform_int(0, size.width - 1), y = d.uniform_int(0, size.height - 1);
    dark.at<float>(y, x) = static_cast<float>(std::exp(d.uniform(std::log(30.0), std::log(3000.0))));
  }
  cam.dark = dark;
  return cam;
}

cv::Mat visible_prnu(const Camera& cam) {
  // A neutral scene after white balance is (1 + K) on every filter; the
  // pipeline is (nearly) linear in K there, so push 1 + K through it at a
  // level where 16 bits resolve K, and take the relative change.
  constexpr double level = 0.5;
  cv::Mat raw;
  cv::Mat(cam.prnu + 1.0).convertTo(raw, CV_16U, level * 65535.0);
  cv::Mat bgr;
  cv::cvtColor(raw, bgr, bayer_code(cam.cfa, cam.edge_aware));
  bgr.convertTo(bgr, CV_32F, 1.0 / (level * 65535.0));
  cv::Mat f;
  cv::transform(bgr, f, cv::Matx33f(cam.colour));
  f -= cv::Scalar::all(1.0);
  if (cam.sharpen > 0.0) {
    cv::Mat blur;
    cv::GaussianBlur(f, blur, cv::Size(), 1.0, 1.0, cv::BORDER_REFLECT);
    cv::addWeighted(f, 1.0 + cam.sharpen, blur, -cam.sharpen, 0.0, f);
  }
  return f;
}

cv::Mat make_scene(Scene kind, cv::Size size, std::uint64_t seed) {
  if (size.width < 16 || size.height < 16)
    throw std::invalid_argument("flowd::prnu: a scene needs at least 16 x 16 pixels");
  Stream s(seed, scene_draws, static_cast<std::uint64_t>(kind));
  return kind == Scene::flat ? flat_scene(size, s) : natural_scene(size, s);
}

cv::Mat scene_from_photo(const cv::Mat& bgr, cv::Size size, std::uint64_t seed) {
  if (bgr.empty() || bgr.type() != CV_8UC3) throw std::invalid_argument("flowd::prnu: a photo must be CV_8UC3");
  Stream s(seed, photo_pick);
  const double scale = std::max(static_cast<double>(size.width) / bgr.cols, static_cast<double>(size.height) / bgr.rows) *
                       s.uniform(1.0, 1.4);
  const cv::Size scaled(std::max(size.width, static_cast<int>(std::ceil(bgr.cols * scale))),
                        std::max(size.height, static_cast<int>(std::ceil(bgr.rows * scale))));
  cv::Mat big;
  cv::resize(bgr, big, scaled, 0, 0, scale < 1.0 ? cv::INTER_AREA : cv::INTER_CUBIC);
  const int x = s.uniform_int(0, scaled.width - size.width), y = s.uniform_int(0, scaled.height - size.height);
  cv::Mat crop = big(cv::Rect(x, y, size.width, size.height)).clone();
  if (s.uniform() < 0.5) cv::flip(crop, crop, 1);
  cv::Mat f;
  crop.convertTo(f, CV_32F, 1.0 / 255.0);
  cv::pow(f, 2.2, f);
  f *= 0.18 / std::max(1e-6, luminance(f));
  return f;
}

cv::Size scene_size(const Camera& cam, const Shot& shot) {
  return shot.rotation == 90 || shot.rotation == 270 ? cv::Size(cam.size.height, cam.size.width) : cam.size;
}

std::vector<std::uint8_t> shoot(const Camera& cam, const Shot& shot, const cv::Mat& irradiance) {
  if (cam.prnu.size() != cam.size || cam.common.size() != cam.size || cam.dark.size() != cam.size)
    throw std::invalid_argument("flowd::prnu: the camera's patterns do not match its size");
  check(shot.iso >= 1 && shot.iso <= 64, "iso", "in [1, 64]", shot.iso);
  check(shot.quality >= 0 && shot.quality <= 100, "quality", "in [0, 100]", shot.quality);
  check(shot.crop_quality >= 0 && shot.crop_quality <= 100, "crop_quality", "in [0, 100]", shot.crop_quality);
  check(shot.rotation == 0 || shot.rotation == 90 || shot.rotation == 180 || shot.rotation == 270, "rotation",
        "0, 90, 180 or 270", shot.rotation);
  const cv::Size ssize = scene_size(cam, shot);
  if (!shot.crop.empty() && (shot.crop & cv::Rect(0, 0, ssize.width, ssize.height)) != shot.crop)
    throw std::invalid_argument("flowd::prnu: the crop lies outside the image");
  cv::Mat scene = irradiance.empty() ? make_scene(shot.scene, ssize, shot.seed) : irradiance;
  if (scene.type() != CV_32FC3 || scene.size() != ssize)
    throw std::invalid_argument("flowd::prnu: the irradiance must be CV_32FC3 of " + std::to_string(ssize.width) +
                                " x " + std::to_string(ssize.height));
  // The camera turned for a portrait shot: the sensor saw the scene turned
  // back. (Into a new Mat: the caller's irradiance stays untouched.)
  if (shot.rotation != 0) {
    cv::Mat turned;
    cv::rotate(scene, turned,
               shot.rotation == 90    ? cv::ROTATE_90_COUNTERCLOCKWISE
               : shot.rotation == 180 ? cv::ROTATE_180
                                      : cv::ROTATE_90_CLOCKWISE);
    scene = turned;
  }

  Stream e(shot.seed, exposure_draws, static_cast<std::uint64_t>(shot.scene));
  // Auto exposure misses a mid-grey by up to +-1.5 EV on natural scenes; a
  // flat-field is exposed as metered. White balance is off by a few percent.
  const double exposure = shot.scene == Scene::flat ? 1.0 : std::clamp(std::exp2(0.6 * e.normal()), 0.35, 2.8);
  cv::Vec3d wb;
  for (int i = 0; i < 3; ++i)
    wb[i] = (i == 1 ? 1.0 : 1.0 + 0.03 * e.normal()) / cam.sensitivity[i];
  // The lens (and the sensor's anti-aliasing filter) soften the scene a
  // little; flat-fields have nothing to soften.
  if (shot.scene == Scene::natural) {
    const double blur = e.uniform(0.3, 0.8);
    cv::Mat soft;
    cv::GaussianBlur(scene, soft, cv::Size(), blur, blur, cv::BORDER_REFLECT);
    scene = soft;
  }
  const double full_well = cam.full_well / shot.iso, read2 = cam.read_noise * cam.read_noise;
  cv::Mat noise(cam.size, CV_32FC1);
  cv::RNG rng = e.rng();
  rng.fill(noise, cv::RNG::NORMAL, 0.0, 1.0);

  // The raw frame: irradiance through the colour filter, times 1 + K + the
  // model's pattern, times vignetting; shot noise (Gaussian with the Poisson
  // variance), dark signal, read noise; a 12-bit ADC clipping at full scale
  // (which erases K where the scene saturates); white balance in 16 bits.
  const auto chan = cfa_channels(cam.cfa);
  const double cx = cam.optical_centre.x, cy = cam.optical_centre.y;
  const double r2max = std::max({cx * cx + cy * cy, (cam.size.width - cx) * (cam.size.width - cx) + cy * cy,
                                 cx * cx + (cam.size.height - cy) * (cam.size.height - cy),
                                 (cam.size.width - cx) * (cam.size.width - cx) +
                                     (cam.size.height - cy) * (cam.size.height - cy)});
  cv::Mat raw(cam.size, CV_16UC1);
  for (int y = 0; y < cam.size.height; ++y) {
    const auto* irr = scene.ptr<cv::Vec3f>(y);
    const auto* k = cam.prnu.ptr<float>(y);
    const auto* cm = cam.common.ptr<float>(y);
    const auto* dk = cam.dark.ptr<float>(y);
    const auto* n = noise.ptr<float>(y);
    auto* out = raw.ptr<std::uint16_t>(y);
    const double dy2 = (y - cy) * (y - cy);
    for (int x = 0; x < cam.size.width; ++x) {
      const int ch = chan[static_cast<std::size_t>(2 * (y & 1) + (x & 1))];
      const double v = 1.0 - cam.vignetting * ((x - cx) * (x - cx) + dy2) / r2max;
      const double signal = irr[x][ch] * cam.sensitivity[ch] * exposure * (1.0 + k[x] + cm[x]) * v;
      const double electrons = std::max(0.0, signal * full_well) + dk[x];
      const double noisy = electrons + std::sqrt(electrons + read2) * n[x];
      const double adc = std::clamp(std::round(noisy / full_well * 4095.0), 0.0, 4095.0);
      out[x] = static_cast<std::uint16_t>(std::min(65535.0, std::round(adc * 16.0 * wb[ch])));
    }
  }
  cv::Mat bgr;
  cv::cvtColor(raw, bgr, bayer_code(cam.cfa, cam.edge_aware));
  bgr.convertTo(bgr, CV_32F, 1.0 / 65535.0);
  cv::Mat img8;
  finish(cam, bgr).convertTo(img8, CV_8U, 255.0);
  if (shot.rotation != 0) {
    cv::Mat turned;
    cv::rotate(img8, turned,
               shot.rotation == 90    ? cv::ROTATE_90_CLOCKWISE
               : shot.rotation == 180 ? cv::ROTATE_180
                                      : cv::ROTATE_90_COUNTERCLOCKWISE);
    img8 = turned;
  }

  std::vector<std::uint8_t> bytes = encode(img8, shot.quality);
  if (shot.crop.empty()) return bytes;
  // A cropped copy of the camera's file, saved again: the second
  // compression's 8x8 grid no longer lines up with the first.
  const cv::Mat first = cv::imdecode(bytes, cv::IMREAD_COLOR);
  return encode(first(shot.crop).clone(), shot.crop_quality);
}

cv::Mat render(const Camera& cam, const Shot& shot, const cv::Mat& irradiance) {
  return cv::imdecode(shoot(cam, shot, irradiance), cv::IMREAD_COLOR);
}

std::vector<Item> plan(const Params& p, int camera) {
  validate(p);
  if (camera < 0 || camera >= p.cameras * p.models)
    throw std::out_of_range("flowd::prnu: no camera " + std::to_string(camera));
  const std::string name = camera_name(camera);
  const cv::Size size = sensor_size(p, camera / p.cameras);
  const auto cam = static_cast<std::uint64_t>(camera);
  std::vector<Item> items;
  for (int k = 0; k < p.flatfields; ++k) {
    Stream s(p.seed, plan_flat, cam, static_cast<std::uint64_t>(k));
    Item it;
    it.file = "flatfields/" + name + "_" + padded(k, p.flatfields) + (p.flat_quality > 0 ? ".jpg" : ".png");
    it.camera = camera;
    it.index = k;
    it.flatfield = true;
    it.shot.scene = Scene::flat;
    it.shot.seed = s.bits();
    it.shot.quality = p.flat_quality;
    items.push_back(it);
  }
  const int queries = p.images + p.shifted;
  for (int k = 0; k < queries; ++k) {
    Stream s(p.seed, plan_image, cam, static_cast<std::uint64_t>(k));
    Item it;
    it.file = "images/" + name + "_" + padded(k, queries) + ".jpg";
    it.camera = camera;
    it.index = k;
    it.shot.scene = Scene::natural;
    it.shot.seed = s.bits();
    const double u = s.uniform();  // most photos in daylight, some in dim light at high ISO
    it.shot.iso = u < 0.5 ? 1 : u < 0.75 ? 2 : u < 0.9 ? 4 : 8;
    const auto pick = [&] { return p.qualities[static_cast<std::size_t>(s.bits() % p.qualities.size())]; };
    it.shot.quality = pick();
    const bool portrait = s.uniform() < p.portrait, clockwise = s.uniform() < 0.5;
    if (k < p.images) {
      if (portrait) it.shot.rotation = clockwise ? 90 : 270;
    } else {
      // Cropped by up to a quarter from the top-left and an eighth from the
      // bottom-right: the file's (0, 0) is the sensor's (x, y).
      const int x = s.uniform_int(1, size.width / 4), y = s.uniform_int(1, size.height / 4);
      const int w = size.width - x - s.uniform_int(0, size.width / 8);
      const int h = size.height - y - s.uniform_int(0, size.height / 8);
      it.shot.crop = cv::Rect(x, y, w, h);
      it.shot.crop_quality = pick();
    }
    items.push_back(it);
  }
  return items;
}

std::size_t photo_index(const Params& p, const Item& item, std::size_t count) {
  if (count == 0) throw std::invalid_argument("flowd::prnu: no photographs to choose from");
  Stream s(p.seed, photo_pick, static_cast<std::uint64_t>(item.camera),
           static_cast<std::uint64_t>(item.index) * 2 + (item.flatfield ? 1 : 0));
  return static_cast<std::size_t>(s.bits() % count);
}

}  // namespace flowd::prnu

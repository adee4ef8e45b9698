// flowd-bench-registration: accuracy and time per pair of series registration
// on generated TEM series (tools/tem) against their true motions, for flowd's
// operator A (pairwise + sequential compose + refinement) and the baselines
// of issue 14: phase correlation of every frame to frame 0, chained
// consecutive phase correlations, and OpenCV's findTransformECC
// (MOTION_EUCLIDEAN) chained and in flowd's own scheme. One thread.
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <opencv2/imgproc.hpp>
#if FLOWD_BENCH_HAVE_ECC
#include <opencv2/video/tracking.hpp>
#endif

#include "rigid.hpp"
#include "series.hpp"
#include "tem/generate.hpp"

namespace po = boost::program_options;
namespace reg = flowd::registration;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct MethodResult {
  std::vector<reg::Rigid> estimate;
  double seconds_per_pair = 0.0;
};

struct Series {
  flowd::tem::Params params;
  std::vector<cv::Mat> frames;  // CV_32F counts
  std::vector<reg::Rigid> truth;
};

Series make_series(const flowd::tem::Params& p) {
  Series s{p, {}, {}};
  for (const auto& m : flowd::tem::truth(p))
    s.truth.push_back(reg::Rigid::from_degrees(m.angle, m.tx, m.ty));
  for (int k = 0; k < p.frames; ++k) {
    cv::Mat f;
    flowd::tem::generate(p, k).convertTo(f, CV_32F);
    s.frames.push_back(f);
  }
  return s;
}

reg::ImageView view_of(const cv::Mat& m) {
  return {m.ptr<float>(), m.cols, m.rows, static_cast<std::ptrdiff_t>(m.step1())};
}

MethodResult run_flowd(const Series& s, const reg::SeriesOptions& options) {
  MethodResult r;
  const auto t0 = Clock::now();
  std::vector<reg::Pyramid> pyramids;
  for (const auto& f : s.frames)
    pyramids.emplace_back(view_of(f), options.pyramid);
  const reg::FrameLookup lookup = [&](std::int64_t i) -> const reg::Pyramid& {
    return pyramids.at(static_cast<std::size_t>(i));
  };
  r.estimate = reg::register_series(lookup, static_cast<std::int64_t>(s.frames.size()), options);
  const double ops = (s.frames.size() - 1.0) * (options.refine ? 3.0 : 2.0) - 1.0;
  r.seconds_per_pair = seconds_since(t0) / std::max(1.0, ops);
  return r;
}

// phaseCorrelate(a, b) is the shift d with b(x) ~ a(x - d): the content of b
// moved by d, our t of a translation-only phi_{a,b}.
cv::Point2d phase_shift(const cv::Mat& a, const cv::Mat& b, const cv::Mat& window) {
  return cv::phaseCorrelate(a, b, window);
}

MethodResult run_phase_direct(const Series& s) {
  MethodResult r;
  cv::Mat window;
  cv::createHanningWindow(window, s.frames[0].size(), CV_32F);
  const auto t0 = Clock::now();
  r.estimate.push_back(reg::Rigid::identity());
  for (std::size_t k = 1; k < s.frames.size(); ++k) {
    const cv::Point2d d = phase_shift(s.frames[0], s.frames[k], window);
    r.estimate.push_back({0.0, d.x, d.y});
  }
  r.seconds_per_pair = seconds_since(t0) / std::max<double>(1, s.frames.size() - 1);
  return r;
}

MethodResult run_phase_chained(const Series& s) {
  MethodResult r;
  cv::Mat window;
  cv::createHanningWindow(window, s.frames[0].size(), CV_32F);
  const auto t0 = Clock::now();
  r.estimate.push_back(reg::Rigid::identity());
  for (std::size_t k = 1; k < s.frames.size(); ++k) {
    const cv::Point2d d = phase_shift(s.frames[k - 1], s.frames[k], window);
    r.estimate.push_back(reg::then(r.estimate.back(), {0.0, d.x, d.y}));
  }
  r.seconds_per_pair = seconds_since(t0) / std::max<double>(1, s.frames.size() - 1);
  return r;
}

#if FLOWD_BENCH_HAVE_ECC
// findTransformECC(template, input, W): input(W x) ~ template(x) with
// W x = A x + b about the origin; phi = c + A(x - c) + t, so t = b - c + A c.
reg::Rigid ecc(const cv::Mat& reference, const cv::Mat& tmpl, const reg::Rigid& guess) {
  const reg::Point c = reg::image_centre(reference.cols, reference.rows);
  const double cs = std::cos(guess.angle), sn = std::sin(guess.angle);
  cv::Mat w = (cv::Mat_<float>(2, 3) << cs, -sn, guess.tx + c.x - (cs * c.x - sn * c.y), sn, cs,
               guess.ty + c.y - (sn * c.x + cs * c.y));
  try {
    cv::findTransformECC(reference, tmpl, w, cv::MOTION_EUCLIDEAN,
                         cv::TermCriteria(cv::TermCriteria::COUNT + cv::TermCriteria::EPS, 500, 1e-6), cv::noArray(),
                         5);
  } catch (const cv::Exception&) {
    return guess;  // did not converge: keep the guess
  }
  const double a = std::atan2(w.at<float>(1, 0), w.at<float>(0, 0));
  const double ca = std::cos(a), sa = std::sin(a);
  return {a, w.at<float>(0, 2) - c.x + (ca * c.x - sa * c.y), w.at<float>(1, 2) - c.y + (sa * c.x + ca * c.y)};
}

MethodResult run_ecc_chained(const Series& s) {
  MethodResult r;
  const auto t0 = Clock::now();
  r.estimate.push_back(reg::Rigid::identity());
  for (std::size_t k = 1; k < s.frames.size(); ++k)
    r.estimate.push_back(reg::then(r.estimate.back(), ecc(s.frames[k - 1], s.frames[k], reg::Rigid::identity())));
  r.seconds_per_pair = seconds_since(t0) / std::max<double>(1, s.frames.size() - 1);
  return r;
}

// ECC as the operator A in flowd's scheme: consecutive pairs from the
// identity, then frame 0 to frame k from the product.
MethodResult run_ecc_scheme(const Series& s) {
  MethodResult r;
  const auto t0 = Clock::now();
  r.estimate.push_back(reg::Rigid::identity());
  for (std::size_t k = 1; k < s.frames.size(); ++k) {
    const reg::Rigid pair = ecc(s.frames[k - 1], s.frames[k], reg::Rigid::identity());
    r.estimate.push_back(ecc(s.frames[0], s.frames[k], reg::then(r.estimate.back(), pair)));
  }
  r.seconds_per_pair = seconds_since(t0) / std::max<double>(1, 2.0 * (s.frames.size() - 1));
  return r;
}
#endif

// One core: the pyramid of a frame, and A from the identity on consecutive
// pairs (what registration.pairwise does per task, besides two pyramids).
void time_pairs(const Series& s, const reg::SeriesOptions& options) {
  const std::size_t n = std::min<std::size_t>(s.frames.size(), 9);
  std::vector<reg::Pyramid> pyramids;
  const auto t0 = Clock::now();
  for (std::size_t k = 0; k < n; ++k)
    pyramids.emplace_back(view_of(s.frames[k]), options.pyramid);
  const double pyramid = seconds_since(t0) / static_cast<double>(n);
  const auto t1 = Clock::now();
  int iterations = 0;
  for (std::size_t k = 1; k < n; ++k)
    iterations += reg::register_pair(pyramids[k - 1], pyramids[k], reg::Rigid::identity(), options.pairwise).iterations;
  const double pair = seconds_since(t1) / static_cast<double>(n - 1);
  std::printf("| %dx%d | %.4f | %.4f | %.4f | %.1f |\n", s.params.width, s.params.height, pyramid, pair,
              pair + 2 * pyramid, iterations / static_cast<double>(n - 1));
}

}  // namespace

int main(int argc, char** argv) {
  flowd::tem::Params p;
  std::vector<std::uint64_t> seeds;
  std::string methods;
  int size = 512;
  bool per_frame = false, timing = false;
  int width = 0, height = 0;
  reg::SeriesOptions options;
  po::options_description opts("usage: flowd-bench-registration [--frames N] [--size S] [--seeds 1 2 3]\nOptions");
  opts.add_options()("help,h", "this help")("frames", po::value(&p.frames)->default_value(64), "frames per series")(
      "size", po::value(&size)->default_value(512), "frame side, pixels")(
      "width", po::value(&width), "frame width (instead of --size)")("height", po::value(&height),
                                                                     "frame height (instead of --size)")(
      "time-pairs", po::bool_switch(&timing), "only time the pyramid and A on up to 8 consecutive pairs")(
      "seeds", po::value(&seeds)->multitoken(), "series seeds (default 1 2 3)")(
      "methods", po::value(&methods)->default_value("flowd,phase-direct,phase-chained,ecc-chained,ecc-scheme"),
      "comma-separated")("jitter", po::value(&p.jitter)->default_value(p.jitter), "generator: scan-line jitter")(
      "dose", po::value(&p.dose)->default_value(p.dose), "generator: counts per pixel")(
      "period", po::value(&p.period)->default_value(p.period), "generator: lattice period")(
      "drift", po::value(&p.drift)->default_value(p.drift), "generator: motion per frame")(
      "smooth", po::value(&options.pyramid.smooth)->default_value(options.pyramid.smooth), "flowd: pre-smoothing")(
      "compose-coarsest", po::value(&options.compose.coarsest)->default_value(-1),
      "flowd: coarsest level of compose (-1: all)")("refine", po::value(&options.refine)->default_value(true),
                                                    "flowd: refine against frame 0")(
      "translation", "flowd: translation-only model")("per-frame", po::bool_switch(&per_frame), "print every frame");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "flowd-bench-registration: " << e.what() << '\n';
    return 1;
  }
  if (vm.count("help")) {
    std::cout << opts << '\n';
    return 0;
  }
  if (vm.count("translation"))
    options.pairwise.model = options.compose.model = options.refinement.model = reg::Model::translation;
  if (seeds.empty()) seeds = {1, 2, 3};
  p.width = width > 0 ? width : size;
  p.height = height > 0 ? height : size;
  cv::setNumThreads(1);
  if (timing) {
    std::printf("| frame | pyramid s | A s per pair | operator s per pair (A + 2 pyramids) | iterations per pair |\n");
    std::printf("|---|---|---|---|---|\n");
    for (const std::uint64_t seed : seeds) {
      p.seed = seed;
      p.frames = std::min(p.frames, 9);
      time_pairs(make_series(p), options);
    }
    return 0;
  }
  const std::vector<std::pair<std::string, std::function<MethodResult(const Series&)>>> all = {
    {"flowd", [&](const Series& s) { return run_flowd(s, options); }},
    {"phase-direct", run_phase_direct},
    {"phase-chained", run_phase_chained},
#if FLOWD_BENCH_HAVE_ECC
    {"ecc-chained", run_ecc_chained},
    {"ecc-scheme", run_ecc_scheme},
#endif
  };
  std::printf(
      "| method | seed | frames | size | mean error px | max error px | frames off by a period | s per pair |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const std::uint64_t seed : seeds) {
    p.seed = seed;
    const Series s = make_series(p);
    for (const auto& [name, run] : all) {
      if (("," + methods + ",").find("," + name + ",") == std::string::npos) continue;
      const MethodResult r = run(s);
      const reg::SeriesError e = reg::evaluate(r.estimate, s.truth, p.width, p.height, p.period);
      std::printf("| %s | %llu | %d | %dx%d | %.3f | %.3f | %d | %.4f |\n", name.c_str(),
                  static_cast<unsigned long long>(seed), p.frames, p.width, p.height, e.mean, e.max, e.off_by_period,
                  r.seconds_per_pair);
      if (per_frame)
        for (std::size_t k = 0; k < e.per_frame.size(); ++k)
          std::printf("    %s frame %zu error %.3f est (%.3f, %.3f, %.4f) true (%.3f, %.3f, %.4f)\n", name.c_str(), k,
                      e.per_frame[k], r.estimate[k].tx, r.estimate[k].ty, r.estimate[k].degrees(), s.truth[k].tx,
                      s.truth[k].ty, s.truth[k].degrees());
      std::fflush(stdout);
    }
  }
  return 0;
}

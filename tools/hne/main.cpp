// flowd-hne-synth: write a data set of synthetic H&E tiles and their nucleus
// instance labels (docs/tools.md).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <system_error>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "hne/generate.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace {

constexpr int exit_usage = 1;
constexpr int exit_failed = 2;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void parse_size(const std::string& text, flowd::hne::Params& p) {
  const auto x = text.find('x');
  std::size_t used_w = 0, used_h = 0;
  try {
    if (x == std::string::npos) throw std::invalid_argument("no x");
    const std::string ws = text.substr(0, x), hs = text.substr(x + 1);
    p.width = std::stoi(ws, &used_w);
    p.height = std::stoi(hs, &used_h);
    if (used_w != ws.size() || used_h != hs.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw po::error("--size must be WIDTHxHEIGHT (e.g. 2048x2048), got '" + text + "'");
  }
}

// OpenCV picks the format from the extension, so the temporary name keeps
// it; the rename makes the file appear complete or not at all.
void write_atomically(const fs::path& target, const cv::Mat& img) {
  const fs::path tmp =
      target.parent_path() / ("." + target.stem().string() + ".tmp" + std::to_string(::getpid()) + ".png");
  bool ok = false;
  try {
    ok = cv::imwrite(tmp.string(), img);
  } catch (const cv::Exception& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw Failure("cannot write '" + target.string() + "': " + e.what());
  }
  std::error_code ec;
  if (!ok) {
    fs::remove(tmp, ec);
    throw Failure("cannot write '" + target.string() + "'");
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Failure("cannot rename into '" + target.string() + "': " + ec.message());
  }
}

}  // namespace

int main(int argc, char** argv) {
  flowd::hne::Params p;
  std::string out, size;
  long long count = 1;
  po::options_description opts(
      "usage: flowd-hne-synth --out DIR [options]\n"
      "Writes DIR/images/hne-<i>.png (RGB) and DIR/truth/hne-<i>.png (16-bit nucleus labels).\nOptions");
  opts.add_options()("help,h", "this help")("out", po::value(&out), "output folder (created)")(
      "count", po::value(&count)->default_value(1), "number of images")(
      "size", po::value(&size)->default_value("2048x2048"), "WIDTHxHEIGHT in pixels")(
      "seed", po::value(&p.seed)->default_value(p.seed), "data-set seed")(
      "mpp", po::value(&p.mpp)->default_value(p.mpp), "microns per pixel (0.25 = 40x, 0.5 = 20x)")(
      "density", po::value(&p.density)->default_value(p.density), "nuclei density multiplier")(
      "stain", po::value(&p.stain)->default_value(p.stain), "stain strength multiplier")(
      "blur", po::value(&p.blur)->default_value(p.blur), "optical blur sigma in pixels at 40x")(
      "noise", po::value(&p.noise)->default_value(p.noise), "sensor noise multiplier")(
      "rbc", po::value(&p.rbc)->default_value(p.rbc), "red-blood-cell amount multiplier")(
      "cluster", po::value(&p.cluster)->default_value(p.cluster), "fraction of nuclei in touching clusters")(
      "background", po::value(&p.background)->default_value(p.background), "fraction of the field that is glass");
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << opts << "\n";
      return 0;
    }
    if (out.empty()) throw po::error("--out is required");
    if (count < 1 || count > std::numeric_limits<int>::max()) throw po::error("--count must be at least 1");
    parse_size(size, p);
    flowd::hne::validate(p);
  } catch (const std::exception& e) {
    std::cerr << "flowd-hne-synth: " << e.what() << "\n" << opts << "\n";
    return exit_usage;
  }

  try {
    const fs::path images = fs::path(out) / "images", truth = fs::path(out) / "truth";
    std::error_code ec;
    for (const auto& dir : {images, truth}) {
      fs::create_directories(dir, ec);
      if (ec) throw Failure("cannot create '" + dir.string() + "': " + ec.message());
    }
    for (long long i = 0; i < count; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto sample = flowd::hne::generate(p, static_cast<int>(i));
      double max_label = 0;
      cv::minMaxLoc(sample.labels, nullptr, &max_label);
      const std::string name = "hne-" + std::to_string(i) + ".png";
      // The truth is 16-bit PNG: refuse rather than wrap labels around.
      if (max_label > 65535)
        throw Failure(name + " has " + std::to_string(static_cast<long long>(max_label)) +
                      " nuclei, more than a 16-bit label image holds (65535); use a smaller --size or --density");
      cv::Mat bgr, labels16;
      cv::cvtColor(sample.rgb, bgr, cv::COLOR_RGB2BGR);
      sample.labels.convertTo(labels16, CV_16U);
      write_atomically(images / name, bgr);
      write_atomically(truth / name, labels16);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%s  %dx%d  %lld nuclei  %.2f s\n", name.c_str(), p.width, p.height,
                  static_cast<long long>(max_label), s);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::cerr << "flowd-hne-synth: " << e.what() << "\n";
    return exit_failed;
  }
  return 0;
}

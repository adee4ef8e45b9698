// flowd-hne-synth: write a data set of synthetic H&E tiles and their nucleus
// instance labels (docs/tools.md).
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "hne/conditions.hpp"
#include "hne/generate.hpp"
#include "synth/cli.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace cli = flowd::synth::cli;

namespace {

// A bad command line is followed by the whole option list.
constexpr cli::Tool tool{"flowd-hne-synth", {.usage = 1, .failed = 2}, cli::UsageHint::options};

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
    throw cli::Failure("cannot write '" + target.string() + "': " + e.what());
  }
  std::error_code ec;
  if (!ok) {
    fs::remove(tmp, ec);
    throw cli::Failure("cannot write '" + target.string() + "'");
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw cli::Failure("cannot rename into '" + target.string() + "': " + ec.message());
  }
}

// The real-valued generator parameters, as options named like the fields.
struct RealOption {
  const char* name;
  double flowd::hne::Params::*field;
  const char* help;
};
constexpr RealOption real_options[] = {
    {"mpp", &flowd::hne::Params::mpp, "microns per pixel (0.25 = 40x, 0.5 = 20x)"},
    {"density", &flowd::hne::Params::density, "nuclei density multiplier"},
    {"stain", &flowd::hne::Params::stain, "stain strength multiplier"},
    {"blur", &flowd::hne::Params::blur, "optical blur sigma in pixels at 40x"},
    {"noise", &flowd::hne::Params::noise, "sensor noise multiplier"},
    {"rbc", &flowd::hne::Params::rbc, "red-blood-cell amount multiplier"},
    {"cluster", &flowd::hne::Params::cluster, "fraction of nuclei in touching clusters"},
    {"background", &flowd::hne::Params::background, "fraction of the field that is glass"},
    {"neuropil-share", &flowd::hne::Params::neuropil_share,
     "with --tissue mixed: share of the tissue that is neuropil"},
    {"pale", &flowd::hne::Params::pale, "share of tumour nuclei that are pale (vesicular)"},
    {"overlap", &flowd::hne::Params::overlap, "share of clustered nuclei lying over their neighbour"},
    {"stain-jitter", &flowd::hne::Params::stain_jitter, "per-tile stain spread multiplier (1 = one lab's)"},
    {"scanner", &flowd::hne::Params::scanner, "per-tile scanner gamma/brightness/white-balance spread (0 = none)"},
};

// 0.3, not 0.29999999999999999, in --help.
std::string shortest(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

void list_conditions() {
  for (const auto& c : flowd::hne::conditions())
    std::printf("%-16s %s\n", std::string(c.name).c_str(), std::string(c.description).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  flowd::hne::Params p;
  const flowd::hne::Params defaults;
  std::string out, size, condition, tissue;
  long long count = 1;
  po::options_description opts(
      "usage: flowd-hne-synth --out DIR [--condition NAME] [options]\n"
      "Writes DIR/images/hne-<i>.png (RGB) and DIR/truth/hne-<i>.png (16-bit nucleus labels).\n"
      "--condition sets a preset (--condition list lists them); options given explicitly override it.\nOptions");
  opts.add_options()("help,h", "this help")("out", po::value(&out), "output folder (created)")(
      "count", po::value(&count)->default_value(1), "number of images")(
      "size", po::value(&size)->default_value("2048x2048"), "WIDTHxHEIGHT in pixels")(
      "seed", po::value(&p.seed)->default_value(p.seed), "data-set seed")(
      "condition", po::value(&condition), "a named preset of the parameters below, or 'list'")(
      "tissue", po::value(&tissue), "between the nuclei: stroma (default), neuropil or mixed")(
      "jpeg", po::value<int>()->default_value(defaults.jpeg),
      "JPEG quality 1..100 the image passes through (0 = none)");
  for (const RealOption& o : real_options)
    opts.add_options()(o.name, po::value<double>()->default_value(defaults.*o.field, shortest(defaults.*o.field)),
                       o.help);
  if (const auto done = tool.parse(argc, argv, opts, [&](const po::variables_map& vm) -> std::optional<int> {
        if (condition == "list") {
          list_conditions();
          return 0;
        }
        if (!condition.empty()) flowd::hne::apply_condition(condition, p);
        for (const RealOption& o : real_options)
          if (!vm[o.name].defaulted()) p.*o.field = vm[o.name].as<double>();
        if (!vm["jpeg"].defaulted()) p.jpeg = vm["jpeg"].as<int>();
        if (!tissue.empty()) p.tissue = flowd::hne::tissue_from_name(tissue);
        cli::require_out(out);
        if (count < 1 || count > std::numeric_limits<int>::max()) throw po::error("--count must be at least 1");
        parse_size(size, p);
        flowd::hne::validate(p);
        return std::nullopt;
      }))
    return *done;

  return tool.write([&] {
    const fs::path images = fs::path(out) / "images", truth = fs::path(out) / "truth";
    std::error_code ec;
    for (const auto& dir : {images, truth}) {
      fs::create_directories(dir, ec);
      if (ec) throw cli::Failure("cannot create '" + dir.string() + "': " + ec.message());
    }
    for (long long i = 0; i < count; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto sample = flowd::hne::generate(p, static_cast<int>(i));
      double max_label = 0;
      cv::minMaxLoc(sample.labels, nullptr, &max_label);
      const std::string name = "hne-" + std::to_string(i) + ".png";
      // The truth is 16-bit PNG: refuse rather than wrap labels around.
      if (max_label > 65535)
        throw cli::Failure(name + " has " + std::to_string(static_cast<long long>(max_label)) +
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
  });
}

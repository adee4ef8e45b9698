// flowd-tem-synth: write a synthetic drifting TEM series and its true motions
// (docs/tools.md, "flowd-tem-synth").
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <opencv2/imgcodecs.hpp>

#include "synth/cli.hpp"
#include "tem/generate.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace cli = flowd::synth::cli;

namespace {

constexpr cli::Tool tool{"flowd-tem-synth", {.usage = 1, .failed = 2}};

// The temporary keeps the extension (OpenCV picks the format from it); the
// rename makes a file appear complete or not at all.
void write_image(const fs::path& target, const cv::Mat& img) {
  const fs::path tmp = target.parent_path() / ("." + target.stem().string() + ".tmp" + std::to_string(::getpid()) +
                                               target.extension().string());
  bool ok = false;
  try {
    ok = cv::imwrite(tmp.string(), img);
  } catch (const cv::Exception& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw cli::Failure("cannot write '" + target.string() + "': " + e.what());
  }
  std::error_code ec;
  if (ok) fs::rename(tmp, target, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    throw cli::Failure("cannot write '" + target.string() + "'" + (ec ? ": " + ec.message() : std::string()));
  }
}

void write_text(const fs::path& target, const std::string& text) {
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()));
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw cli::Failure("cannot write '" + target.string() + "'");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw cli::Failure("cannot rename into '" + target.string() + "': " + ec.message());
  }
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  flowd::tem::Params p;
  std::string out, format;
  int size = 0;
  po::options_description opts(
      "usage: flowd-tem-synth --out DIR [--frames N] [--size S | --width W --height H] [options]\n"
      "Writes DIR/frame_<i>.tif (16-bit counts, or float32 with --format f32), DIR/truth.csv (frame,tx_px,ty_px,angle_deg:\n"
      "each frame's true motion from frame 0, degrees) and DIR/tem.json (the parameters).\nOptions");
  opts.add_options()("help,h", "this help")("out", po::value(&out), "output folder (created)")(
      "frames", po::value(&p.frames)->default_value(p.frames), "number of frames")(
      "size", po::value(&size), "square frames of SIZE x SIZE pixels (default 512)")(
      "width", po::value(&p.width)->default_value(p.width), "frame width, pixels")(
      "height", po::value(&p.height)->default_value(p.height), "frame height, pixels")(
      "seed", po::value(&p.seed)->default_value(p.seed), "series seed")(
      "format", po::value(&format)->default_value("u16"), "u16 (counts) or f32 (the same counts as float32)")(
      "period", po::value(&p.period)->default_value(p.period), "lattice period, pixels")(
      "column-sigma", po::value(&p.column_sigma)->default_value(p.column_sigma), "column width (sigma), pixels")(
      "species-ratio", po::value(&p.species_ratio)->default_value(p.species_ratio), "species B / species A intensity")(
      "vacancies", po::value(&p.vacancies)->default_value(p.vacancies), "share of empty sites")(
      "distortion", po::value(&p.distortion)->default_value(p.distortion), "slow lattice distortion, pixels")(
      "drift", po::value(&p.drift)->default_value(p.drift), "RMS motion per frame, pixels")(
      "rotation", po::value(&p.rotation)->default_value(p.rotation), "rotation, degrees per frame")(
      "dose", po::value(&p.dose)->default_value(p.dose), "mean counts per pixel")(
      "background", po::value(&p.background)->default_value(p.background), "slow specimen background, relative")(
      "fixed-background", po::value(&p.fixed_background)->default_value(p.fixed_background),
      "detector-fixed gradient, relative")("jitter", po::value(&p.jitter)->default_value(p.jitter),
                                           "scan-line jitter, pixels RMS (0: rigid frames)");
  if (const auto done = tool.parse(argc, argv, opts, [&](const po::variables_map& vm) {
        cli::require_out(out);
        if (vm.count("size")) {
          if (!vm["width"].defaulted() || !vm["height"].defaulted()) throw po::error("give --size or --width/--height");
          p.width = p.height = size;
        }
        if (format != "u16" && format != "f32") throw po::error("--format must be u16 or f32, got '" + format + "'");
        flowd::tem::validate(p);
      }))
    return *done;

  return tool.write([&] {
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw cli::Failure("cannot create '" + out + "': " + ec.message());
    const auto motions = flowd::tem::truth(p);
    for (int k = 0; k < p.frames; ++k) {
      cv::Mat frame = flowd::tem::generate(p, k);
      if (format == "f32") frame.convertTo(frame, CV_32F);
      write_image(fs::path(out) / (flowd::tem::frame_name(p, k) + ".tif"), frame);
    }
    std::string csv = "frame,tx_px,ty_px,angle_deg\n";
    for (int k = 0; k < p.frames; ++k) {
      const auto& m = motions[static_cast<std::size_t>(k)];
      csv += flowd::tem::frame_name(p, k) + "," + number(m.tx) + "," + number(m.ty) + "," + number(m.angle) + "\n";
    }
    write_text(fs::path(out) / "truth.csv", csv);
    write_text(fs::path(out) / "tem.json",
               "{\"frames\": " + std::to_string(p.frames) + ", \"width\": " + std::to_string(p.width) +
                   ", \"height\": " + std::to_string(p.height) + ", \"seed\": " + std::to_string(p.seed) +
                   ", \"period\": " + number(p.period) + ", \"column_sigma\": " + number(p.column_sigma) +
                   ", \"species_ratio\": " + number(p.species_ratio) + ", \"vacancies\": " + number(p.vacancies) +
                   ", \"distortion\": " + number(p.distortion) + ", \"drift\": " + number(p.drift) +
                   ", \"rotation\": " + number(p.rotation) + ", \"dose\": " + number(p.dose) + ", \"background\": " +
                   number(p.background) + ", \"fixed_background\": " + number(p.fixed_background) +
                   ", \"jitter\": " + number(p.jitter) + ", \"format\": \"" + format + "\"}\n");
  });
}

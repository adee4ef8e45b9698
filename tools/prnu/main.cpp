// flowd-prnu-synth: write a data set of simulated camera photographs with
// PRNU - flat-fields and query images per camera - and its truth
// (docs/tools.md, "flowd-prnu-synth").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <system_error>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "prnu/generate.hpp"
#include "synth/cli.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace prnu = flowd::prnu;
namespace cli = flowd::synth::cli;

namespace {

constexpr cli::Tool tool{"flowd-prnu-synth", {.usage = 1, .failed = 2}};

std::vector<int> parse_qualities(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    int q = 0;
    try {
      q = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw po::error("--quality takes whole numbers separated by commas, got '" + text + "'");
    out.push_back(q);
  }
  if (out.empty()) throw po::error("--quality takes whole numbers separated by commas, got '" + text + "'");
  return out;
}

bool is_image(const fs::path& f) {
  std::string ext = f.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* e : {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".webp", ".ppm", ".pgm", ".pnm"})
    if (ext == e) return true;
  return false;
}

// The photographs of --scenes, sorted by name so the choice of scene is
// deterministic; unreadable files are left out with a note.
std::vector<fs::path> scene_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw po::error("--scenes: '" + dir + "' is not a folder");
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec))
    if (e.is_regular_file() && is_image(e.path())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<fs::path> readable;
  for (const auto& f : files) {
    cv::Mat probe = cv::imread(f.string(), cv::IMREAD_REDUCED_COLOR_8);
    if (probe.empty())
      std::cerr << "flowd-prnu-synth: note: leaving out '" << f.string() << "' (not readable as an image)\n";
    else
      readable.push_back(f);
  }
  if (readable.empty()) throw po::error("--scenes: no readable images in '" + dir + "'");
  return readable;
}

const char* cfa_name(prnu::Cfa c) {
  switch (c) {
  case prnu::Cfa::rggb:
    return "RGGB";
  case prnu::Cfa::bggr:
    return "BGGR";
  case prnu::Cfa::grbg:
    return "GRBG";
  case prnu::Cfa::gbrg:
    return "GBRG";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  prnu::Params p;
  std::string out, qualities = "75,85,90,95", scenes;
  po::options_description opts(
      "usage: flowd-prnu-synth --out DIR [options]\n"
      "Writes simulated photographs of several cameras carrying their PRNU: DIR/flatfields/<camera>_<k>.png\n"
      "(or .jpg), DIR/images/<camera>_<k>.jpg and DIR/truth.json (cameras, their PRNU sigma, model and\n"
      "size, and every file's camera, quality, rotation and crop). DIR must not exist or be empty; it\n"
      "appears complete or not at all.\nOptions");
  opts.add_options()("help,h", "this help")("out", po::value(&out), "output folder (created)")(
      "cameras", po::value(&p.cameras)->default_value(p.cameras), "cameras per model")(
      "models", po::value(&p.models)->default_value(p.models),
      "camera models; model m > 0 has a sensor (1 + m/8) times larger")(
      "flatfields", po::value(&p.flatfields)->default_value(p.flatfields), "flat-field frames per camera")(
      "images", po::value(&p.images)->default_value(p.images), "aligned query images per camera")(
      "width", po::value(&p.width)->default_value(p.width), "sensor width of model 0, pixels")(
      "height", po::value(&p.height)->default_value(p.height), "sensor height of model 0, pixels")(
      "seed", po::value(&p.seed)->default_value(p.seed), "data-set seed")(
      "quality", po::value(&qualities)->default_value(qualities),
      "JPEG qualities of the query images, drawn uniformly (comma-separated)")(
      "flat-quality", po::value(&p.flat_quality)->default_value(p.flat_quality),
      "JPEG quality of the flat-fields; 0 writes PNG")(
      "portrait", po::value(&p.portrait)->default_value(p.portrait),
      "probability that a query image is portrait (rotated 90 degrees either way)")(
      "shift", po::value(&p.shifted)->default_value(p.shifted),
      "extra query images per camera, cropped from the top-left (known offset) and re-saved")(
      "sigma-min", po::value(&p.sigma_min)->default_value(p.sigma_min), "smallest PRNU RMS of a camera")(
      "sigma-max", po::value(&p.sigma_max)->default_value(p.sigma_max), "largest PRNU RMS of a camera")(
      "common", po::value(&p.common)->default_value(p.common),
      "RMS of the pattern all cameras of a model share (0: none)")(
      "scenes", po::value(&scenes), "folder of photographs to use as the query images' scenes instead of synthetic ones");
  std::vector<fs::path> photos;
  if (const auto done = tool.parse(argc, argv, opts, [&](const po::variables_map&) {
        cli::require_out(out);
        p.qualities = parse_qualities(qualities);
        prnu::validate(p);
        std::error_code ec;
        if (fs::exists(out, ec)) {
          if (!fs::is_directory(out, ec)) throw po::error("--out: '" + out + "' exists and is not a folder");
          if (!fs::is_empty(out, ec)) throw po::error("--out: '" + out + "' exists and is not empty");
        }
        if (!scenes.empty()) photos = scene_files(scenes);
      }))
    return *done;

  cli::watch_interruptions();
  return tool.write([&] {
    const auto start = std::chrono::steady_clock::now();
    const fs::path target = fs::absolute(fs::path(out)).lexically_normal();
    const fs::path clean = target.filename().empty() ? target.parent_path() : target;
    // Written into a hidden sibling renamed to OUT at the end, so OUT
    // appears complete or not at all.
    cli::Staging staging(clean.parent_path() / cli::partial_name(clean.filename().string()), {"flatfields", "images"});
    nlohmann::ordered_json truth, models = nlohmann::ordered_json::array(), cameras = nlohmann::ordered_json::array(),
                                  files = nlohmann::ordered_json::array();
    truth["generator"] = "flowd-prnu-synth";
    truth["seed"] = p.seed;
    truth["params"] = {{"cameras", p.cameras},         {"models", p.models},         {"flatfields", p.flatfields},
                       {"images", p.images},           {"shift", p.shifted},         {"width", p.width},
                       {"height", p.height},           {"quality", p.qualities},     {"flat_quality", p.flat_quality},
                       {"portrait", p.portrait},       {"sigma_min", p.sigma_min},   {"sigma_max", p.sigma_max},
                       {"common", p.common},           {"scenes", scenes.empty() ? nlohmann::ordered_json(nullptr)
                                                                                 : nlohmann::ordered_json(scenes)}};
    for (int index = 0; index < p.cameras * p.models; ++index) {
      const prnu::Camera cam = prnu::make_camera(p, index);
      if (index % p.cameras == 0)
        models.push_back({{"model", cam.model},
                          {"width", cam.size.width},
                          {"height", cam.size.height},
                          {"cfa", cfa_name(cam.cfa)},
                          {"demosaic", cam.edge_aware ? "edge-aware" : "bilinear"},
                          {"common_rms", p.common},
                          {"cameras", nlohmann::ordered_json::array()}});
      models.back()["cameras"].push_back(cam.name);
      cameras.push_back({{"name", cam.name},
                         {"model", cam.model},
                         {"sigma", cam.sigma},
                         {"width", cam.size.width},
                         {"height", cam.size.height},
                         {"vignetting", cam.vignetting},
                         {"full_well", cam.full_well},
                         {"read_noise", cam.read_noise}});
      for (const prnu::Item& item : prnu::plan(p, index)) {
        cli::throw_if_interrupted();
        const prnu::Shot& s = item.shot;
        cv::Mat irradiance;
        std::string scene = item.flatfield ? "flat" : "synthetic";
        if (!item.flatfield && !photos.empty()) {
          const fs::path& photo = photos[prnu::photo_index(p, item, photos.size())];
          const cv::Mat bgr = cv::imread(photo.string(), cv::IMREAD_COLOR);
          if (bgr.empty()) throw cli::Failure("cannot read '" + photo.string() + "'");
          irradiance = prnu::scene_from_photo(bgr, prnu::scene_size(cam, s), s.seed);
          scene = "photo:" + fs::relative(photo, scenes).string();
        }
        const auto bytes = prnu::shoot(cam, s, irradiance);
        cli::write_file(staging.dir() / item.file, bytes);
        const cv::Size file_size = s.crop.empty() ? prnu::scene_size(cam, s) : s.crop.size();
        nlohmann::ordered_json f = {{"file", item.file},
                                    {"camera", cam.name},
                                    {"kind", item.flatfield ? "flatfield" : "image"},
                                    {"width", file_size.width},
                                    {"height", file_size.height},
                                    {"quality", s.quality > 0 ? nlohmann::ordered_json(s.quality) : nullptr},
                                    {"rotation", s.rotation},
                                    {"shift", nullptr},
                                    {"iso", 100 * s.iso},
                                    {"scene", scene}};
        if (!s.crop.empty()) {
          f["shift"] = {{"x", s.crop.x}, {"y", s.crop.y}, {"width", s.crop.width}, {"height", s.crop.height}};
          f["resaved_quality"] = s.crop_quality;
        }
        files.push_back(f);
      }
    }
    truth["models"] = models;
    truth["cameras"] = cameras;
    truth["files"] = files;
    cli::write_file(staging.dir() / "truth.json", truth.dump(2) + '\n');
    staging.rename_to(clean);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "flowd-prnu-synth: %zu files of %d cameras in %s (%.1f s)\n", files.size(),
                 p.cameras * p.models, out.c_str(), seconds);
  });
}

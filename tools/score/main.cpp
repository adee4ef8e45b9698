// flowd-score: compare predicted nucleus label images with ground truth
// (definitions in docs/tools.md).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "score/score.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;
using flowd::score::Counts;
using flowd::score::Scores;

namespace {

constexpr int exit_usage = 1;
constexpr int exit_failed = 2;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool label_extension(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return e == ".png" || e == ".tif" || e == ".tiff";
}

// stem -> file, for the label images in a folder.
std::map<std::string, fs::path> list(const std::string& dir, const char* what) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Failure(std::string(what) + " folder '" + dir + "' does not exist");
  std::map<std::string, fs::path> out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || !label_extension(e.path())) continue;
    const std::string stem = e.path().stem().string();
    const auto [it, fresh] = out.emplace(stem, e.path());
    if (!fresh)
      throw Failure("'" + it->second.string() + "' and '" + e.path().string() + "' have the same stem '" + stem +
                    "'; keep one");
  }
  if (ec) throw Failure("cannot list '" + dir + "': " + ec.message());
  return out;
}

cv::Mat read_labels(const fs::path& file) {
  cv::Mat m;
  try {
    m = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {
    throw Failure("cannot read '" + file.string() + "': " + e.what());
  }
  if (m.empty()) throw Failure("cannot read '" + file.string() + "' as an image");
  if (m.channels() != 1 || (m.depth() != CV_8U && m.depth() != CV_16U && m.depth() != CV_32S))
    throw Failure("'" + file.string() + "' is not a label image (" + std::to_string(m.channels()) +
                  " channel(s) of " + cv::typeToString(CV_MAKETYPE(m.depth(), 1)) +
                  "; expected one channel of 8-, 16- or 32-bit integer labels)");
  return m;
}

nlohmann::json to_json(const Scores& s) {
  return {{"dice", s.dice}, {"precision", s.precision}, {"recall", s.recall}, {"f1", s.f1}, {"aji", s.aji},
          {"n_pred", s.n_pred}, {"n_truth", s.n_truth}, {"n_matched", s.n_matched}};
}

void print_row(const std::string& name, const Scores& s, bool counts = true) {
  if (counts)
    std::printf("%-28s %7d %7d %7d", name.c_str(), s.n_truth, s.n_pred, s.n_matched);
  else
    std::printf("%-28s %7s %7s %7s", name.c_str(), "", "", "");
  std::printf("  %6.4f  %6.4f  %6.4f  %6.4f  %6.4f\n", s.dice, s.precision, s.recall, s.f1, s.aji);
}

void write_json(const fs::path& target, const nlohmann::json& doc) {
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const fs::path tmp = dir / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()));
  {
    std::ofstream f(tmp);
    f << doc.dump(2) << "\n";
    f.close();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Failure("cannot write '" + target.string() + "'");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Failure("cannot rename into '" + target.string() + "': " + ec.message());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string pred_dir, truth_dir, json_file;
  po::options_description opts(
      "usage: flowd-score --pred DIR --truth DIR [--json FILE]\n"
      "Pairs label images (png, tif) by file stem and prints Dice, object precision/recall/F1 at IoU >= 0.5\n"
      "and AJI per image, their mean over images, and the pooled scores over all pixels and objects.\nOptions");
  opts.add_options()("help,h", "this help")("pred", po::value(&pred_dir), "folder of predicted label images")(
      "truth", po::value(&truth_dir), "folder of ground-truth label images")(
      "json", po::value(&json_file), "also write the scores as JSON to FILE");
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(opts).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << opts << "\n";
      return 0;
    }
    if (pred_dir.empty() || truth_dir.empty()) throw po::error("--pred and --truth are required");
  } catch (const std::exception& e) {
    std::cerr << "flowd-score: " << e.what() << "\n" << opts << "\n";
    return exit_usage;
  }

  try {
    const auto preds = list(pred_dir, "prediction");
    const auto truths = list(truth_dir, "truth");
    if (truths.empty()) throw Failure("no label images (png, tif) in truth folder '" + truth_dir + "'");
    // Every pairing problem is found before any image is read.
    for (const auto& [stem, file] : truths)
      if (!preds.count(stem))
        throw Failure("truth '" + file.string() + "' has no prediction (expected " +
                      (fs::path(pred_dir) / (stem + ".png")).string() + " or .tif)");
    for (const auto& [stem, file] : preds)
      if (!truths.count(stem))
        throw Failure("prediction '" + file.string() + "' has no truth (expected " +
                      (fs::path(truth_dir) / (stem + ".png")).string() + " or .tif)");

    std::printf("%-28s %7s %7s %7s  %6s  %6s  %6s  %6s  %6s\n", "image", "truth", "pred", "matched", "dice", "prec",
                "recall", "f1", "aji");
    nlohmann::json images = nlohmann::json::array();
    Counts pooled;
    Scores mean;
    for (const auto& [stem, truth_file] : truths) {
      const fs::path& pred_file = preds.at(stem);
      const cv::Mat truth = read_labels(truth_file), pred = read_labels(pred_file);
      if (truth.size() != pred.size())
        throw Failure("'" + pred_file.string() + "' is " + std::to_string(pred.cols) + "x" + std::to_string(pred.rows) +
                      " but '" + truth_file.string() + "' is " + std::to_string(truth.cols) + "x" +
                      std::to_string(truth.rows));
      const Counts c = flowd::score::count(pred, truth);
      const Scores s = flowd::score::scores_of(c);
      pooled += c;
      mean.dice += s.dice;
      mean.precision += s.precision;
      mean.recall += s.recall;
      mean.f1 += s.f1;
      mean.aji += s.aji;
      print_row(stem, s);
      auto row = to_json(s);
      row["image"] = stem;
      row["pred_file"] = pred_file.string();
      row["truth_file"] = truth_file.string();
      images.push_back(row);
    }
    const double n = static_cast<double>(truths.size());
    mean.dice /= n;
    mean.precision /= n;
    mean.recall /= n;
    mean.f1 /= n;
    mean.aji /= n;
    const Scores pool = flowd::score::scores_of(pooled);
    print_row("mean (over images)", mean, false);
    print_row("pooled (all pixels, objects)", pool);
    if (!json_file.empty()) {
      nlohmann::json m = to_json(mean);
      for (const char* k : {"n_pred", "n_truth", "n_matched"}) m.erase(k);
      write_json(json_file, {{"images", images}, {"mean", m}, {"pooled", to_json(pool)}});
    }
  } catch (const std::exception& e) {
    std::cerr << "flowd-score: " << e.what() << "\n";
    return exit_failed;
  }
  return 0;
}

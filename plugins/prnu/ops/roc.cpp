#include "ops/roc.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace flowd::prnu {

Roc roc_of(const std::vector<double>& scores, const std::vector<bool>& positive) {
  Roc r;
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  const double p = static_cast<double>(std::count(positive.begin(), positive.end(), true));
  const double n = static_cast<double>(positive.size()) - p;
  if (p == 0 || n == 0) throw Error("an ROC curve needs both same-camera and different-camera pairs");
  double tp = 0, fp = 0, area = 0;
  r.curve.push_back({0, 0});
  for (std::size_t k = 0; k < order.size();) {
    // Tied scores move the curve diagonally: they count half.
    double dtp = 0, dfp = 0;
    std::size_t e = k;
    while (e < order.size() && scores[order[e]] == scores[order[k]]) {
      (positive[order[e]] ? dtp : dfp) += 1;
      ++e;
    }
    area += dfp * (tp + dtp / 2);
    tp += dtp;
    fp += dfp;
    r.curve.push_back({fp / n, tp / p});
    k = e;
  }
  r.auc = area / (p * n);
  return r;
}

OperatorSpec RocSink::spec() {
  return {.name = "prnu.roc",
          .doc = "ROC curves and AUC of an all-pairs score table whose keys name their cameras "
                 "(docs/plugins/prnu.md)",
          .inputs = {{"scores", "table", "an all-pairs table (prnu.compare)"}},
          .outputs = {},
          .params = {ParamSpec::string("png").doc("the ROC plot to write (PNG)"),
                     ParamSpec::string("group", "^(.*)_[^_]*$")
                         .doc("a photo's camera: the first capture of this regex on its key")}};
}

RocSink::RocSink(const Params& p) : png_(p.get<std::string>("png")), group_text_(p.get<std::string>("group")) {
  try {
    group_ = std::regex(group_text_);
  } catch (const std::regex_error& e) {
    throw ParamError("group", "parameter 'group': '" + group_text_ + "' is not a regular expression: " + e.what());
  }
  if (group_.mark_count() < 1) throw ParamError("group", "parameter 'group': '" + group_text_ + "' captures nothing");
}

void RocSink::open(SinkContext& ctx) { ctx.output_file(png_); }

void RocSink::consume(SinkContext& ctx) {
  if (table_) throw Error("stage '" + ctx.stage() + "' takes one score table, got a second ('" + ctx.input(0).meta.key + "')");
  table_ = ctx.input(0);
}

void RocSink::commit(SinkContext& ctx) {
  if (!table_) {
    ctx.warn("no score table arrived: no ROC curve");
    return;
  }
  const Table& t = table_->table();
  const Json& attrs = table_->meta.attrs;
  if (!attrs.contains("rows") || !attrs.contains("cols") || !attrs.contains("scores"))
    throw Error("stage '" + ctx.stage() + "': '" + table_->meta.key + "' is not an all-pairs table (no rows/cols/scores attrs)");
  const auto rows = attrs["rows"].get<std::vector<std::string>>();
  const auto cols = attrs["cols"].get<std::vector<std::string>>();
  const auto names = attrs["scores"].get<std::vector<std::string>>();
  const bool fingerprints = attrs.value("pairs", "") == "rectangle";
  auto camera = [&](const std::string& key) -> std::optional<std::string> {
    std::smatch m;
    if (std::regex_match(key, m, group_)) return m[1].str();
    return std::nullopt;
  };
  const auto& a = t.column<std::int64_t>("a");
  const auto& b = t.column<std::int64_t>("b");
  std::vector<bool> label;
  std::vector<std::size_t> kept;
  std::size_t unknown = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const auto ca = fingerprints ? std::optional<std::string>(rows.at(static_cast<std::size_t>(a[k])))
                                 : camera(rows.at(static_cast<std::size_t>(a[k])));
    const auto cb = camera(cols.at(static_cast<std::size_t>(b[k])));
    if (!ca || !cb) {
      ++unknown;
      continue;
    }
    label.push_back(*ca == *cb);
    kept.push_back(k);
  }
  if (unknown) ctx.warn(std::to_string(unknown) + " pairs left out of the ROC: their keys do not match '" + group_text_ + "'");
  const auto positives = std::count(label.begin(), label.end(), true);
  if (positives == 0 || positives == static_cast<std::ptrdiff_t>(label.size())) {
    ctx.warn("the keys name no " + std::string(positives == 0 ? "same-camera" : "different-camera") +
             " pair: no ROC curve (docs/plugins/prnu.md)");
    return;
  }
  // The plot: 640 x 640, one curve per score, axes with their values, the
  // legend (each score's AUC) in the lower right, where curves above the
  // diagonal leave room.
  const int size = 640, left = 70, top = 50, side = size - left - 30;
  const int font = cv::FONT_HERSHEY_SIMPLEX;
  const cv::Scalar ink(0, 0, 0);
  cv::Mat img(size, size, CV_8UC3, cv::Scalar(255, 255, 255));
  for (int g = 0; g <= 10; ++g) {
    const int at = side * g / 10;
    cv::line(img, {left + at, top}, {left + at, top + side}, cv::Scalar(230, 230, 230));
    cv::line(img, {left, top + at}, {left + side, top + at}, cv::Scalar(230, 230, 230));
    if (g % 2) continue;
    char v[8];
    std::snprintf(v, sizeof v, "%.1f", g / 10.0);
    cv::line(img, {left + at, top + side}, {left + at, top + side + 5}, ink);
    cv::putText(img, v, {left + at - 11, top + side + 20}, font, 0.45, ink, 1, cv::LINE_AA);
    cv::line(img, {left - 5, top + side - at}, {left, top + side - at}, ink);
    cv::putText(img, v, {left - 32, top + side - at + 5}, font, 0.45, ink, 1, cv::LINE_AA);
  }
  cv::rectangle(img, {left, top}, {left + side, top + side}, ink);
  cv::line(img, {left, top + side}, {left + side, top}, cv::Scalar(180, 180, 180));
  const cv::Scalar colours[] = {cv::Scalar(200, 90, 30), cv::Scalar(40, 40, 210), cv::Scalar(40, 160, 40)};
  std::string summary;
  const int legend_top = top + side - 14 - 24 * static_cast<int>(names.size());
  cv::rectangle(img, {left + side / 2 - 10, legend_top - 18}, {left + side - 8, top + side - 8}, cv::Scalar(255, 255, 255),
                cv::FILLED);
  for (std::size_t s = 0; s < names.size(); ++s) {
    const auto& col = t.column<double>(names[s]);
    std::vector<double> v;
    for (std::size_t k : kept) v.push_back(col[k]);
    const Roc r = roc_of(v, label);
    std::vector<cv::Point> pts;
    for (const auto& [fpr, tpr] : r.curve)
      pts.push_back({left + static_cast<int>(fpr * side), top + side - static_cast<int>(tpr * side)});
    cv::polylines(img, pts, false, colours[s % 3], 2, cv::LINE_AA);
    char line[96];
    std::snprintf(line, sizeof line, "%s AUC %.4f", names[s].c_str(), r.auc);
    const int y = legend_top + 24 * static_cast<int>(s);
    cv::line(img, {left + side / 2, y - 5}, {left + side / 2 + 24, y - 5}, colours[s % 3], 3, cv::LINE_AA);
    cv::putText(img, line, {left + side / 2 + 32, y}, font, 0.55, colours[s % 3], 2, cv::LINE_AA);
    summary += (summary.empty() ? "" : ", ") + std::string(line);
  }
  char title[160];
  std::snprintf(title, sizeof title, "ROC of %zu pairs (%lld same camera, %lld not)", label.size(),
                static_cast<long long>(positives), static_cast<long long>(label.size()) - static_cast<long long>(positives));
  cv::putText(img, title, {left, 30}, font, 0.6, ink, 1, cv::LINE_AA);
  cv::putText(img, "false positive rate", {left + side / 2 - 80, size - 8}, font, 0.55, ink, 1, cv::LINE_AA);
  {
    // The y axis' name, turned to run up the axis.
    cv::Mat strip(22, 200, CV_8UC3, cv::Scalar(255, 255, 255));
    cv::putText(strip, "true positive rate", {4, 16}, font, 0.55, ink, 1, cv::LINE_AA);
    cv::Mat turned;
    cv::rotate(strip, turned, cv::ROTATE_90_COUNTERCLOCKWISE);
    turned.copyTo(img(cv::Rect(6, top + side / 2 - 100, turned.cols, turned.rows)));
  }
  std::vector<unsigned char> bytes;
  if (!cv::imencode(".png", img, bytes)) throw Error("encoding the ROC plot failed");
  ctx.write_output(png_, bytes);
  ctx.info("ROC of " + std::to_string(label.size()) + " pairs (" + std::to_string(positives) + " same camera): " + summary);
}

}  // namespace flowd::prnu

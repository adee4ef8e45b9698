#include "heatmap_picture.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <opencv2/imgproc.hpp>

namespace flowd::io {

namespace {

constexpr int font = cv::FONT_HERSHEY_SIMPLEX;
const cv::Scalar ink(0, 0, 0), grey(128, 128, 128), white(255, 255, 255);

int text_width(const std::string& s, double scale) {
  int base = 0;
  return cv::getTextSize(s, font, scale, 1, &base).width;
}

// Long keys shortened in the middle, so a label column stays readable.
std::string shortened(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  const std::size_t keep = (max - 2) / 2;
  return s.substr(0, keep) + ".." + s.substr(s.size() - keep);
}

std::string tick_text(double v, bool log10) {
  char buf[32];
  if (log10) {
    const double x = std::pow(10.0, v);
    std::snprintf(buf, sizeof buf, x >= 1e4 || x < 1e-2 ? "%.1e" : "%.3g", x);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

constexpr int pad = 10, title_h = 36, bar_w = 24, bar_text = 90, legend_h = 28;

// Labels: a font that fits the cell, at least legible.
double label_scale(int cell) { return std::clamp(cell / 24.0, 0.35, 0.5); }

struct Labels {
  std::vector<std::string> rows, cols;
  int row_w = 0, col_w = 0;
};

Labels labels_of(const HeatmapPicture& p, double scale) {
  Labels l;
  for (const auto& s : p.row_labels)
    l.rows.push_back(shortened(s, 28)), l.row_w = std::max(l.row_w, text_width(l.rows.back(), scale));
  for (const auto& s : p.col_labels)
    l.cols.push_back(shortened(s, 28)), l.col_w = std::max(l.col_w, text_width(l.cols.back(), scale));
  return l;
}

}  // namespace

HeatmapLayout heatmap_layout(const HeatmapPicture& p, int side) {
  const int nr = p.cells.rows, nc = p.cells.cols;
  HeatmapLayout l;
  l.cell = std::max(1, side / std::max({nr, nc, 1}));
  const Labels labels = labels_of(p, label_scale(l.cell));
  l.left = pad + labels.row_w + 6;
  l.top = title_h + labels.col_w + 6;
  l.width = l.left + nc * l.cell + pad + bar_w + bar_text;
  l.height = l.top + nr * l.cell + pad + legend_h;
  return l;
}

cv::Mat render_heatmap(const HeatmapPicture& p, int side) {
  const int nr = p.cells.rows, nc = p.cells.cols;
  const HeatmapLayout layout = heatmap_layout(p, side);
  const int f = layout.cell, left = layout.left, top = layout.top, width = layout.width, height = layout.height;
  const double scale = label_scale(f);
  int base = 0;
  const int line_h = cv::getTextSize("Ag", font, scale, 1, &base).height + base + 2;
  // Every k-th label when cells are smaller than a line of text.
  const int every = std::max(1, (line_h + f - 1) / f);
  const Labels labels = labels_of(p, scale);
  const auto& rows = labels.rows;
  const auto& cols = labels.cols;
  const int col_w = labels.col_w;
  cv::Mat img(height, width, CV_8UC3, white);

  // The cells.
  cv::Mat big;
  cv::resize(p.cells, big, {nc * f, nr * f}, 0, 0, cv::INTER_NEAREST);
  for (int y = 0; y < nr; ++y)
    for (int x = 0; x < nc; ++x)
      if (p.missing.at<std::uint8_t>(y, x)) big(cv::Rect(x * f, y * f, f, f)).setTo(grey);
  big.copyTo(img(cv::Rect(left, top, nc * f, nr * f)));
  cv::rectangle(img, {left - 1, top - 1}, {left + nc * f, top + nr * f}, ink);

  // Row names right-aligned to the left of their row, column names
  // vertical above their column (written, then turned).
  for (int i = 0; i < nr; i += every) {
    const int y = top + i * f + f / 2 + line_h / 2 - base;
    cv::putText(img, rows[static_cast<std::size_t>(i)], {left - 6 - text_width(rows[static_cast<std::size_t>(i)], scale), y},
                font, scale, ink, 1, cv::LINE_AA);
  }
  if (col_w > 0) {
    cv::Mat strip(line_h, col_w + 2, CV_8UC3);
    for (int j = 0; j < nc; j += every) {
      strip.setTo(white);
      cv::putText(strip, cols[static_cast<std::size_t>(j)], {0, line_h - base - 1}, font, scale, ink, 1, cv::LINE_AA);
      cv::Mat turned;
      cv::rotate(strip, turned, cv::ROTATE_90_COUNTERCLOCKWISE);  // reads bottom to top
      const int x = left + j * f + f / 2 - turned.cols / 2;
      const int y = top - 4 - turned.rows;
      const cv::Rect where(std::clamp(x, 0, width - turned.cols), std::max(0, y), turned.cols, turned.rows);
      turned.copyTo(img(where));
    }
  }

  cv::putText(img, p.title, {pad, 24}, font, 0.6, ink, 1, cv::LINE_AA);

  // The colour bar beside the matrix, high at the top, with five values.
  const int bx = left + nc * f + pad, bh = nr * f;
  for (int y = 0; y < bh; ++y) {
    const int k = bh > 1 ? 255 - static_cast<int>(std::lround(255.0 * y / (bh - 1))) : 255;
    img(cv::Rect(bx, top + y, bar_w, 1)).setTo(cv::Scalar(p.bar.at<cv::Vec3b>(0, k)));
  }
  cv::rectangle(img, {bx - 1, top - 1}, {bx + bar_w, top + bh}, ink);
  for (int t = 0; t <= 4; ++t) {
    const double v = p.high - (p.high - p.low) * t / 4.0;
    const int y = top + (bh - 1) * t / 4;
    cv::line(img, {bx + bar_w, y}, {bx + bar_w + 4, y}, ink);
    cv::putText(img, tick_text(v, p.log10), {bx + bar_w + 7, y + 4}, font, 0.4, ink, 1, cv::LINE_AA);
  }

  // What grey and the ends of the bar mean.
  const int ly = top + nr * f + pad + 14;
  cv::rectangle(img, {left, ly - 10}, {left + 12, ly + 2}, grey, cv::FILLED);
  cv::putText(img, "no value for the pair; the colour bar spans the 1st to 99th percentile", {left + 18, ly}, font, 0.4,
              ink, 1, cv::LINE_AA);
  return img;
}

}  // namespace flowd::io

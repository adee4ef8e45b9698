#include "label_mosaic.hpp"

#include <algorithm>
#include <stdexcept>

#include "flowd/error.hpp"

namespace flowd::io {

LabelMosaic::LabelMosaic(std::string image, int rows, int cols, int tiles)
    : image_(std::move(image)), rows_(rows), cols_(cols), expected_(tiles) {}

void LabelMosaic::add(int order, const cv::Mat& labels, const Box& bbox, const std::optional<Box>& core) {
  if (labels.type() != CV_32S) throw Error("image '" + image_ + "': tile labels must be i32");
  if (bbox.ndim != 2 || bbox.extent[0] != labels.rows || bbox.extent[1] != labels.cols)
    throw Error("image '" + image_ + "': a tile's bounding box does not match its " + std::to_string(labels.rows) +
                "x" + std::to_string(labels.cols) + " labels");
  if (bbox.origin[0] < 0 || bbox.origin[1] < 0 || bbox.origin[0] + bbox.extent[0] > rows_ ||
      bbox.origin[1] + bbox.extent[1] > cols_)
    throw Error("image '" + image_ + "': a tile's bounding box lies outside the " + std::to_string(rows_) + "x" +
                std::to_string(cols_) + " image");
  // Centroids in tile coordinates: the ownership test must use exactly the
  // rule a features stage applies to the same tile (mean pixel position, core
  // half-open), so a table row exists for each pasted object. A core that
  // holds the whole tile (a tile that is the whole image, or no core) owns
  // every object: a centroid lies within its object's pixels.
  const bool owns_all = !core || (core->origin[0] <= bbox.origin[0] && core->origin[1] <= bbox.origin[1] &&
                                  core->origin[0] + core->extent[0] >= bbox.origin[0] + bbox.extent[0] &&
                                  core->origin[1] + core->extent[1] >= bbox.origin[1] + bbox.extent[1]);
  // One pass: pixel counts (and coordinate sums, exact in 64 bits) by label.
  std::vector<std::int64_t> n, sr, sc;
  for (int r = 0; r < labels.rows; ++r) {
    const auto* row = labels.ptr<std::int32_t>(r);
    for (int c = 0; c < labels.cols; ++c) {
      const std::int32_t l = row[c];
      if (l <= 0) continue;
      const auto i = static_cast<std::size_t>(l);
      if (i >= n.size()) {
        n.resize(i + 1 + n.size() / 2);
        if (!owns_all) sr.resize(n.size()), sc.resize(n.size());
      }
      ++n[i];
      if (!owns_all) sr[i] += r, sc[i] += c;
    }
  }
  Tile t{order, labels, bbox, std::vector<std::int32_t>(n.size(), 0), owns_all};
  for (std::size_t l = 1; l < n.size(); ++l) {
    if (n[l] == 0) continue;
    if (owns_all) {
      t.owned[l] = 1;
      continue;
    }
    const double count = static_cast<double>(n[l]);
    const double cr = static_cast<double>(bbox.origin[0]) + static_cast<double>(sr[l]) / count;
    const double cc = static_cast<double>(bbox.origin[1]) + static_cast<double>(sc[l]) / count;
    t.owned[l] =
        cr >= static_cast<double>(core->origin[0]) && cr < static_cast<double>(core->origin[0] + core->extent[0]) &&
        cc >= static_cast<double>(core->origin[1]) && cc < static_cast<double>(core->origin[1] + core->extent[1]);
  }
  tiles_.push_back(std::move(t));
}

std::optional<cv::Mat> LabelMosaic::as_it_is(int* objects) const {
  if (tiles_.size() != 1) return std::nullopt;
  const Tile& t = tiles_.front();
  if (!t.owns_all || t.bbox.origin[0] != 0 || t.bbox.origin[1] != 0 || t.labels.rows != rows_ || t.labels.cols != cols_)
    return std::nullopt;
  const auto owned = static_cast<std::size_t>(std::count(t.owned.begin(), t.owned.end(), 1));
  for (std::size_t l = 1; l <= owned; ++l)
    if (!t.owned[l]) return std::nullopt;  // a gap: the objects are numbered anew
  if (objects) *objects = static_cast<int>(owned);
  return t.labels;
}

cv::Mat LabelMosaic::assemble(int* objects) const {
  std::vector<const Tile*> order;
  for (const auto& t : tiles_)
    order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const Tile* a, const Tile* b) { return a->order < b->order; });
  if (const auto same = as_it_is(objects)) return *same;
  cv::Mat out = cv::Mat::zeros(rows_, cols_, CV_32S);
  std::int32_t next = 0;
  for (const Tile* t : order) {
    std::vector<std::int32_t> id(t->owned.size(), 0);
    for (std::size_t l = 1; l < id.size(); ++l)
      if (t->owned[l]) id[l] = ++next;
    const int r0 = static_cast<int>(t->bbox.origin[0]), c0 = static_cast<int>(t->bbox.origin[1]);
    for (int r = 0; r < t->labels.rows; ++r) {
      const auto* src = t->labels.ptr<std::int32_t>(r);
      auto* dst = out.ptr<std::int32_t>(r0 + r) + c0;
      for (int c = 0; c < t->labels.cols; ++c) {
        const std::int32_t l = src[c];
        if (l > 0 && id[static_cast<std::size_t>(l)] != 0 && dst[c] == 0) dst[c] = id[static_cast<std::size_t>(l)];
      }
    }
  }
  if (objects) *objects = next;
  return out;
}

namespace {
template <class T>
void paint(cv::Mat& rgb, const cv::Mat& labels, const cv::Scalar& colour) {
  const T v[3] = {cv::saturate_cast<T>(colour[0]), cv::saturate_cast<T>(colour[1]), cv::saturate_cast<T>(colour[2])};
  for (int r = 0; r < labels.rows; ++r) {
    const auto* mid = labels.ptr<std::int32_t>(r);
    const auto* up = r > 0 ? labels.ptr<std::int32_t>(r - 1) : nullptr;
    const auto* down = r + 1 < labels.rows ? labels.ptr<std::int32_t>(r + 1) : nullptr;
    T* px = rgb.ptr<T>(r);
    for (int c = 0; c < labels.cols; ++c) {
      const std::int32_t l = mid[c];
      if (l <= 0) continue;
      // The image border counts as a border: an object cut by it is outlined there too.
      const bool edge = c == 0 || c + 1 == labels.cols || !up || !down || mid[c - 1] != l || mid[c + 1] != l ||
                        up[c] != l || down[c] != l;
      if (edge) px[3 * c] = v[0], px[3 * c + 1] = v[1], px[3 * c + 2] = v[2];
    }
  }
}
}  // namespace

void draw_contours(cv::Mat& rgb, const cv::Mat& labels, const cv::Scalar& colour) {
  if (rgb.size() != labels.size() || labels.type() != CV_32S || rgb.channels() != 3)
    throw Error("draw_contours: an RGB image and i32 labels of the same size are needed");
  if (rgb.depth() == CV_8U)
    paint<std::uint8_t>(rgb, labels, colour);
  else if (rgb.depth() == CV_16U)
    paint<std::uint16_t>(rgb, labels, colour * 257.0);
  else
    throw Error("draw_contours: the image must be u8 or u16");
}

}  // namespace flowd::io

#include "score/score.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace flowd::score {

namespace {

std::string size_text(const cv::Mat& m) { return std::to_string(m.cols) + "x" + std::to_string(m.rows); }

// Labels renumbered 1..n in increasing order of the original value, so the
// tie rules below ("smaller label") mean the same before and after.
struct Compact {
  cv::Mat ids;                       // CV_32S
  std::vector<std::int64_t> area;    // area[id], area[0] = background
  int n = 0;
};

Compact compact(const cv::Mat& m, const char* what) {
  if (m.channels() != 1 || (m.depth() != CV_32S && m.depth() != CV_16U && m.depth() != CV_8U))
    throw std::invalid_argument(std::string(what) + " is not a label image (type " + cv::typeToString(m.type()) +
                                "; expected one channel of CV_32S, CV_16U or CV_8U)");
  cv::Mat src;
  if (m.depth() == CV_32S) src = m;
  else m.convertTo(src, CV_32S);
  double lo = 0, hi = 0;
  cv::minMaxLoc(src, &lo, &hi);
  if (lo < 0)
    throw std::invalid_argument(std::string(what) + " has a negative label (" + std::to_string(static_cast<long long>(lo)) +
                                "); labels are 0 (background) or positive");
  Compact c;
  c.ids.create(src.size(), CV_32S);
  auto renumber = [&](auto&& id_of) {
    for (int y = 0; y < src.rows; ++y) {
      const int* s = src.ptr<int>(y);
      int* d = c.ids.ptr<int>(y);
      for (int x = 0; x < src.cols; ++x) d[x] = id_of(s[x]);
    }
  };
  // A lookup table when the labels are not sparse beyond reason; a hash map
  // (a few times slower) for arbitrary 32-bit labels.
  if (hi < static_cast<double>(std::max<std::size_t>(1 << 20, 4 * src.total()))) {
    std::vector<int> map(static_cast<std::size_t>(hi) + 1, 0);
    for (int y = 0; y < src.rows; ++y) {
      const int* s = src.ptr<int>(y);
      for (int x = 0; x < src.cols; ++x) map[static_cast<std::size_t>(s[x])] = 1;
    }
    for (std::size_t v = 1; v < map.size(); ++v) map[v] = map[v] ? ++c.n : 0;
    map[0] = 0;
    renumber([&](int v) { return map[static_cast<std::size_t>(v)]; });
  } else {
    std::unordered_map<int, int> map;
    for (int y = 0; y < src.rows; ++y) {
      const int* s = src.ptr<int>(y);
      for (int x = 0; x < src.cols; ++x)
        if (s[x] != 0) map.emplace(s[x], 0);
    }
    std::vector<int> values;
    values.reserve(map.size());
    for (const auto& [v, id] : map) values.push_back(v);
    std::sort(values.begin(), values.end());
    for (const int v : values) map[v] = ++c.n;
    renumber([&](int v) { return v == 0 ? 0 : map[v]; });
  }
  c.area.assign(static_cast<std::size_t>(c.n) + 1, 0);
  for (int y = 0; y < c.ids.rows; ++y) {
    const int* d = c.ids.ptr<int>(y);
    for (int x = 0; x < c.ids.cols; ++x) ++c.area[static_cast<std::size_t>(d[x])];
  }
  return c;
}

struct Overlap {
  int truth, pred;
  std::int64_t inter, uni;
};

// a.inter/a.uni > b.inter/b.uni, exactly: the products stay below 2^64 for
// any image under 2^32 pixels, within long double's 64-bit mantissa.
bool higher_iou(const Overlap& a, const Overlap& b) {
  return static_cast<long double>(a.inter) * static_cast<long double>(b.uni) >
         static_cast<long double>(b.inter) * static_cast<long double>(a.uni);
}

}  // namespace

Counts& Counts::operator+=(const Counts& o) {
  fg_both += o.fg_both;
  fg_pred += o.fg_pred;
  fg_truth += o.fg_truth;
  aji_intersection += o.aji_intersection;
  aji_union += o.aji_union;
  n_pred += o.n_pred;
  n_truth += o.n_truth;
  n_matched += o.n_matched;
  return *this;
}

Counts count(const cv::Mat& pred, const cv::Mat& truth) {
  if (pred.size() != truth.size())
    throw std::invalid_argument("prediction is " + size_text(pred) + " but truth is " + size_text(truth));
  const Compact p = compact(pred, "prediction");
  const Compact t = compact(truth, "truth");
  Counts c;
  c.n_pred = p.n;
  c.n_truth = t.n;

  // The sparse contingency table in one pass; runs of one (truth, pred) pair
  // along a row cost one hash update.
  std::unordered_map<std::uint64_t, std::int64_t> table;
  auto key = [](int tl, int pl) { return static_cast<std::uint64_t>(tl) << 32 | static_cast<std::uint32_t>(pl); };
  for (int y = 0; y < t.ids.rows; ++y) {
    const int* tr = t.ids.ptr<int>(y);
    const int* pr = p.ids.ptr<int>(y);
    int x = 0;
    const int w = t.ids.cols;
    while (x < w) {
      const int tl = tr[x], pl = pr[x];
      int end = x + 1;
      while (end < w && tr[end] == tl && pr[end] == pl) ++end;
      if (tl != 0 && pl != 0) table[key(tl, pl)] += end - x;
      x = end;
    }
  }
  c.fg_pred = static_cast<std::int64_t>(p.ids.total()) - p.area[0];
  c.fg_truth = static_cast<std::int64_t>(t.ids.total()) - t.area[0];

  std::vector<Overlap> overlaps;
  overlaps.reserve(table.size());
  for (const auto& [k, inter] : table) {
    const int tl = static_cast<int>(k >> 32), pl = static_cast<int>(k & 0xffffffffU);
    overlaps.push_back({tl, pl, inter, t.area[static_cast<std::size_t>(tl)] + p.area[static_cast<std::size_t>(pl)] - inter});
    c.fg_both += inter;
  }
  std::sort(overlaps.begin(), overlaps.end(),
            [](const Overlap& a, const Overlap& b) { return a.truth != b.truth ? a.truth < b.truth : a.pred < b.pred; });

  // Object matching. A pair with IoU > 0.5 excludes every other pair of its
  // two objects, so only pairs at exactly 0.5 can compete; a maximum
  // bipartite matching (augmenting paths) settles those.
  std::vector<std::vector<int>> candidates(static_cast<std::size_t>(t.n) + 1);
  for (const auto& o : overlaps)
    if (2 * o.inter >= o.uni) candidates[static_cast<std::size_t>(o.truth)].push_back(o.pred);
  std::vector<int> owner(static_cast<std::size_t>(p.n) + 1, 0), seen(static_cast<std::size_t>(p.n) + 1, 0);
  int stamp = 0;
  std::function<bool(int)> augment = [&](int tl) {
    for (const int pl : candidates[static_cast<std::size_t>(tl)]) {
      auto& s = seen[static_cast<std::size_t>(pl)];
      if (s == stamp) continue;
      s = stamp;
      auto& o = owner[static_cast<std::size_t>(pl)];
      if (o == 0 || augment(o)) {
        o = tl;
        return true;
      }
    }
    return false;
  };
  for (int tl = 1; tl <= t.n; ++tl) {
    if (candidates[static_cast<std::size_t>(tl)].empty()) continue;
    ++stamp;
    if (augment(tl)) ++c.n_matched;
  }

  // AJI (Kumar et al. 2017, algorithm 1): each truth object takes the
  // prediction of highest IoU (a prediction may serve several); predictions
  // no truth took add their whole area to the union.
  std::vector<char> used(static_cast<std::size_t>(p.n) + 1, 0);
  std::size_t i = 0;
  for (int tl = 1; tl <= t.n; ++tl) {
    const Overlap* best = nullptr;
    // Sorted by pred within a truth, and only a strictly higher IoU
    // replaces the best: ties go to the smaller prediction label.
    for (; i < overlaps.size() && overlaps[i].truth == tl; ++i)
      if (best == nullptr || higher_iou(overlaps[i], *best)) best = &overlaps[i];
    if (best == nullptr) {
      c.aji_union += t.area[static_cast<std::size_t>(tl)];
      continue;
    }
    c.aji_intersection += best->inter;
    c.aji_union += best->uni;
    used[static_cast<std::size_t>(best->pred)] = 1;
  }
  for (int pl = 1; pl <= p.n; ++pl)
    if (!used[static_cast<std::size_t>(pl)]) c.aji_union += p.area[static_cast<std::size_t>(pl)];
  return c;
}

Scores scores_of(const Counts& c) {
  Scores s;
  s.n_pred = c.n_pred;
  s.n_truth = c.n_truth;
  s.n_matched = c.n_matched;
  const auto ratio = [](double num, double den) { return den > 0 ? num / den : 1.0; };
  s.dice = ratio(2.0 * static_cast<double>(c.fg_both), static_cast<double>(c.fg_pred + c.fg_truth));
  // With no predictions precision is 0 unless there was nothing to find
  // (and symmetrically for recall), so F1 = 2M / (P + T) always holds.
  s.precision = c.n_pred > 0 ? static_cast<double>(c.n_matched) / c.n_pred : (c.n_truth > 0 ? 0.0 : 1.0);
  s.recall = c.n_truth > 0 ? static_cast<double>(c.n_matched) / c.n_truth : (c.n_pred > 0 ? 0.0 : 1.0);
  s.f1 = ratio(2.0 * c.n_matched, static_cast<double>(c.n_pred) + c.n_truth);
  s.aji = ratio(static_cast<double>(c.aji_intersection), static_cast<double>(c.aji_union));
  return s;
}

}  // namespace flowd::score

#include "write_pairs.hpp"
#include "quoting.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "flowd/opencv.hpp"
#include "h5.hpp"
#include "heatmap_picture.hpp"

namespace flowd::io {

namespace fs = std::filesystem;

namespace {

constexpr const char* format_name = "flowd.pairs/1";
// heatmap_log shows log10(max(score, log_floor)).
constexpr double log_floor = 1e-6;
// The heat map's longest side when cells are enlarged (each cell an integer
// number of pixels, at least one).
constexpr std::int64_t heatmap_side = 1600;
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// 'a', 'b', 'c'
std::string quoted_names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += (s.empty() ? "'" : ", '") + e + "'";
  return s;
}

// RFC 4180: a field is quoted only when it holds a comma, a quote or a line
// break; quotes inside are doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

void append_number(std::string& line, double v) {
  if (std::isnan(v)) {
    line += "nan";
    return;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  line += buf;
}

// ---- average-linkage clustering ----

// Leaf order of the average-linkage (UPGMA) dendrogram of n objects with the
// symmetric distances `d` (n x n, row-major; the diagonal is ignored), built
// with the nearest-neighbour chain algorithm (O(n^2) time). Deterministic:
// the nearest neighbour of a chain's end is the previous chain element on a
// tie, else the lowest index; a merged cluster takes the slot of its lower
// index, and in the leaf order the child holding the lower index comes first.
std::vector<std::int64_t> leaf_order(std::size_t n, std::vector<double> d) {
  if (n == 0) return {};
  std::vector<std::size_t> size(n, 1);
  std::vector<bool> active(n, true);
  std::vector<std::size_t> node(n);  // slot -> dendrogram node (leaves 0..n-1, merges n..2n-2)
  for (std::size_t i = 0; i < n; ++i) node[i] = i;
  std::vector<std::pair<std::size_t, std::size_t>> children;  // of node n + k
  children.reserve(n - 1);
  std::vector<std::size_t> chain;
  for (std::size_t remaining = n; remaining > 1; --remaining) {
    if (chain.empty())
      for (std::size_t i = 0; i < n; ++i)
        if (active[i]) {
          chain.push_back(i);
          break;
        }
    while (true) {
      const std::size_t x = chain.back();
      const bool has_prev = chain.size() >= 2;
      std::size_t best = has_prev ? chain[chain.size() - 2] : n;
      double best_d = has_prev ? d[x * n + best] : std::numeric_limits<double>::infinity();
      for (std::size_t y = 0; y < n; ++y) {
        if (!active[y] || y == x) continue;
        if (best == n || d[x * n + y] < best_d) {
          best = y;
          best_d = d[x * n + y];
        }
      }
      if (has_prev && best == chain[chain.size() - 2]) break;
      chain.push_back(best);
    }
    const std::size_t x = chain.back();
    chain.pop_back();
    const std::size_t y = chain.back();
    chain.pop_back();
    const std::size_t i = std::min(x, y), j = std::max(x, y);
    const double si = static_cast<double>(size[i]), sj = static_cast<double>(size[j]);
    for (std::size_t k = 0; k < n; ++k) {
      if (!active[k] || k == i || k == j) continue;
      const double v = (si * d[i * n + k] + sj * d[j * n + k]) / (si + sj);
      d[i * n + k] = v;
      d[k * n + i] = v;
    }
    size[i] += size[j];
    active[j] = false;
    children.emplace_back(node[i], node[j]);
    node[i] = n + children.size() - 1;
  }
  std::vector<std::int64_t> order;
  order.reserve(n);
  std::vector<std::size_t> stack{n == 1 ? 0 : n + children.size() - 1};
  while (!stack.empty()) {
    const std::size_t v = stack.back();
    stack.pop_back();
    if (v < n) {
      order.push_back(static_cast<std::int64_t>(v));
    } else {
      stack.push_back(children[v - n].second);
      stack.push_back(children[v - n].first);
    }
  }
  return order;
}

// Distances between the rows (or, with `by_columns`, the columns) of the
// r x c matrix v: the root mean square difference over the positions where
// both are finite; `worst` where there is none.
std::vector<double> profile_distances(const std::vector<double>& v, std::size_t r, std::size_t c, bool by_columns,
                                      double worst) {
  const std::size_t n = by_columns ? c : r, len = by_columns ? r : c;
  auto at = [&](std::size_t obj, std::size_t k) { return by_columns ? v[k * c + obj] : v[obj * c + k]; };
  std::vector<double> d(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      double sum = 0;
      std::size_t count = 0;
      for (std::size_t k = 0; k < len; ++k) {
        const double x = at(i, k), y = at(j, k);
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        sum += (x - y) * (x - y);
        ++count;
      }
      d[i * n + j] = d[j * n + i] = count ? std::sqrt(sum / static_cast<double>(count)) : worst;
    }
  return d;
}

struct Heatmap {
  std::vector<std::uint8_t> png;
  std::vector<std::int64_t> row_order, col_order;
};

}  // namespace

OperatorSpec WritePairs::spec() {
  OperatorSpec s;
  s.name = "io.write_pairs";
  s.doc = "Writes the score table of an all-pairs stage as CSV, as HDF5 rows x cols score matrices and/or as a "
          "clustered heat map PNG; files appear only when the run succeeds";
  s.inputs = {{"scores", "table",
               "the one table an all-pairs stage emits: a, b (i64 indices), one f64 column per score; attrs rows, "
               "cols, pairs, scores"}};
  s.params = {
      ParamSpec::string("csv", "").doc("CSV file to write (\"\" = none): a,b,<scores...>, one row per pair"),
      ParamSpec::string("hdf5", "").doc(
          "HDF5 file to write (\"\" = none): /rows, /cols and one rows x cols matrix /scores/<name> per score"),
      ParamSpec::string("heatmap", "").doc(
          "PNG file to write (\"\" = none): the matrix of heatmap_score, rows and columns ordered by clustering"),
      ParamSpec::string("heatmap_score", "").doc("the score the heat map shows; \"\" = the first"),
      ParamSpec::boolean("heatmap_log", false)
          .doc("show log10(max(score, 1e-6)) instead of the score (for PCE-like scores)"),
      ParamSpec::string("a_name", "a").doc("CSV header of the first key column"),
      ParamSpec::string("b_name", "b").doc("CSV header of the second key column"),
  };
  return s;
}

WritePairs::WritePairs(const Params& params)
    : csv_(params.get<std::string>("csv")),
      hdf5_(params.get<std::string>("hdf5")),
      heatmap_(params.get<std::string>("heatmap")),
      heatmap_score_(params.get<std::string>("heatmap_score")),
      heatmap_log_(params.get<bool>("heatmap_log")),
      a_name_(params.get<std::string>("a_name")),
      b_name_(params.get<std::string>("b_name")) {
  if (csv_.empty() && hdf5_.empty() && heatmap_.empty())
    throw ParamError("csv", "io.write_pairs writes nothing: give at least one of the parameters csv, hdf5 or heatmap");
  const std::pair<const char*, const fs::path*> outputs[] = {{"csv", &csv_}, {"hdf5", &hdf5_}, {"heatmap", &heatmap_}};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& [name, path] = outputs[i];
    if (path->empty()) continue;
    if (path->filename().empty() || *path == "." || *path == "..")
      throw ParamError(name, std::string(name) + " must name a file, got " + quoted(*path));
    for (std::size_t j = 0; j < i; ++j)
      if (!outputs[j].second->empty() && path->lexically_normal() == outputs[j].second->lexically_normal())
        throw ParamError(name, std::string("parameters ") + outputs[j].first + " and " + name + " name the same file " +
                                   quoted(*path));
  }
  if (a_name_.empty()) throw ParamError("a_name", "a_name is empty");
  if (b_name_.empty()) throw ParamError("b_name", "b_name is empty");
  if (!heatmap_.empty()) use_one_opencv_thread();
}

std::string WritePairs::who(const SinkContext& ctx) const { return "stage '" + ctx.stage() + "' (io.write_pairs)"; }

void WritePairs::open(SinkContext& ctx) {
  for (const fs::path* p : {&csv_, &hdf5_, &heatmap_})
    if (!p->empty()) ctx.output_file(*p);
}

void WritePairs::consume(SinkContext& ctx) {
  const Item& in = ctx.input("scores");
  const std::string at = who(ctx) + ", item '" + in.meta.key + "': ";
  if (item_)
    throw Error(at + "a second item arrived after '" + item_->meta.key +
                "'; io.write_pairs takes the one table of an all-pairs stage");
  if (kind_of(in.value) != ValueKind::table) throw Error(at + "expected a table, got " + describe(in.value));

  // The attributes the all-pairs stage sets.
  const Json& attrs = in.meta.attrs;
  auto strings = [&](const char* name) {
    const auto it = attrs.is_object() ? attrs.find(name) : attrs.end();
    if (it == attrs.end() || !it->is_array())
      throw Error(at + "the item's attrs have no array '" + name +
                  "' (expected the table of an all-pairs stage, with attrs rows, cols, pairs and scores)");
    std::vector<std::string> out;
    out.reserve(it->size());
    for (const auto& v : *it) {
      if (!v.is_string()) throw Error(at + "attrs '" + name + "' holds " + v.dump() + ", not a string");
      out.push_back(v.get<std::string>());
    }
    return out;
  };
  Scores s;
  s.rows = strings("rows");
  s.cols = strings("cols");
  s.names = strings("scores");
  const auto pairs = attrs.find("pairs");
  if (pairs == attrs.end() || !pairs->is_string())
    throw Error(at + "the item's attrs have no string 'pairs' (\"triangle\", \"triangle-with-diagonal\" or "
                     "\"rectangle\")");
  s.shape_name = pairs->get<std::string>();
  if (s.shape_name == "triangle") s.shape = Shape::triangle;
  else if (s.shape_name == "triangle-with-diagonal") s.shape = Shape::triangle_with_diagonal;
  else if (s.shape_name == "rectangle") s.shape = Shape::rectangle;
  else
    throw Error(at + "attrs 'pairs' is '" + s.shape_name +
                "'; expected \"triangle\", \"triangle-with-diagonal\" or \"rectangle\"");
  if (s.names.empty()) throw Error(at + "attrs 'scores' is empty: the table has no score to write");
  if (s.shape != Shape::rectangle && s.rows.size() != s.cols.size())
    throw Error(at + "a " + s.shape_name + " of " + std::to_string(s.rows.size()) + " rows has " +
                std::to_string(s.cols.size()) + " cols; both must list the same keys");
  for (std::size_t i = 0; i < s.names.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (s.names[i] == s.names[j]) throw Error(at + "attrs 'scores' names '" + s.names[i] + "' twice");
  if (!hdf5_.empty())
    for (const auto& n : s.names)
      if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos)
        throw Error(at + "score '" + n + "' cannot name an HDF5 dataset (empty, '.', '..' or containing '/')");
  if (!heatmap_.empty() && !heatmap_score_.empty()) {
    const auto it = std::find(s.names.begin(), s.names.end(), heatmap_score_);
    if (it == s.names.end())
      throw Error(at + "heatmap_score '" + heatmap_score_ + "' is not one of the table's scores " + quoted_names(s.names));
    s.heatmap_score = static_cast<std::size_t>(it - s.names.begin());
  }

  // Keep the table, then check its columns in the kept copy.
  item_.emplace(in);
  try {
    const Table& t = item_->table();
    auto column = [&](const std::string& name, ColumnType type, const char* type_name) {
      const Column* c = t.find(name);
      if (!c || c->type() != type)
        throw Error(at + "the table has no " + type_name + " column '" + name + "' (its columns: " + t.schema() + ")");
    };
    column("a", ColumnType::i64, "i64");
    column("b", ColumnType::i64, "i64");
    for (const auto& n : s.names) column(n, ColumnType::f64, "f64");
    s.a = &t.column<std::int64_t>("a");
    s.b = &t.column<std::int64_t>("b");
    for (const auto& n : s.names) s.values.push_back(&t.column<double>(n));
    const std::size_t n = t.rows();  // checks that the columns have one length
    const auto nr = static_cast<std::int64_t>(s.rows.size()), nc = static_cast<std::int64_t>(s.cols.size());
    for (std::size_t r = 0; r < n; ++r) {
      const std::int64_t a = (*s.a)[r], b = (*s.b)[r];
      if (a < 0 || a >= nr || b < 0 || b >= nc)
        throw Error(at + "table row " + std::to_string(r) + " is the pair (a = " + std::to_string(a) +
                    ", b = " + std::to_string(b) + "), outside the " + std::to_string(nr) + " rows x " +
                    std::to_string(nc) + " cols of attrs rows and cols");
    }
  } catch (...) {
    item_.reset();
    throw;
  }
  scores_ = std::move(s);
}

void WritePairs::commit(SinkContext& ctx) {
  if (!item_) {
    ctx.warn("received no score table; nothing written");
    return;
  }
  const Scores& s = scores_;
  const std::size_t nr = s.rows.size(), nc = s.cols.size();
  const bool triangle = s.shape != Shape::rectangle;

  std::optional<Heatmap> heat;
  if (!heatmap_.empty()) {
    // The displayed values: mirrored for triangles, log10 on request.
    std::vector<double> v(nr * nc, nan);
    const auto& col = *s.values[s.heatmap_score];
    for (std::size_t r = 0; r < col.size(); ++r) {
      double x = col[r];
      if (heatmap_log_ && !std::isnan(x)) x = std::log10(std::max(x, log_floor));
      const auto a = static_cast<std::size_t>((*s.a)[r]), b = static_cast<std::size_t>((*s.b)[r]);
      v[a * nc + b] = x;
      if (triangle) v[b * nc + a] = x;
    }
    // The range of the finite off-diagonal values (the diagonal of a
    // triangle is replaced below).
    double top = -std::numeric_limits<double>::infinity(), bottom = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < nr; ++i)
      for (std::size_t j = 0; j < nc; ++j) {
        const double x = v[i * nc + j];
        if ((triangle && i == j) || !std::isfinite(x)) continue;
        top = std::max(top, x);
        bottom = std::min(bottom, x);
      }
    const bool any = top >= bottom;
    const double worst = any ? top - bottom : 0.0;  // the distance of a missing pair
    if (triangle) {
      for (std::size_t i = 0; i < nr; ++i) {
        double row_max = nan;
        for (std::size_t j = 0; j < nc; ++j)
          if (j != i && std::isfinite(v[i * nc + j]) && !(row_max >= v[i * nc + j])) row_max = v[i * nc + j];
        v[i * nc + i] = row_max;
      }
    }

    Heatmap h;
    if (triangle) {
      std::vector<double> d(nr * nr, 0.0);
      for (std::size_t i = 0; i < nr; ++i)
        for (std::size_t j = 0; j < nr; ++j)
          if (i != j) d[i * nr + j] = std::isfinite(v[i * nc + j]) ? top - v[i * nc + j] : worst;
      h.row_order = leaf_order(nr, std::move(d));
      h.col_order = h.row_order;
    } else {
      h.row_order = leaf_order(nr, profile_distances(v, nr, nc, false, worst));
      h.col_order = leaf_order(nc, profile_distances(v, nr, nc, true, worst));
    }

    // Colours: viridis between the 1st and 99th percentile of the finite values.
    std::vector<double> finite;
    for (const double x : v)
      if (std::isfinite(x)) finite.push_back(x);
    double lo = 0, hi = 0;
    if (!finite.empty()) {
      std::sort(finite.begin(), finite.end());
      auto quantile = [&](double q) {
        return finite[static_cast<std::size_t>(std::llround(q * static_cast<double>(finite.size() - 1)))];
      };
      lo = quantile(0.01);
      hi = quantile(0.99);
    }
    cv::Mat level(static_cast<int>(nr), static_cast<int>(nc), CV_8UC1);
    cv::Mat missing(static_cast<int>(nr), static_cast<int>(nc), CV_8UC1);
    for (std::size_t i = 0; i < nr; ++i)
      for (std::size_t j = 0; j < nc; ++j) {
        const double x = v[static_cast<std::size_t>(h.row_order[i]) * nc + static_cast<std::size_t>(h.col_order[j])];
        const bool ok = std::isfinite(x);
        const double t = !ok ? 0.0 : hi > lo ? std::clamp((x - lo) / (hi - lo), 0.0, 1.0) : 0.5;
        level.at<std::uint8_t>(static_cast<int>(i), static_cast<int>(j)) = static_cast<std::uint8_t>(std::lround(t * 255));
        missing.at<std::uint8_t>(static_cast<int>(i), static_cast<int>(j)) = ok ? 0 : 1;
      }
    HeatmapPicture pic;
    cv::applyColorMap(level, pic.cells, cv::COLORMAP_VIRIDIS);
    pic.missing = missing;
    for (const auto i : h.row_order) pic.row_labels.push_back(s.rows[static_cast<std::size_t>(i)]);
    for (const auto j : h.col_order) pic.col_labels.push_back(s.cols[static_cast<std::size_t>(j)]);
    pic.title = s.names[s.heatmap_score] + (heatmap_log_ ? " (log scale)" : "") + " of " + std::to_string(nr) + " x " +
                std::to_string(nc) + (triangle ? " items" : "") + ", ordered by average-linkage clustering" +
                (triangle ? "; diagonal: the row's best" : "");
    pic.low = lo;
    pic.high = hi;
    pic.log10 = heatmap_log_;
    cv::Mat ramp(1, 256, CV_8UC1);
    for (int k = 0; k < 256; ++k) ramp.at<std::uint8_t>(0, k) = static_cast<std::uint8_t>(k);
    cv::applyColorMap(ramp, pic.bar, cv::COLORMAP_VIRIDIS);
    const cv::Mat big = render_heatmap(pic, static_cast<int>(heatmap_side));
    try {
      if (!cv::imencode(".png", big, h.png)) throw Error("cannot encode the heat map as PNG");
    } catch (const cv::Exception& e) {
      throw Error(who(ctx) + ": writing " + quoted(heatmap_) + ": cannot encode the heat map as PNG: " + e.err);
    }
    heat = std::move(h);
  }

  if (!csv_.empty()) write_csv(ctx);
  if (!hdf5_.empty()) write_hdf5(ctx, heat ? &heat->row_order : nullptr, heat ? &heat->col_order : nullptr);
  if (heat) {
    try {
      ctx.write_output(heatmap_, heat->png);
    } catch (const std::exception& e) {
      throw Error(who(ctx) + ": " + e.what());
    }
  }
}

void WritePairs::write_csv(SinkContext& ctx) const {
  const Scores& s = scores_;
  const fs::path temp = ctx.stage_output(csv_);
  const std::string at = who(ctx) + ": writing " + quoted(csv_) + ": ";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(temp.c_str(), "wb"), &std::fclose);
  if (!f) throw Error(at + std::strerror(errno));
  std::string line = csv_field(a_name_) + "," + csv_field(b_name_);
  for (const auto& n : s.names) line += "," + csv_field(n);
  line += "\n";
  std::vector<std::string> rows, cols;  // the keys as CSV fields
  for (const auto& k : s.rows) rows.push_back(csv_field(k));
  for (const auto& k : s.cols) cols.push_back(csv_field(k));
  const std::size_t n = s.a->size();
  for (std::size_t r = 0;; ++r) {
    if (line.size() >= (1u << 20) || r == n) {
      if (std::fwrite(line.data(), 1, line.size(), f.get()) != line.size()) throw Error(at + std::strerror(errno));
      line.clear();
    }
    if (r == n) break;
    line += rows[static_cast<std::size_t>((*s.a)[r])];
    line += ',';
    line += cols[static_cast<std::size_t>((*s.b)[r])];
    for (const auto* c : s.values) {
      line += ',';
      append_number(line, (*c)[r]);
    }
    line += '\n';
  }
  std::FILE* raw = f.release();
  if (std::fflush(raw) != 0 || std::ferror(raw)) {
    const int e = errno;
    std::fclose(raw);
    throw Error(at + std::strerror(e));
  }
  if (std::fclose(raw) != 0) throw Error(at + std::strerror(errno));
}

void WritePairs::write_hdf5(SinkContext& ctx, const std::vector<std::int64_t>* row_order,
                            const std::vector<std::int64_t>* col_order) const {
  h5::Quiet quiet;
  const Scores& s = scores_;
  const std::size_t nr = s.rows.size(), nc = s.cols.size();
  const bool triangle = s.shape != Shape::rectangle;
  try {
    h5::Id file = h5::create_file(ctx.stage_output(hdf5_));
    auto strings = [&](const char* path, const std::vector<std::string>& values) {
      const hsize_t n = values.size();
      h5::Id type = h5::string_type();
      h5::Id space = h5::check(H5Screate_simple(1, &n, nullptr), H5Sclose, "cannot create a dataspace");
      h5::Id ds = h5::check(H5Dcreate2(file, path, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose,
                            std::string("cannot create dataset '") + path + "'");
      std::vector<const char*> p;
      for (const auto& v : values) p.push_back(v.c_str());
      if (n) h5::check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()), std::string("cannot write ") + path);
      ds.close(std::string("cannot write ") + path);
    };
    auto ints = [&](const char* path, const std::vector<std::int64_t>& values) {
      const hsize_t n = values.size();
      h5::Id space = h5::check(H5Screate_simple(1, &n, nullptr), H5Sclose, "cannot create a dataspace");
      h5::Id ds = h5::check(H5Dcreate2(file, path, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                            H5Dclose, std::string("cannot create dataset '") + path + "'");
      if (n) h5::check(H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                       std::string("cannot write ") + path);
      ds.close(std::string("cannot write ") + path);
    };
    strings("/rows", s.rows);
    strings("/cols", s.cols);
    {
      h5::Id root = h5::check(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, "cannot open the root group");
      h5::set_attr(root, "flowd_format", std::string(format_name));
      h5::set_attr(root, "pairs", s.shape_name);
      h5::set_attr(root, "scores", s.names);
      h5::set_attr(root, "provenance", ctx.provenance().dump());
      root.close("cannot close the root group");
    }
    h5::Id group = h5::create_group(file, "/scores", /*track_order=*/true);
    const hsize_t dims[2] = {nr, nc};
    std::vector<double> m;
    for (std::size_t k = 0; k < s.names.size(); ++k) {
      m.assign(nr * nc, nan);
      const auto& col = *s.values[k];
      for (std::size_t r = 0; r < col.size(); ++r) {
        const auto a = static_cast<std::size_t>((*s.a)[r]), b = static_cast<std::size_t>((*s.b)[r]);
        m[a * nc + b] = col[r];
        if (triangle) m[b * nc + a] = col[r];
      }
      h5::Id space = h5::check(H5Screate_simple(2, dims, nullptr), H5Sclose, "cannot create a dataspace");
      h5::Id dcpl = h5::check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "cannot create a property list");
      if (nr * nc >= 4096) {
        // Chunks of about 1 MiB, whole rows where they fit.
        const hsize_t chunk[2] = {std::clamp<hsize_t>(131072 / std::max<hsize_t>(nc, 1), 1, nr),
                                  std::min<hsize_t>(nc, 131072)};
        h5::check(H5Pset_chunk(dcpl, 2, chunk), "cannot set the chunk shape");
        h5::check(H5Pset_shuffle(dcpl), "cannot enable shuffling");
        h5::check(H5Pset_deflate(dcpl, 4), "cannot enable gzip");
      }
      const std::string path = "/scores/" + s.names[k];
      h5::Id ds = h5::check(H5Dcreate2(file, path.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                            H5Dclose, "cannot create dataset '" + path + "'");
      if (!m.empty())
        h5::check(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.data()), "cannot write " + path);
      ds.close("cannot write " + path);
    }
    group.close("cannot close group /scores");
    if (row_order) ints("/heatmap_order", *row_order);
    if (col_order) ints("/heatmap_col_order", *col_order);
    file.close("cannot close the file");
  } catch (const std::exception& e) {
    throw Error(who(ctx) + ": writing " + quoted(hdf5_) + ": " + e.what());
  }
}

void WritePairs::abort() noexcept {
  item_.reset();
  scores_ = {};
}

}  // namespace flowd::io

// io.write_pairs: CSV text, HDF5 matrices, the clustered heat map, errors.
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "heatmap_picture.hpp"
#include "io_support.hpp"

using namespace flowd;
using namespace flowd::iotest;

namespace {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

// The table an all-pairs stage emits: one entry of `pairs` per row, {a, b,
// score...}.
Item pairs_item(const std::vector<std::string>& rows, const std::vector<std::string>& cols, const std::string& shape,
                const std::vector<std::string>& names, const std::vector<std::vector<double>>& pairs) {
  Table t;
  auto& a = t.add_column<std::int64_t>("a");
  auto& b = t.add_column<std::int64_t>("b");
  std::vector<std::vector<double>*> s;
  for (const auto& n : names) s.push_back(&t.add_column<double>(n));
  for (const auto& p : pairs) {
    a.push_back(static_cast<std::int64_t>(p.at(0)));
    b.push_back(static_cast<std::int64_t>(p.at(1)));
    for (std::size_t k = 0; k < names.size(); ++k) s[k]->push_back(p.at(2 + k));
  }
  Item i = table_item("pairs", std::move(t));
  i.meta.attrs = {{"rows", rows}, {"cols", cols}, {"pairs", shape}, {"scores", names}};
  return i;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A 2-D float64 dataset: its shape and values.
struct Matrix {
  std::vector<hsize_t> dims;
  std::vector<double> v;
  double at(std::size_t i, std::size_t j) const { return v.at(i * dims.at(1) + j); }
};

Matrix h5_matrix(hid_t file, const std::string& path) {
  Matrix m;
  H5 ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) return m;
  H5 space(H5Dget_space(ds), H5Sclose);
  m.dims.resize(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, m.dims.data(), nullptr);
  m.v.resize(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.v.data());
  return m;
}

// Matrix entries as text, "nan" for NaN: rows separated by ';'.
std::string text(const Matrix& m) {
  std::string s;
  for (std::size_t i = 0; i < m.dims.at(0); ++i) {
    if (i) s += ";";
    for (std::size_t j = 0; j < m.dims.at(1); ++j) {
      if (j) s += " ";
      const double x = m.at(i, j);
      if (std::isnan(x)) {
        s += "nan";
      } else {
        std::ostringstream o;
        o << x;
        s += o.str();
      }
    }
  }
  return s;
}

// Two interleaved clusters: members 0, 2, 4 and 1, 3, 5 of six keys (k0 …
// k5) are similar to each other (about 0.9) and not to the others (about 0.1).
double block_similarity(std::size_t i, std::size_t j) {
  const double jitter = 0.01 * static_cast<double>((i * 7 + j * 3) % 5);
  return (i % 2 == j % 2) ? 0.9 - jitter : 0.1 + jitter;
}

const std::vector<std::string> six = {"k0", "k1", "k2", "k3", "k4", "k5"};

// Whether the positions of each block's members in `order` are adjacent.
bool blocks_adjacent(const std::vector<std::int64_t>& order) {
  if (order.size() != 6) return false;
  std::set<std::int64_t> first(order.begin(), order.begin() + 3), second(order.begin() + 3, order.end());
  const std::set<std::int64_t> even{0, 2, 4}, odd{1, 3, 5};
  return (first == even && second == odd) || (first == odd && second == even);
}

}  // namespace

TEST(WritePairs, CsvOfATriangleIsExact) {
  const auto dir = test::scratch();
  auto h = harness("io.write_pairs", {{"csv", (dir / "p.csv").string()}, {"a_name", "x"}, {"b_name", "y,z"}});
  h.consume({pairs_item({"img1", "img,2", "q\"3"}, {"img1", "img,2", "q\"3"}, "triangle", {"ncc", "pce"},
                        {{0, 1, 0.5, 12.5}, {0, 2, 1.0 / 3, NaN}, {1, 2, -1, 1e20}})});
  EXPECT_TRUE(files_below(dir).empty());  // nothing before the commit
  h.commit();
  EXPECT_EQ(read_text(dir / "p.csv"),
            "x,\"y,z\",ncc,pce\n"
            "img1,\"img,2\",0.5,12.5\n"
            "img1,\"q\"\"3\",0.33333333333333331,nan\n"
            "\"img,2\",\"q\"\"3\",-1,1e+20\n");
  EXPECT_EQ(files_below(dir), (std::vector<std::string>{"p.csv"}));
}

TEST(WritePairs, CsvOfARectangleIsExact) {
  const auto dir = test::scratch();
  auto h = harness("io.write_pairs", {{"csv", (dir / "r.csv").string()}});
  h.consume({pairs_item({"a1", "a2"}, {"b1", "b2", "b3"}, "rectangle", {"s"},
                        {{0, 0, 1}, {0, 1, 2.5}, {0, 2, 0.1}, {1, 0, -0.0}, {1, 1, 1e-300 / 3}, {1, 2, 7}})});
  h.commit();
  EXPECT_EQ(read_text(dir / "r.csv"),
            "a,b,s\n"
            "a1,b1,1\n"
            "a1,b2,2.5\n"
            "a1,b3,0.10000000000000001\n"
            "a2,b1,-0\n"
            "a2,b2,3.3333333333333334e-301\n"
            "a2,b3,7\n");
}

TEST(WritePairs, Hdf5HoldsMirroredTriangleMatricesKeysAndProvenance) {
  const auto dir = test::scratch();
  auto h = harness("io.write_pairs", {{"hdf5", (dir / "p.h5").string()}});
  h.provenance = {{"flowd_version", "0.1.0"}, {"workflow_sha256", "ab12"}};
  h.consume({pairs_item({"a", "b", "c", "d"}, {"a", "b", "c", "d"}, "triangle", {"ncc", "pce"},
                        {{0, 1, 0.5, 10}, {0, 2, 0.25, 20}, {1, 3, -1, 30}})});  // (0,3), (1,2), (2,3) missing
  h.commit();
  H5 f = open_h5(dir / "p.h5");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(h5_string_column(f, "/rows"), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(h5_string_column(f, "/cols"), (std::vector<std::string>{"a", "b", "c", "d"}));
  const Matrix ncc = h5_matrix(f, "/scores/ncc");
  ASSERT_EQ(ncc.dims, (std::vector<hsize_t>{4, 4}));
  EXPECT_EQ(text(ncc), "nan 0.5 0.25 nan;0.5 nan nan -1;0.25 nan nan nan;nan -1 nan nan");
  EXPECT_EQ(text(h5_matrix(f, "/scores/pce")), "nan 10 20 nan;10 nan nan 30;20 nan nan nan;nan 30 nan nan");
  EXPECT_EQ(h5_string_attr(f, "/", "pairs"), "triangle");
  EXPECT_EQ(h5_string_attr(f, "/", "flowd_format"), "flowd.pairs/1");
  EXPECT_EQ(h5_string_attr(f, "/", "provenance"), h.provenance.dump());
  EXPECT_EQ(h5_strings_attr(f, "/", "scores"), (std::vector<std::string>{"ncc", "pce"}));
  EXPECT_FALSE(h5_has(f, "/heatmap_order"));  // no heat map asked for
}

TEST(WritePairs, Hdf5KeepsAComputedDiagonalAndDoesNotMirrorRectangles) {
  const auto dir = test::scratch();
  {
    auto h = harness("io.write_pairs", {{"hdf5", (dir / "d.h5").string()}});
    h.consume({pairs_item({"a", "b", "c"}, {"a", "b", "c"}, "triangle-with-diagonal", {"s"},
                          {{0, 0, 1}, {0, 1, 0.5}, {1, 1, 2}, {1, 2, 0.75}})});
    h.commit();
    H5 f = open_h5(dir / "d.h5");
    EXPECT_EQ(text(h5_matrix(f, "/scores/s")), "1 0.5 nan;0.5 2 0.75;nan 0.75 nan");
    EXPECT_EQ(h5_string_attr(f, "/", "pairs"), "triangle-with-diagonal");
  }
  {
    auto h = harness("io.write_pairs", {{"hdf5", (dir / "r.h5").string()}});
    h.consume({pairs_item({"a1", "a2"}, {"b1", "b2", "b3"}, "rectangle", {"s"}, {{0, 0, 1}, {0, 2, 3}, {1, 1, 5}})});
    h.commit();
    H5 f = open_h5(dir / "r.h5");
    const Matrix m = h5_matrix(f, "/scores/s");
    ASSERT_EQ(m.dims, (std::vector<hsize_t>{2, 3}));
    EXPECT_EQ(text(m), "1 nan 3;nan 5 nan");
    EXPECT_EQ(h5_string_column(f, "/cols"), (std::vector<std::string>{"b1", "b2", "b3"}));
  }
}

// Where render_heatmap put the cells of a heat map of these keys, shown in
// this order.
io::HeatmapLayout layout_for(const std::vector<std::string>& rows, const std::vector<std::string>& cols,
                             const std::vector<std::int64_t>& row_order, const std::vector<std::int64_t>& col_order) {
  io::HeatmapPicture p;
  p.cells = cv::Mat(static_cast<int>(rows.size()), static_cast<int>(cols.size()), CV_8UC3);
  for (const auto r : row_order) p.row_labels.push_back(rows[static_cast<std::size_t>(r)]);
  for (const auto c : col_order) p.col_labels.push_back(cols[static_cast<std::size_t>(c)]);
  return io::heatmap_layout(p, 1600);
}

// Some dark pixels (text, ticks) in a part of the picture.
void expect_ink(const cv::Mat& png, cv::Rect where, const char* what) {
  where &= cv::Rect(0, 0, png.cols, png.rows);
  cv::Mat grey, dark;
  cv::cvtColor(png(where), grey, cv::COLOR_BGR2GRAY);
  cv::threshold(grey, dark, 100, 255, cv::THRESH_BINARY_INV);
  EXPECT_GT(cv::countNonZero(dark), 20) << what;
}

TEST(WritePairs, HeatmapOrdersTwoInterleavedClustersTogether) {
  const auto dir = test::scratch();
  // Score "order" is high for neighbours in key order (it would keep the key
  // order); the heat map shows "sim", whose blocks are interleaved.
  std::vector<std::vector<double>> p;
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = i + 1; j < 6; ++j)
      p.push_back({static_cast<double>(i), static_cast<double>(j), 1.0 / static_cast<double>(j - i),
                   block_similarity(i, j)});
  auto h = harness("io.write_pairs", {{"hdf5", (dir / "p.h5").string()},
                                      {"heatmap", (dir / "p.png").string()},
                                      {"heatmap_score", "sim"}});
  h.consume({pairs_item(six, six, "triangle", {"order", "sim"}, p)});
  h.commit();

  H5 f = open_h5(dir / "p.h5");
  const auto order = h5_column<std::int64_t>(f, "/heatmap_order", H5T_NATIVE_INT64);
  const auto col_order = h5_column<std::int64_t>(f, "/heatmap_col_order", H5T_NATIVE_INT64);
  EXPECT_TRUE(blocks_adjacent(order)) << testing::PrintToString(order);
  EXPECT_EQ(order, col_order);  // one order for both axes of a triangle
  EXPECT_EQ(std::set<std::int64_t>(order.begin(), order.end()).size(), 6u);

  const cv::Mat png = cv::imread((dir / "p.png").string(), cv::IMREAD_UNCHANGED);
  ASSERT_EQ(png.type(), CV_8UC3);
  // The cells, 1600 / 6 = 266 pixels each, beside the row and column names,
  // the title and the colour bar (issue 38: the picture had none of them).
  const io::HeatmapLayout at = layout_for(six, six, order, order);
  EXPECT_EQ(at.cell, 266);
  EXPECT_EQ(png.cols, at.width);
  EXPECT_EQ(png.rows, at.height);
  EXPECT_GT(at.left, 30);  // room for the names
  EXPECT_GT(at.top, 40);
  EXPECT_GT(png.cols, at.left + 6 * 266 + 60);  // and the colour bar
  auto cell = [&](int i, int j) { return png.at<cv::Vec3b>(at.top + i * 266 + 133, at.left + j * 266 + 133); };
  expect_ink(png, {0, at.top, at.left, 6 * 266}, "the row names");
  expect_ink(png, {at.left, 36, 6 * 266, at.top - 40}, "the column names");
  expect_ink(png, {0, 0, png.cols, 30}, "the title");
  expect_ink(png, {at.left + 6 * 266 + 40, at.top, png.cols - at.left - 6 * 266 - 40, 6 * 266}, "the colour bar's values");
  auto brightness = [](cv::Vec3b c) { return int(c[0]) + int(c[1]) + int(c[2]); };
  // Viridis: dark purple for low, yellow for high similarity. Cells of one
  // block lie next to the diagonal, in 3 x 3 squares.
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      if (i == j) continue;
      const bool same = (i < 3) == (j < 3);
      if (same) EXPECT_GT(brightness(cell(i, j)), 400) << i << "," << j;
      else EXPECT_LT(brightness(cell(i, j)), 250) << i << "," << j;
    }
  // The diagonal shows the row's largest other value, not grey (NaN).
  for (int i = 0; i < 6; ++i) {
    const auto r = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
    int best = -1;
    for (int j = 0; j < 6; ++j) {
      const auto c = static_cast<std::size_t>(order[static_cast<std::size_t>(j)]);
      if (j != i && (best < 0 || block_similarity(std::min(r, c), std::max(r, c)) >
                                     block_similarity(std::min(r, static_cast<std::size_t>(order[static_cast<std::size_t>(best)])),
                                                      std::max(r, static_cast<std::size_t>(order[static_cast<std::size_t>(best)])))))
        best = j;
    }
    EXPECT_EQ(cell(i, i), cell(i, best)) << i;
  }
}

TEST(WritePairs, HeatmapOfALogScoreAndOfARectangleWithMissingPairs) {
  const auto dir = test::scratch();
  {
    // PCE-like: 1e4 within a block, about 1 (or less, even negative) across.
    std::vector<std::vector<double>> p;
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t j = i + 1; j < 6; ++j)
        p.push_back({static_cast<double>(i), static_cast<double>(j),
                     i % 2 == j % 2 ? 1e4 * block_similarity(i, j) : (j - i == 3 ? -5.0 : block_similarity(i, j))});
    auto h = harness("io.write_pairs", {{"hdf5", (dir / "log.h5").string()},
                                        {"heatmap", (dir / "log.png").string()},
                                        {"heatmap_log", true}});
    h.consume({pairs_item(six, six, "triangle", {"pce"}, p)});
    h.commit();
    H5 f = open_h5(dir / "log.h5");
    EXPECT_TRUE(blocks_adjacent(h5_column<std::int64_t>(f, "/heatmap_order", H5T_NATIVE_INT64)));
    const cv::Mat png = cv::imread((dir / "log.png").string(), cv::IMREAD_UNCHANGED);
    ASSERT_FALSE(png.empty());
    const auto order = h5_column<std::int64_t>(f, "/heatmap_order", H5T_NATIVE_INT64);
    const io::HeatmapLayout at = layout_for(six, six, order, order);
    cv::Mat grey_px;  // in the cells (the legend's swatch is grey)
    cv::inRange(png(cv::Rect(at.left, at.top, 6 * at.cell, 6 * at.cell)), cv::Scalar(128, 128, 128),
                cv::Scalar(128, 128, 128), grey_px);
    EXPECT_EQ(cv::countNonZero(grey_px), 0);  // negative scores are floored, not missing
  }
  {
    // 4 rows x 3 cols; rows r0, r2 alike and r1, r3 alike; (r3, c1) missing.
    std::vector<std::vector<double>> p;
    const double v[4][3] = {{9, 1, 9}, {1, 9, 1}, {8, 1, 8}, {1, 0, 1}};
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j)
        if (!(i == 3 && j == 1)) p.push_back({double(i), double(j), v[i][j]});
    auto h = harness("io.write_pairs", {{"hdf5", (dir / "r.h5").string()}, {"heatmap", (dir / "r.png").string()}});
    h.consume({pairs_item({"r0", "r1", "r2", "r3"}, {"c0", "c1", "c2"}, "rectangle", {"s"}, p)});
    h.commit();
    H5 f = open_h5(dir / "r.h5");
    const auto rows = h5_column<std::int64_t>(f, "/heatmap_order", H5T_NATIVE_INT64);
    const auto cols = h5_column<std::int64_t>(f, "/heatmap_col_order", H5T_NATIVE_INT64);
    EXPECT_EQ(rows, (std::vector<std::int64_t>{0, 2, 1, 3}));  // lowest index first within and across merges
    EXPECT_EQ(cols, (std::vector<std::int64_t>{0, 2, 1}));
    const cv::Mat png = cv::imread((dir / "r.png").string(), cv::IMREAD_UNCHANGED);
    const io::HeatmapLayout at = layout_for({"r0", "r1", "r2", "r3"}, {"c0", "c1", "c2"}, rows, cols);
    ASSERT_EQ(at.cell, 400);  // 1600 / 4 = 400 pixels per cell
    ASSERT_EQ(png.cols, at.width);
    ASSERT_EQ(png.rows, at.height);
    // (r3, c1) is displayed at row 3, column 2: grey.
    EXPECT_EQ(png.at<cv::Vec3b>(at.top + 3 * 400 + 7, at.left + 2 * 400 + 7), cv::Vec3b(128, 128, 128));
    EXPECT_NE(png.at<cv::Vec3b>(at.top + 3 * 400 + 7, at.left + 1 * 400 + 7), cv::Vec3b(128, 128, 128));
  }
}

TEST(WritePairs, NoOutputOrOneFileTwiceIsRefusedAtConstruction) {
  const auto none = param_error_of("io.write_pairs", {{"a_name", "x"}});
  EXPECT_NE(none.find("csv, hdf5 or heatmap"), std::string::npos) << none;
  const auto twice = param_error_of("io.write_pairs", {{"csv", "out/p.x"}, {"hdf5", "out/./p.x"}});
  EXPECT_NE(twice.find("csv and hdf5 name the same file"), std::string::npos) << twice;
}

TEST(WritePairs, ASecondItemIsAnErrorNamingTheStage) {
  const auto dir = test::scratch();
  auto h = harness("io.write_pairs", {{"csv", (dir / "p.csv").string()}});
  const Item one = pairs_item({"a", "b"}, {"a", "b"}, "triangle", {"s"}, {{0, 1, 0.5}});
  h.consume({one});
  Item two = one;
  two.meta.key = "other";
  const auto err = error_of([&] { h.consume({two}); });
  EXPECT_NE(err.find("stage 'stage-under-test'"), std::string::npos) << err;
  EXPECT_NE(err.find("second item"), std::string::npos) << err;
  h.abort();
  EXPECT_TRUE(files_below(dir).empty());
}

TEST(WritePairs, TablesWithoutTheAllPairsShapeAreRefusedNamingWhatIsMissing) {
  const auto dir = test::scratch();
  const Json params = {{"csv", (dir / "p.csv").string()}, {"heatmap", (dir / "p.png").string()}};
  auto consume = [&](const Item& item) {
    auto h = harness("io.write_pairs", params);
    return error_of([&] { h.consume({item}); });
  };
  const Item good = pairs_item({"a", "b", "c"}, {"a", "b", "c"}, "triangle", {"s"}, {{0, 1, 0.5}, {1, 2, 0.25}});

  Item no_rows = good;
  no_rows.meta.attrs.erase("rows");
  auto err = consume(no_rows);
  EXPECT_NE(err.find("stage 'stage-under-test'"), std::string::npos) << err;
  EXPECT_NE(err.find("no array 'rows'"), std::string::npos) << err;

  Item bad_shape = good;
  bad_shape.meta.attrs["pairs"] = "square";
  EXPECT_NE(consume(bad_shape).find("attrs 'pairs' is 'square'"), std::string::npos);

  Item no_pairs = good;
  no_pairs.meta.attrs.erase("pairs");
  EXPECT_NE(consume(no_pairs).find("no string 'pairs'"), std::string::npos);

  const Item out_of_range =
      pairs_item({"a", "b", "c"}, {"a", "b", "c"}, "triangle", {"s"}, {{0, 1, 0.5}, {1, 3, 0.25}});
  err = consume(out_of_range);
  EXPECT_NE(err.find("stage 'stage-under-test'"), std::string::npos) << err;
  EXPECT_NE(err.find("table row 1 is the pair (a = 1, b = 3)"), std::string::npos) << err;

  const Item negative = pairs_item({"a1"}, {"b1", "b2"}, "rectangle", {"s"}, {{-1, 0, 0.5}});
  EXPECT_NE(consume(negative).find("(a = -1, b = 0)"), std::string::npos);

  Item missing_score = good;
  missing_score.meta.attrs["scores"] = {"s", "pce"};
  err = consume(missing_score);
  EXPECT_NE(err.find("stage 'stage-under-test'"), std::string::npos) << err;
  EXPECT_NE(err.find("no f64 column 'pce'"), std::string::npos) << err;

  Table no_b;
  no_b.add_column<std::int64_t>("a");
  no_b.add_column<double>("s");
  Item without_b = table_item("pairs", std::move(no_b));
  without_b.meta.attrs = good.meta.attrs;
  EXPECT_NE(consume(without_b).find("no i64 column 'b'"), std::string::npos);

  Item uneven = good;
  uneven.meta.attrs["cols"] = {"a", "b"};
  EXPECT_NE(consume(uneven).find("a triangle of 3 rows has 2 cols"), std::string::npos);

  auto h = harness("io.write_pairs", {{"heatmap", (dir / "p.png").string()}, {"heatmap_score", "pce"}});
  err = error_of([&] { h.consume({good}); });
  EXPECT_NE(err.find("heatmap_score 'pce' is not one of the table's scores 's'"), std::string::npos) << err;
  h.commit();  // nothing arrived: nothing written
  EXPECT_TRUE(files_below(dir).empty());
}

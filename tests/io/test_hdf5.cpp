// io.write_hdf5 and io.read_hdf5: layout, ordering, provenance, transactions.
#include <functional>

#include "io_support.hpp"

using namespace flowd;
using namespace flowd::iotest;

namespace {

template <class T>
Array ramp(DType t, std::vector<std::int64_t> shape) {
  Array a = Array::uninitialized(t, shape);
  auto v = a.values<T>();
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<T>(i % 251);
  return a;
}

// A table of `rows` rows whose values derive from `seed`, one column per type.
Table features(int seed, int rows) {
  Table t;
  auto& id = t.add_column<std::int32_t>("id");
  auto& area = t.add_column<double>("area");
  auto& name = t.add_column<std::string>("name");
  auto& flag = t.add_column<std::uint8_t>("flag");
  auto& big = t.add_column<std::int64_t>("big");
  auto& f = t.add_column<float>("f");
  for (int r = 0; r < rows; ++r) {
    id.push_back(seed * 100 + r);
    area.push_back(seed + r / 10.0);
    name.push_back("n" + std::to_string(seed) + "." + std::to_string(r));
    flag.push_back(static_cast<std::uint8_t>(r % 2));
    big.push_back((std::int64_t{1} << 40) + seed);
    f.push_back(static_cast<float>(seed) * 0.5f);
  }
  return t;
}

bool same_values(const Array& a, const Array& b) {
  if (a.dtype() != b.dtype() || !std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end()))
    return false;
  const Array ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw(), cb.raw(), ca.nbytes()) == 0;
}

Json provenance() {
  return {{"flowd_version", "0.1.0"},
          {"workflow_sha256", "ab12"},
          {"created", "2026-11-21T10:00:00Z"},
          {"workflow", {{"version", 1}, {"stages", {{"out", {{"op", "io.write_hdf5"}}}}}}},
          {"plugins", {{"io", {{"version", "0.1.0"}}}}},
          {"stages", {{"out", {{"op", "io.write_hdf5"}, {"params", {{"compression", 4}}}}}}},
          {"host", "not stored"}};
}

}  // namespace

TEST(Hdf5, ArraysRoundTripWithTheirMetadata) {
  const auto file = test::scratch() / "out.h5";
  Item tile = array_item("s1/tile/0/1", ramp<std::uint8_t>(DType::u8, {40, 30, 3}));
  tile.meta.bbox = Box::make2d(0, 240, 40, 30);
  tile.meta.core = Box::make2d(0, 256, 32, 14);
  tile.meta.version = 3;
  tile.meta.timestamp = 17;
  tile.meta.attrs = {{"image", "s1"}, {"tile_index", {0, 1}}};
  const std::vector<Item> in = {
      tile,
      array_item("s1/tile/0/0", ramp<float>(DType::f32, {100, 100})),  // >= 4096 elements: chunked + gzip
      array_item("s2", ramp<std::int64_t>(DType::i64, {5})),
      array_item("s1/tile/0/10", ramp<std::uint16_t>(DType::u16, {2, 2})),
  };
  auto w = harness("io.write_hdf5", {{"path", file.string()}});
  for (const auto& i : in)
    w.consume({i});
  w.commit();

  auto out = items_of(harness("io.read_hdf5", {{"path", file.string()}}).source());
  ASSERT_EQ(keys_of(out), (std::vector<std::string>{"s1/tile/0/0", "s1/tile/0/1", "s1/tile/0/10", "s2"}));
  EXPECT_TRUE(same_values(out[0].array(), in[1].array()));
  EXPECT_TRUE(same_values(out[1].array(), in[0].array()));
  EXPECT_TRUE(same_values(out[2].array(), in[3].array()));
  EXPECT_TRUE(same_values(out[3].array(), in[2].array()));
  const ItemMeta& m = out[1].meta;
  EXPECT_EQ(m.bbox, tile.meta.bbox);
  EXPECT_EQ(m.core, tile.meta.core);
  EXPECT_EQ(m.version, 3);
  EXPECT_EQ(m.timestamp, 17);
  EXPECT_EQ(m.attrs, tile.meta.attrs);
  EXPECT_FALSE(out[3].meta.bbox.has_value());

  // The layout as documented, seen through the C API.
  H5 f = open_h5(file);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(h5_string_attr(f, "/data", "flowd_kind"), "arrays");
  EXPECT_TRUE(h5_has(f, "/data/s1/tile/0/1"));
  EXPECT_EQ(h5_ints_attr(f, "/data/s1/tile/0/1", "bbox"), (std::vector<std::int64_t>{0, 240, 40, 30}));
  EXPECT_EQ(h5_string_attr(f, "/data/s1/tile/0/1", "key"), "s1/tile/0/1");
  H5 ds(H5Dopen2(f, "/data/s1/tile/0/1", H5P_DEFAULT), H5Dclose);
  H5 type(H5Dget_type(ds), H5Tclose);
  EXPECT_GT(H5Tequal(type, H5T_NATIVE_UINT8), 0);
}

TEST(Hdf5, DuplicateAndConflictingArrayKeysAreRefused) {
  const auto file = test::scratch() / "out.h5";
  auto w = harness("io.write_hdf5", {{"path", file.string()}});
  w.consume({array_item("a", ramp<std::uint8_t>(DType::u8, {2}))});
  EXPECT_NE(error_of([&] { w.consume({array_item("a", ramp<std::uint8_t>(DType::u8, {2}))}); }).find("duplicate key"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              w.consume({array_item("a/b", ramp<std::uint8_t>(DType::u8, {2}))});
            }).find("item 'a' is already stored where this key needs a group"),
            std::string::npos);
  w.consume({array_item("c/d", ramp<std::uint8_t>(DType::u8, {2}))});
  EXPECT_NE(error_of([&] { w.consume({array_item("c", ramp<std::uint8_t>(DType::u8, {2}))}); }).find("below 'c/'"),
            std::string::npos);
  w.commit();
  EXPECT_EQ(keys_of(items_of(harness("io.read_hdf5", {{"path", file.string()}}).source())),
            (std::vector<std::string>{"a", "c/d"}));
}

TEST(Hdf5, TableRowsAreInNaturalKeyOrderWhateverTheArrivalOrder) {
  const auto file = test::scratch() / "t.h5";
  auto w = harness("io.write_hdf5", {{"path", file.string()}, {"dataset", "results/nuclei"}});
  w.consume({table_item("tile/10", features(10, 2))});
  w.consume({table_item("tile/2", features(2, 3))});
  w.consume({table_item("tile/empty", features(5, 0))});
  w.consume({table_item("tile/1", features(1, 2))});
  w.commit();

  H5 f = open_h5(file);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(h5_string_attr(f, "/results/nuclei", "flowd_kind"), "table");
  EXPECT_EQ(h5_strings_attr(f, "/results/nuclei", "columns"),
            (std::vector<std::string>{"item_key", "id", "area", "name", "flag", "big", "f"}));
  EXPECT_EQ(h5_string_column(f, "/results/nuclei/item_key"),
            (std::vector<std::string>{"tile/1", "tile/1", "tile/2", "tile/2", "tile/2", "tile/10", "tile/10"}));
  EXPECT_EQ(h5_column<std::int32_t>(f, "/results/nuclei/id", H5T_NATIVE_INT32),
            (std::vector<std::int32_t>{100, 101, 200, 201, 202, 1000, 1001}));
  EXPECT_EQ(h5_string_column(f, "/results/nuclei/name")[2], "n2.0");
  EXPECT_EQ(h5_column<std::uint8_t>(f, "/results/nuclei/flag", H5T_NATIVE_UINT8),
            (std::vector<std::uint8_t>{0, 1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(h5_column<std::int64_t>(f, "/results/nuclei/big", H5T_NATIVE_INT64)[6], (std::int64_t{1} << 40) + 10);
  EXPECT_EQ(h5_column<float>(f, "/results/nuclei/f", H5T_NATIVE_FLOAT)[3], 1.0f);
  EXPECT_FALSE(h5_has(f, "/staging"));

  auto per_key = items_of(harness("io.read_hdf5", {{"path", file.string()}, {"dataset", "results/nuclei"}}).source());
  ASSERT_EQ(keys_of(per_key), (std::vector<std::string>{"tile/1", "tile/2", "tile/10"}));
  const Table& t2 = per_key[1].table();
  EXPECT_EQ(t2.schema(), features(2, 3).schema());  // no item_key column
  EXPECT_EQ(t2.column<std::string>("name"), features(2, 3).column<std::string>("name"));
  EXPECT_EQ(t2.column<double>("area"), features(2, 3).column<double>("area"));

  auto whole = items_of(
      harness("io.read_hdf5", {{"path", file.string()}, {"dataset", "results/nuclei"}, {"split", "none"}}).source());
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].meta.key, "results/nuclei");
  EXPECT_EQ(whole[0].table().rows(), 7u);
  EXPECT_EQ(whole[0].table().columns().front().name, "item_key");
}

TEST(Hdf5, ManyTableItemsOutOfOrderAreCopiedInOrderAndCompressed) {
  const auto file = test::scratch() / "many.h5";
  auto w = harness("io.write_hdf5", {{"path", file.string()}, {"compression", 9}});
  constexpr int items = 1500;  // x3 rows: beyond the 4096-row compression threshold
  for (int i = items - 1; i >= 0; --i)
    w.consume({table_item("s/" + std::to_string(i), features(i, 3))});
  w.commit();
  H5 f = open_h5(file);
  const auto ids = h5_column<std::int32_t>(f, "/data/id", H5T_NATIVE_INT32);
  ASSERT_EQ(ids.size(), 3u * items);
  for (int i = 0; i < items; ++i)
    for (int r = 0; r < 3; ++r)
      ASSERT_EQ(ids[static_cast<std::size_t>(3 * i + r)], i * 100 + r) << i;
  H5 ds(H5Dopen2(f, "/data/area", H5P_DEFAULT), H5Dclose);
  H5 dcpl(H5Dget_create_plist(ds), H5Pclose);
  EXPECT_EQ(H5Pget_layout(dcpl), H5D_CHUNKED);
  EXPECT_GE(H5Pget_nfilters(dcpl), 1);
  EXPECT_EQ(items_of(harness("io.read_hdf5", {{"path", file.string()}}).source()).size(),
            static_cast<std::size_t>(items));
}

// `items` tables of `rows` rows each, given in the order `arrival(k)` says,
// committed; then every row of the file checked: in key order, every value.
void check_rows_in_key_order(const std::string& name, int items, int rows, const std::function<int(int)>& arrival) {
  const auto file = test::scratch() / name;
  auto w = harness("io.write_hdf5", {{"path", file.string()}});
  for (int k = 0; k < items; ++k) {
    const int i = arrival(k);
    w.consume({table_item("s/" + std::to_string(i), features(i, rows))});
  }
  w.commit();
  H5 f = open_h5(file);
  const auto ids = h5_column<std::int32_t>(f, "/data/id", H5T_NATIVE_INT32);
  const auto names = h5_string_column(f, "/data/name");
  const auto keys = h5_string_column(f, "/data/item_key");
  const auto big = h5_column<std::int64_t>(f, "/data/big", H5T_NATIVE_INT64);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(items * rows));
  ASSERT_EQ(names.size(), ids.size());
  for (int i = 0; i < items; ++i)
    for (int r = 0; r < rows; ++r) {
      const auto at = static_cast<std::size_t>(i * rows + r);
      ASSERT_EQ(ids[at], i * 100 + r) << at;
      ASSERT_EQ(names[at], "n" + std::to_string(i) + "." + std::to_string(r)) << at;
      ASSERT_EQ(keys[at], "s/" + std::to_string(i)) << at;
      ASSERT_EQ(big[at], (std::int64_t{1} << 40) + i) << at;
    }
  EXPECT_FALSE(h5_has(f, "/staging"));
}

// Rows are gathered in memory and staged about 1 MiB at a time: here ~2.5 MiB
// (41 bytes a row) arrive out of order, so the staging file is written several
// times during the run and once more at the commit.
TEST(Hdf5, TableRowsStagedInBatchesComeOutInKeyOrderWithEveryValue) {
  constexpr int items = 1300;
  check_rows_in_key_order("batches.h5", items, 50,
                          [](int k) { return (k * 7) % items; });  // every item once, scattered
}

// Items that arrive in key order (the usual case) are copied to the output in
// long stretches, cut at 65536 rows; a few out of place break the stretches.
TEST(Hdf5, TableRowsArrivingMostlyInKeyOrderAreCopiedInStretches) {
  check_rows_in_key_order("stretches.h5", 1400, 50, [](int k) {
    return k % 100 == 10 ? k + 1 : k % 100 == 11 ? k - 1 : k;
  });
  check_rows_in_key_order("in-order.h5", 1400, 50, [](int k) { return k; });
}

TEST(Hdf5, TableSchemaMismatchNamesTheKeyAndBothSchemas) {
  const auto file = test::scratch() / "t.h5";
  auto w = harness("io.write_hdf5", {{"path", file.string()}});
  w.consume({table_item("a", features(1, 1))});
  Table other;
  other.add_column<double>("area").push_back(1.0);
  const auto err = error_of([&] { w.consume({table_item("b", other)}); });
  EXPECT_NE(err.find("item 'b'"), std::string::npos) << err;
  EXPECT_NE(err.find("(area:f64)"), std::string::npos) << err;
  EXPECT_NE(err.find("(" + features(1, 1).schema() + ")"), std::string::npos) << err;
  const auto dup = error_of([&] { w.consume({table_item("a", features(1, 1))}); });
  EXPECT_NE(dup.find("duplicate item key 'a'"), std::string::npos) << dup;
}

TEST(Hdf5, ArraysAndTablesCannotShareASink) {
  const auto file = test::scratch() / "t.h5";
  auto w = harness("io.write_hdf5", {{"path", file.string()}});
  w.consume({array_item("a", ramp<std::uint8_t>(DType::u8, {2}))});
  const auto err = error_of([&] { w.consume({table_item("b", features(1, 1))}); });
  EXPECT_NE(err.find("two io.write_hdf5 stages"), std::string::npos) << err;
  Item json;
  json.meta.key = "j";
  json.value = Json{{"x", 1}};
  const auto jerr = error_of([&] { w.consume({json}); });
  EXPECT_NE(jerr.find("io.write_hdf5 stores arrays and tables"), std::string::npos) << jerr;
}

TEST(Hdf5, ProvenanceBecomesRootAttributes) {
  const auto file = test::scratch() / "p.h5";
  auto w = harness("io.write_hdf5", {{"path", file.string()}});
  w.provenance = provenance();
  w.consume({table_item("a", features(1, 1))});
  w.commit();
  H5 f = open_h5(file);
  EXPECT_EQ(h5_string_attr(f, "/", "flowd_version"), "0.1.0");
  EXPECT_EQ(h5_string_attr(f, "/", "workflow_sha256"), "ab12");
  EXPECT_EQ(h5_string_attr(f, "/", "created"), "2026-11-21T10:00:00Z");
  EXPECT_EQ(Json::parse(*h5_string_attr(f, "/", "workflow")), provenance()["workflow"]);
  EXPECT_EQ(Json::parse(*h5_string_attr(f, "/", "plugins")), provenance()["plugins"]);
  EXPECT_EQ(Json::parse(*h5_string_attr(f, "/", "parameters")), provenance()["stages"]);
  EXPECT_FALSE(h5_string_attr(f, "/", "host").has_value());
}

TEST(Hdf5, AnEmptyRunCommitsAValidFile) {
  const auto file = test::scratch() / "empty.h5";
  auto w = harness("io.write_hdf5", {{"path", file.string()}});
  Json p = provenance();
  p.erase("plugins");  // missing keys are skipped
  w.provenance = p;
  w.commit();
  H5 f = open_h5(file);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(h5_string_attr(f, "/", "workflow_sha256"), "ab12");
  EXPECT_FALSE(h5_string_attr(f, "/", "plugins").has_value());
  EXPECT_EQ(h5_string_attr(f, "/data", "flowd_kind"), "empty");
  EXPECT_TRUE(items_of(harness("io.read_hdf5", {{"path", file.string()}}).source()).empty());
  EXPECT_EQ(files_below(file.parent_path()), (std::vector<std::string>{"empty.h5"}));
}

TEST(Hdf5, AbortLeavesNoFile) {
  const auto dir = test::scratch();
  for (const bool tables : {false, true}) {
    const auto file = dir / "sub" / "x.h5";
    auto w = harness("io.write_hdf5", {{"path", file.string()}});
    for (int i = 0; i < 3; ++i) {
      if (tables)
        w.consume({table_item("k" + std::to_string(i), features(i, 2))});
      else
        w.consume({array_item("k" + std::to_string(i), ramp<std::uint8_t>(DType::u8, {8, 8}))});
    }
    EXPECT_EQ(files_below(dir).size(), 1u);  // the hidden temporary
    w.abort();
    EXPECT_TRUE(files_below(dir).empty());
    EXPECT_FALSE(fs::exists(dir / "sub"));  // the folder it created
  }
}

TEST(Hdf5, CommitReplacesAnExistingFileAtomically) {
  const auto file = test::scratch() / "x.h5";
  write_bytes(file, "old contents");
  auto w = harness("io.write_hdf5", {{"path", file.string()}});
  w.consume({array_item("a", ramp<std::uint8_t>(DType::u8, {4}))});
  EXPECT_EQ(test::slurp(file), "old contents");  // untouched until commit
  w.commit();
  EXPECT_EQ(keys_of(items_of(harness("io.read_hdf5", {{"path", file.string()}}).source())),
            (std::vector<std::string>{"a"}));
  EXPECT_EQ(files_below(file.parent_path()), (std::vector<std::string>{"x.h5"}));
}

TEST(Hdf5, CompressionZeroAndNineBothWork) {
  const auto dir = test::scratch();
  const Array zeros = Array::zeros(DType::f64, {256, 256});
  std::uintmax_t sizes[2] = {};
  for (const int level : {0, 9}) {
    const auto arrays = dir / ("a" + std::to_string(level) + ".h5");
    const auto tables = dir / ("t" + std::to_string(level) + ".h5");
    auto wa = harness("io.write_hdf5", {{"path", arrays.string()}, {"compression", level}});
    wa.consume({array_item("z", zeros)});
    wa.commit();
    auto wt = harness("io.write_hdf5", {{"path", tables.string()}, {"compression", level}});
    wt.consume({table_item("t", features(1, 5000))});
    wt.commit();
    sizes[level ? 1 : 0] = fs::file_size(arrays);
    for (const auto& [file, path] : {std::pair{arrays, "/data/z"}, std::pair{tables, "/data/area"}}) {
      H5 f = open_h5(file);
      H5 ds(H5Dopen2(f, path, H5P_DEFAULT), H5Dclose);
      H5 dcpl(H5Dget_create_plist(ds), H5Pclose);
      EXPECT_EQ(H5Pget_nfilters(dcpl) > 0, level > 0) << file << " " << path;
    }
    const auto a = items_of(harness("io.read_hdf5", {{"path", arrays.string()}}).source());
    ASSERT_EQ(a.size(), 1u);
    EXPECT_TRUE(same_values(a[0].array(), zeros));
    const auto t = items_of(harness("io.read_hdf5", {{"path", tables.string()}}).source());
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].table().column<double>("area"), features(1, 5000).column<double>("area"));
  }
  EXPECT_LT(sizes[1] * 4, sizes[0]);
}

TEST(Hdf5, ReadErrorsNameFileAndDataset) {
  const auto dir = test::scratch();
  const auto missing = (dir / "missing.h5").string();
  const auto e1 = error_of([&] { harness("io.read_hdf5", {{"path", missing}}).source(); });
  EXPECT_NE(e1.find("HDF5 file '" + missing + "', group '/data'"), std::string::npos) << e1;
  EXPECT_NE(e1.find("does not exist"), std::string::npos) << e1;

  const auto file = dir / "a.h5";
  auto w = harness("io.write_hdf5", {{"path", file.string()}, {"dataset", "labels"}});
  w.consume({array_item("a", ramp<std::uint8_t>(DType::u8, {4}))});
  w.commit();
  const auto e2 = error_of([&] { harness("io.read_hdf5", {{"path", file.string()}, {"dataset", "nuclei"}}).source(); });
  EXPECT_NE(
      e2.find("HDF5 file '" + file.string() + "', group '/nuclei': no such group (the file's root holds: labels)"),
      std::string::npos)
      << e2;

  const auto odd = dir / "odd.h5";
  {
    H5 f(H5Fcreate(odd.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    H5 g(H5Gcreate2(f, "/data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    H5 t(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(t, H5T_VARIABLE);
    H5 s(H5Screate(H5S_SCALAR), H5Sclose);
    H5 a(H5Acreate2(g, "flowd_kind", t, s, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const char* v = "images";
    H5Awrite(a, t, &v);
  }
  const auto e3 = error_of([&] { harness("io.read_hdf5", {{"path", odd.string()}}).source(); });
  EXPECT_NE(e3.find("HDF5 file '" + odd.string() + "', group '/data': flowd_kind is 'images'"), std::string::npos)
      << e3;
}

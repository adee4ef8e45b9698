// Hdf5ItemStore: every value kind and dtype survives a round trip with its
// metadata, a reopened store has its items, debris of an interrupted put is
// ignored, and threads may put and find at once.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "flowd/error.hpp"
#include "store/hdf5_store.hpp"
#include "fresh_path.hpp"

namespace {

namespace fs = std::filesystem;
using flowd::Array;
using flowd::Box;
using flowd::DType;
using flowd::Item;
using flowd::Json;
using flowd::Table;
using flowd::store::Hdf5ItemStore;
using flowd::wire::ItemId;

fs::path h5_path(const std::string& name) { return flowd::store::test::fresh_path(name, ".h5"); }

ItemId id_of(const Item& i) { return ItemId{i.meta.key, i.meta.version, i.meta.timestamp}; }

Item array_item(const std::string& key, Array a) {
  Item it;
  it.meta.key = key;
  it.value = std::move(a);
  return it;
}

// Fills with distinct bytes per element so that any misplaced element shows.
Array ramp(DType t, std::initializer_list<std::int64_t> shape) {
  Array a = Array::uninitialized(t, shape);
  auto* p = static_cast<unsigned char*>(a.raw());
  for (std::size_t i = 0; i < a.nbytes(); ++i) p[i] = static_cast<unsigned char>(i * 7 + 3);
  return a;
}

bool same_values(const Array& a, const Array& b) {
  if (a.dtype() != b.dtype() || !std::ranges::equal(a.shape(), b.shape())) return false;
  const Array ca = a.contiguous(), cb = b.contiguous();
  return a.nbytes() == 0 || std::memcmp(ca.raw(), cb.raw(), a.nbytes()) == 0;
}

TEST(Hdf5ItemStore, ArraysOfEveryDtypeAndRank) {
  const auto path = h5_path("dtypes");
  Hdf5ItemStore store(path);
  for (int t = 0; t < flowd::dtype_count; ++t) {
    const auto dt = static_cast<DType>(t);
    const std::vector<Array> arrays = {ramp(dt, {}), ramp(dt, {5}), ramp(dt, {3, 4}), ramp(dt, {2, 3, 4}),
                                       ramp(dt, {0, 3}), ramp(dt, {2, 1, 2, 1, 2})};
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const std::string key = "a/" + std::string(flowd::name_of(dt)) + "/" + std::to_string(i);
      store.put(array_item(key, arrays[i]));
      const auto back = store.find(ItemId{key, 0, 0});
      ASSERT_TRUE(back) << key;
      EXPECT_TRUE(same_values(back->array(), arrays[i])) << key << " " << back->array().describe();
    }
  }
}

TEST(Hdf5ItemStore, LargeArrayIsChunkedAndExact) {
  const auto path = h5_path("large");
  Hdf5ItemStore store(path);
  const Array a = ramp(DType::f32, {700, 900, 3});  // several chunks of ~1 MiB
  store.put(array_item("big", a));
  EXPECT_TRUE(same_values(store.find(ItemId{"big", 0, 0})->array(), a));
}

TEST(Hdf5ItemStore, StridedSourceStoredInCOrder) {
  const auto path = h5_path("strided");
  Hdf5ItemStore store(path);
  const Array base = ramp(DType::u16, {6, 8, 2});
  const Array view = base.slice(1, 2, 7).slice(0, 1, 5);  // not contiguous
  ASSERT_FALSE(view.is_contiguous());
  store.put(array_item("view", view));
  const auto back = store.find(ItemId{"view", 0, 0});
  ASSERT_TRUE(back->array().is_contiguous());
  EXPECT_TRUE(same_values(back->array(), view));
  EXPECT_EQ(back->array().at<std::uint16_t>(0, 0, 1), view.at<std::uint16_t>(0, 0, 1));
  EXPECT_EQ(back->array().at<std::uint16_t>(3, 4, 1), view.at<std::uint16_t>(3, 4, 1));
}

TEST(Hdf5ItemStore, TablesJsonAndEmptyValues) {
  const auto path = h5_path("kinds");
  Hdf5ItemStore store(path);
  Item t;
  t.meta.key = "objects";
  Table table;
  table.add_column<std::uint8_t>("u8") = {1, 2, 255};
  table.add_column<std::int32_t>("label/id") = {-1, 0, 7};
  table.add_column<std::int64_t>("i64") = {INT64_MIN, 0, INT64_MAX};
  table.add_column<float>("f32") = {0.5f, -1.25f, 3e38f};
  table.add_column<double>("f64") = {1e-300, 2.0, -0.0};
  table.add_column<std::string>("name with spaces") = {"", "é ü", std::string(5000, 'x')};
  t.value = table;
  store.put(t);

  Item empty_table;
  empty_table.meta.key = "none-yet";
  Table et;
  et.add_column<double>("area");
  empty_table.value = et;
  store.put(empty_table);

  Item j;
  j.meta.key = "summary";
  j.value = Json{{"count", 3}, {"names", {"a", "b"}}, {"nested", {{"x", nullptr}, {"y", 1.5}}}};
  store.put(j);

  Item nothing;
  nothing.meta.key = "marker";
  store.put(nothing);

  const auto bt = store.find(id_of(t));
  ASSERT_TRUE(bt);
  EXPECT_EQ(bt->table().schema(), table.schema());
  EXPECT_EQ(bt->table().column<std::uint8_t>("u8"), table.column<std::uint8_t>("u8"));
  EXPECT_EQ(bt->table().column<std::int32_t>("label/id"), table.column<std::int32_t>("label/id"));
  EXPECT_EQ(bt->table().column<std::int64_t>("i64"), table.column<std::int64_t>("i64"));
  EXPECT_EQ(bt->table().column<float>("f32"), table.column<float>("f32"));
  EXPECT_EQ(bt->table().column<double>("f64"), table.column<double>("f64"));
  EXPECT_EQ(bt->table().column<std::string>("name with spaces"), table.column<std::string>("name with spaces"));

  const auto be = store.find(id_of(empty_table));
  EXPECT_EQ(be->table().schema(), "area:f64");
  EXPECT_EQ(be->table().rows(), 0u);
  EXPECT_EQ(store.find(id_of(j))->json(), std::get<Json>(j.value));
  EXPECT_EQ(flowd::kind_of(store.find(id_of(nothing))->value), flowd::ValueKind::none);
}

TEST(Hdf5ItemStore, FullMetadata) {
  const auto path = h5_path("meta");
  Hdf5ItemStore store(path);
  Item it = array_item("slide 3/tile/12/40.v%@", ramp(DType::u8, {4, 4}));
  it.meta.version = 2;
  it.meta.timestamp = -9;
  it.meta.bbox = Box::make2d(100, 200, 4, 4);
  it.meta.core = Box::make2d(101, 201, 2, 2);
  it.meta.attrs = Json{{"image", "a"}, {"image_shape", {4096, 4096}}};
  store.put(it);
  Item other = it;  // same key, other version: a different item
  other.meta.version = 3;
  other.meta.bbox.reset();
  other.meta.core = Box{};  // 0-d box
  store.put(other);

  const auto back = store.find(id_of(it));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->meta.key, it.meta.key);
  EXPECT_EQ(back->meta.version, 2);
  EXPECT_EQ(back->meta.timestamp, -9);
  EXPECT_EQ(back->meta.bbox, it.meta.bbox);
  EXPECT_EQ(back->meta.core, it.meta.core);
  EXPECT_EQ(back->meta.attrs, it.meta.attrs);
  const auto back3 = store.find(id_of(other));
  EXPECT_FALSE(back3->meta.bbox);
  EXPECT_EQ(back3->meta.core, Box{});
  EXPECT_EQ(store.size(), 2u);
  EXPECT_FALSE(store.find(ItemId{it.meta.key, 4, -9}));
}

TEST(Hdf5ItemStore, ReplaceEraseAndReopen) {
  const auto path = h5_path("reopen");
  {
    Hdf5ItemStore store(path);
    for (int i = 0; i < 5; ++i) store.put(array_item("k" + std::to_string(i), ramp(DType::i32, {i + 1})));
    store.put(array_item("k1", ramp(DType::f64, {3, 3})));  // replaces
    EXPECT_TRUE(store.erase(ItemId{"k3", 0, 0}));
    EXPECT_FALSE(store.erase(ItemId{"k3", 0, 0}));
    EXPECT_EQ(store.size(), 4u);
  }
  Hdf5ItemStore store(path);
  EXPECT_EQ(store.size(), 4u);
  EXPECT_TRUE(store.contains(ItemId{"k4", 0, 0}));
  EXPECT_FALSE(store.contains(ItemId{"k3", 0, 0}));
  EXPECT_EQ(store.find(ItemId{"k1", 0, 0})->array().describe(), "f64[3x3]");
  EXPECT_TRUE(same_values(store.find(ItemId{"k4", 0, 0})->array(), ramp(DType::i32, {5})));
  std::vector<std::string> keys;
  for (const auto& id : store.ids()) keys.push_back(id.key);
  std::ranges::sort(keys);
  EXPECT_EQ(keys, (std::vector<std::string>{"k0", "k1", "k2", "k4"}));
}

// A child process puts items and dies without closing the file: every put
// that returned must be there.
TEST(Hdf5ItemStore, PutIsDurableWhenTheProcessDies) {
  const auto path = h5_path("killed");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      auto* store = new Hdf5ItemStore(path);  // never destroyed: the file is never closed
      for (int i = 0; i < 3; ++i) store->put(array_item("k" + std::to_string(i), ramp(DType::u8, {64, 64})));
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  Hdf5ItemStore store(path);
  EXPECT_EQ(store.size(), 3u);
  EXPECT_TRUE(same_values(store.find(ItemId{"k2", 0, 0})->array(), ramp(DType::u8, {64, 64})));
}

// The state a crash mid-put leaves: a half-written item under /staging.
// The store opens, does not list it, and takes new puts.
TEST(Hdf5ItemStore, DebrisOfAnInterruptedPutIsIgnored) {
  const auto path = h5_path("debris");
  {
    Hdf5ItemStore store(path);
    store.put(array_item("kept", ramp(DType::u8, {8})));
  }
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t g = H5Gcreate2(f, "staging/7", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(g, 0);
    const hsize_t n = 10;
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t ds = H5Dcreate2(g, "data", H5T_NATIVE_UINT8, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(space);
    H5Gclose(g);
    H5Fclose(f);
  }
  Hdf5ItemStore store(path);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_TRUE(store.contains(ItemId{"kept", 0, 0}));
  store.put(array_item("after", ramp(DType::u8, {3})));
  EXPECT_EQ(store.size(), 2u);
}

TEST(Hdf5ItemStore, ErrorsNameTheFileAndItem) {
  const auto path = h5_path("notastore");
  { std::ofstream(path) << "not hdf5"; }
  try {
    Hdf5ItemStore store(path);
    FAIL() << "opened a text file";
  } catch (const flowd::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }

  const auto ok = h5_path("errors");
  Hdf5ItemStore store(ok);
  Item t;
  t.meta.key = "ragged";
  Table table;
  table.add_column<double>("a") = {1, 2};
  table.add_column<double>("b") = {1};
  t.value = table;
  try {
    store.put(t);
    FAIL() << "stored a ragged table";
  } catch (const flowd::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(ok.string()), std::string::npos) << m;
    EXPECT_NE(m.find("item 'ragged'"), std::string::npos) << m;
  }
  EXPECT_EQ(store.size(), 0u);
  Item dev = array_item("on-gpu", Array::adopt(nullptr, reinterpret_cast<void*>(64), DType::f32, std::vector<std::int64_t>{4},
                                               {}, flowd::Placement{flowd::Residency::device, 0}));
  EXPECT_THROW(store.put(dev), flowd::Error);
  store.put(array_item("fine", ramp(DType::u8, {2})));  // a failed put leaves the store usable
  EXPECT_EQ(store.size(), 1u);
}

TEST(Hdf5ItemStore, ConcurrentPutAndFind) {
  const auto path = h5_path("threads");
  Hdf5ItemStore store(path);
  constexpr int threads = 4, per_thread = 25;
  std::vector<std::thread> pool;
  std::atomic<int> bad{0};
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const std::string key = "t" + std::to_string(t) + "/" + std::to_string(i);
        const Array a = ramp(DType::i16, {t + 1, i + 1});
        store.put(array_item(key, a));
        const auto back = store.find(ItemId{key, 0, 0});
        if (!back || !same_values(back->array(), a)) ++bad;
        (void)store.find(ItemId{"t0/0", 0, 0});
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(store.size(), static_cast<std::size_t>(threads * per_thread));
}

}  // namespace

TEST(Hdf5ItemStore, ItemsFiledUnderACallersNameKeepTheirOwnMetadata) {
  const auto path = h5_path("named");
  const ItemId name{"t7/out", 7, 0};
  {
    Hdf5ItemStore store(path);
    Item item;
    item.meta.key = "slide/tile/3";
    item.meta.version = 2;
    item.value = Json{{"v", 1}};
    store.put(name, item);
    // Two items with equal metadata under two names do not collide.
    store.put(ItemId{"t8/out", 8, 0}, item);
    EXPECT_EQ(store.size(), 2u);
  }
  Hdf5ItemStore reopened(path);
  const auto got = reopened.find(name);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->meta.key, "slide/tile/3");
  EXPECT_EQ(got->meta.version, 2);
  EXPECT_EQ(std::get<Json>(got->value), (Json{{"v", 1}}));
  EXPECT_FALSE(reopened.find(ItemId{"slide/tile/3", 2, 0}));
  const auto ids = reopened.ids();
  EXPECT_NE(std::find(ids.begin(), ids.end(), name), ids.end());
  EXPECT_TRUE(reopened.erase(name));
  EXPECT_FALSE(reopened.find(name));
}

// The plugin SDK's value types: arrays, tables, port types, parameters,
// keys and manifests.
#include <gtest/gtest.h>

#include <flowd/flowd.hpp>

#include "flowd/manifest.hpp"

using namespace flowd;

TEST(Array, AllocatesContiguousCOrder) {
  Array a = Array::zeros(DType::u16, {3, 4});
  EXPECT_EQ(a.ndim(), 2);
  EXPECT_EQ(a.numel(), 12);
  EXPECT_EQ(a.nbytes(), 24u);
  EXPECT_EQ(a.stride(0), 4);
  EXPECT_EQ(a.stride(1), 1);
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.raw()) % 64, 0u);
  for (auto v : a.values<std::uint16_t>()) EXPECT_EQ(v, 0);
}

TEST(Array, CopiesShareSlicesViewAndCloneDetaches) {
  Array a = Array::zeros(DType::i32, {4, 5});
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c) a.at<std::int32_t>(r, c) = r * 10 + c;
  Array shared = a;
  shared.at<std::int32_t>(0, 0) = 99;
  EXPECT_EQ(a.at<std::int32_t>(0, 0), 99);

  Array cols = a.slice(1, 1, 4);  // columns 1..3, a strided view
  EXPECT_EQ(cols.shape(1), 3);
  EXPECT_FALSE(cols.is_contiguous());
  EXPECT_EQ(cols.at<std::int32_t>(2, 0), 21);
  Array copy = cols.clone();
  EXPECT_TRUE(copy.is_contiguous());
  const std::vector<std::int32_t> expect = {1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32, 33};
  const auto got = copy.values<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(got.begin(), got.end()), expect);
  copy.at<std::int32_t>(0, 0) = -1;
  EXPECT_EQ(a.at<std::int32_t>(0, 1), 1);
}

// clone() copies each contiguous run at once: windows of an interleaved
// image (rows strided, pixels and channels contiguous), column windows
// (every element its own run), windows with unit dimensions, and an empty one.
TEST(Array, CloneOfEveryKindOfWindowIsItsElementsInCOrder) {
  Array img = Array::uninitialized(DType::u16, {7, 9, 3});
  for (int r = 0; r < 7; ++r)
    for (int c = 0; c < 9; ++c)
      for (int k = 0; k < 3; ++k) img.at<std::uint16_t>(r, c, k) = static_cast<std::uint16_t>(r * 100 + c * 10 + k);
  struct Window {
    int r0, r1, c0, c1, k0, k1;
  };
  for (const Window w : {Window{1, 6, 2, 7, 0, 3}, Window{0, 7, 3, 4, 0, 3}, Window{2, 3, 0, 9, 1, 2},
                         Window{0, 7, 0, 9, 2, 3}, Window{4, 5, 5, 6, 0, 3}, Window{3, 3, 0, 9, 0, 3}}) {
    SCOPED_TRACE(std::to_string(w.r0) + ":" + std::to_string(w.r1) + "," + std::to_string(w.c0) + ":" +
                 std::to_string(w.c1) + "," + std::to_string(w.k0) + ":" + std::to_string(w.k1));
    const Array v = img.slice(0, w.r0, w.r1).slice(1, w.c0, w.c1).slice(2, w.k0, w.k1);
    const Array copy = v.clone();
    ASSERT_TRUE(copy.is_contiguous());
    ASSERT_EQ(copy.numel(), v.numel());
    std::vector<std::uint16_t> want;
    for (int r = w.r0; r < w.r1; ++r)
      for (int c = w.c0; c < w.c1; ++c)
        for (int k = w.k0; k < w.k1; ++k) want.push_back(static_cast<std::uint16_t>(r * 100 + c * 10 + k));
    const auto got = copy.values<std::uint16_t>();
    EXPECT_EQ(std::vector<std::uint16_t>(got.begin(), got.end()), want);
  }
}

TEST(Array, RejectsWrongTypeStridedSpanAndBadSlice) {
  Array a = Array::zeros(DType::f32, {2, 2});
  EXPECT_THROW(a.data<double>(), Error);
  EXPECT_THROW((void)a.slice(0, 0, 3), Error);
  EXPECT_THROW((void)a.slice(2, 0, 1), Error);
  EXPECT_THROW((void)a.slice(1, 1, 2).values<float>(), Error);
  EXPECT_THROW((void)a.at<float>(0), Error);
}

TEST(Array, DeviceResidentArraysRefuseHostAccess) {
  auto mem = std::shared_ptr<void>(::operator new(16), [](void* p) { ::operator delete(p); });
  const std::int64_t shape[] = {4};
  Array d = Array::adopt(mem, mem.get(), DType::f32, shape, {}, Placement{Residency::device, 0});
  EXPECT_THROW(d.data<float>(), Error);
  EXPECT_THROW(d.clone(), Error);
  EXPECT_EQ(d.placement().device, 0);
}

TEST(Table, BuildsAppendsAndChecksSchema) {
  Table t;
  auto& area = t.add_column<double>("area");
  auto& name = t.add_column<std::string>("name");
  area = {1.5, 2.5};
  name = {"a", "b"};
  EXPECT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.schema(), "area:f64, name:string");
  Table u;
  u.append(t);
  u.append(t);
  EXPECT_EQ(u.rows(), 4u);
  EXPECT_EQ(u.column<std::string>("name")[3], "b");

  Table other;
  other.add_column<float>("area");
  EXPECT_THROW(u.append(other), Error);
  EXPECT_THROW(t.add_column<double>("area"), Error);
  EXPECT_THROW(t.column<float>("area"), Error);
  EXPECT_THROW(t.column<double>("volume"), Error);
  name.push_back("c");
  EXPECT_THROW((void)t.rows(), Error);  // ragged
}

TEST(PortType, ParsesPrintsAndMatches) {
  auto t = PortType::parse("array<u8|u16,2|3>");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->str(), "array<u8|u16,2|3>");
  EXPECT_EQ(PortType::parse("array<any,2>")->str(), "array<any,2>");
  EXPECT_EQ(PortType::parse("array")->str(), "array");
  EXPECT_FALSE(PortType::parse("array<u9>"));
  EXPECT_FALSE(PortType::parse("arr"));
  EXPECT_FALSE(PortType::parse("array<u8,9>"));
  EXPECT_THROW(PortType("matrix"), Error);

  const PortType u8_2d = "array<u8,2>";
  EXPECT_TRUE(u8_2d.compatible_with("array<u8|u16,2|3>"));
  EXPECT_FALSE(u8_2d.compatible_with("array<f32,2>"));
  EXPECT_FALSE(u8_2d.compatible_with("array<u8,3>"));
  EXPECT_FALSE(u8_2d.compatible_with("table"));
  EXPECT_TRUE(u8_2d.compatible_with("any"));
  EXPECT_TRUE(PortType::any().compatible_with("table"));

  EXPECT_TRUE(u8_2d.accepts(Value(Array::zeros(DType::u8, {2, 2}))));
  EXPECT_FALSE(u8_2d.accepts(Value(Array::zeros(DType::u8, {2, 2, 3}))));
  EXPECT_FALSE(u8_2d.accepts(Value(Json(1))));
  EXPECT_FALSE(PortType::any().accepts(Value()));
}

TEST(ParamSpec, ChecksTypeRangeAndChoices) {
  const auto tile = ParamSpec::integer("tile", 1024).range(16, 65536);
  EXPECT_FALSE(tile.check(256));
  EXPECT_EQ(*tile.check(8), "expected int in [16, 65536], got 8");
  EXPECT_EQ(*tile.check(256.5), "expected int in [16, 65536], got 256.5");
  EXPECT_TRUE(tile.check("256"));
  const auto mode = ParamSpec::string("mode", "color").choices({"color", "grey"});
  EXPECT_FALSE(mode.check("grey"));
  EXPECT_EQ(*mode.check("gray"), "expected string, one of color|grey, got \"gray\"");
  EXPECT_FALSE(ParamSpec::number("sigma").check(3));  // an integer is a number
  EXPECT_TRUE(ParamSpec::string("path").required());
}

TEST(Params, TypedAccess) {
  Params p(Json{{"n", 3}, {"s", "x"}});
  EXPECT_EQ(p.get<int>("n"), 3);
  EXPECT_EQ(p.get<std::string>("s"), "x");
  EXPECT_THROW(p.get<int>("missing"), ParamError);
  EXPECT_THROW(p.get<int>("s"), ParamError);
}

TEST(Keys, NaturalOrder) {
  std::vector<std::string> keys = {"a/tile/10/0", "a/tile/2/0", "a/tile/2/10", "a/tile/2/9", "b", "a/tile/02/1"};
  std::sort(keys.begin(), keys.end(), [](const auto& x, const auto& y) { return key_less(x, y); });
  const std::vector<std::string> expect = {"a/tile/2/0", "a/tile/2/9", "a/tile/2/10", "a/tile/02/1", "a/tile/10/0", "b"};
  EXPECT_EQ(keys, expect);
  EXPECT_FALSE(key_less("x", "x"));
}

TEST(Manifest, RoundTripsSpecs) {
  OperatorSpec s{.name = "demo.op",
                 .doc = "d",
                 .inputs = {{"in", "array<u8,2>", "input", true}},
                 .outputs = {{"out", "table", "output"}},
                 .params = {ParamSpec::number("x", 1.5).range(0, 2).doc("x"),
                            ParamSpec::string("m", "a").choices({"a", "b"}), ParamSpec::string("path")},
                 .speedup_hint = 4.0,
                 .pattern = Pattern::map,
                 .variants = {Device::cpu}};
  const OperatorSpec back = spec_from_json(to_json(s));
  EXPECT_EQ(to_json(back), to_json(s));
  EXPECT_TRUE(back.inputs[0].optional);
  EXPECT_TRUE(back.params[2].required());
  EXPECT_EQ(*back.speedup_hint, 4.0);
}

// The plugin examples of docs/plugin-sdk.md, compiled from docs/examples/ as
// printed (tests/plugins/CMakeLists.txt), do what the guide says they do.
#include <cmath>

#include <gtest/gtest.h>

#include "runtime/harness.hpp"
#include "support/helpers.hpp"

using namespace flowd;

namespace {

Item regions(std::vector<std::int64_t> areas) {
  Table t;
  t.add_column<std::int64_t>("area") = std::move(areas);
  Item item;
  item.meta.key = "image/" + std::to_string(t.rows());
  item.value = Value(std::move(t));
  return item;
}

}  // namespace

TEST(DocExamples, TheReduceExampleSumsHistogramsOfEveryTable) {
  auto reg = test::registry({test::test_plugins("areahist")});
  ASSERT_TRUE(reg.problems().empty()) << reg.problems().front();
  runtime::OperatorHarness h(reg.open("example.area_histogram"), {{"bins", 4}, {"max_area", 100}}, test::quiet_log());
  EXPECT_EQ(h.spec().pattern, Pattern::reduce);
  const Item out = h.reduce({regions({1, 30, 99}), regions({}), regions({25, 100, 250, 50})});
  const Table& t = out.table();
  EXPECT_EQ(t.column<std::int64_t>("count"), (std::vector<std::int64_t>{1, 2, 1, 1, 2}));
  EXPECT_EQ(t.column<double>("bin_start"), (std::vector<double>{0, 25, 50, 75, 100}));
  const auto& end = t.column<double>("bin_end");
  EXPECT_EQ(std::vector<double>(end.begin(), end.end() - 1), (std::vector<double>{25, 50, 75, 100}));
  EXPECT_TRUE(std::isinf(end.back()));
  EXPECT_EQ(out.meta.attrs["tables"], 3);
  EXPECT_EQ(out.meta.attrs["regions"], 7);
  EXPECT_DOUBLE_EQ(out.meta.attrs["mean_area"].get<double>(), 555.0 / 7);
  EXPECT_TRUE(out.meta.key.empty());  // a run names it after the stage (PluginCli test)
}

TEST(DocExamples, TheReduceExampleNamesAMissingColumn) {
  auto reg = test::registry({test::test_plugins("areahist")});
  runtime::OperatorHarness h(reg.open("example.area_histogram"), Json::object(), test::quiet_log());
  Table t;
  t.add_column<double>("size").push_back(3);
  Item bad{{}, Value(std::move(t))};
  bad.meta.key = "x";
  try {
    h.reduce({bad});
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no column 'area' (columns: size:f64)"), std::string::npos) << e.what();
  }
}

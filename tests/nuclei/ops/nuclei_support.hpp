#pragma once
// Shared by the nuclei operator tests: the plugin's operators through the
// engine's harness, generated H&E tiles, and label comparisons.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <opencv2/core.hpp>

#include "flowd/flowd.hpp"
#include "flowd/opencv.hpp"
#include "hne/generate.hpp"
#include "runtime/harness.hpp"
#include "support/helpers.hpp"

namespace flowd::nucleitest {

inline plugin::Registry& registry() {
  static plugin::Registry reg = [] {
    plugin::Registry r({{FLOWD_TEST_PLUGIN_DIR, "test", true}}, test::quiet_log());
    r.scan();
    return r;
  }();
  return reg;
}

inline runtime::OperatorHarness harness(const std::string& op, const Json& params = Json::object()) {
  return runtime::OperatorHarness(registry().open(op), params, test::quiet_log(), "stage-under-test");
}

inline Item mat_item(const std::string& key, const cv::Mat& m) {
  Item it;
  it.meta.key = key;
  it.meta.bbox = Box::make2d(0, 0, m.rows, m.cols);
  it.value = from_mat(m.clone());
  return it;
}

inline cv::Mat mat_of(const Item& item) { return as_mat(item.array()).clone(); }

inline hne::Sample sample(int size, std::uint64_t seed, double mpp = 0.25) {
  hne::Params p;
  p.width = p.height = size;
  p.seed = seed;
  p.mpp = mpp;
  return hne::generate(p);
}

// Labels equal up to a bijective renumbering.
inline ::testing::AssertionResult same_objects(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  std::map<int, int> ab, ba;
  for (int r = 0; r < a.rows; ++r)
    for (int c = 0; c < a.cols; ++c) {
      const int x = a.at<int>(r, c), y = b.at<int>(r, c);
      if ((x == 0) != (y == 0)) return ::testing::AssertionFailure() << "foreground differs at " << r << "," << c;
      if (x != 0 && (ab.emplace(x, y).first->second != y || ba.emplace(y, x).first->second != x))
        return ::testing::AssertionFailure() << "label " << x << " is not one object in both (at " << r << "," << c << ")";
    }
  return ::testing::AssertionSuccess();
}

}  // namespace flowd::nucleitest

#include <cstdint>
#include <limits>
#include <vector>

#include <flowd/flowd.hpp>

namespace {

// A histogram of region areas over every table of a run, e.g. the "regions"
// tables of image.region_stats (one per image or tile).
class AreaHistogram final : public flowd::Reduce {
public:
  static flowd::OperatorSpec spec() {
    return {.name = "example.area_histogram",
            .doc =
                "Histogram of the i64 column \"area\" of every table: `bins` equal bins over [0, max_area) and a "
                "last row for areas of max_area or more.",
            .inputs = {{"regions", "table", "tables with an i64 column \"area\""}},
            .outputs = {{"histogram", "table", "bin_start, bin_end, count; attrs: tables, regions, mean_area"}},
            .params = {flowd::ParamSpec::integer("bins", 10).range(1, 10000).doc("number of equal bins"),
                       flowd::ParamSpec::integer("max_area", 1000).at_least(1).doc("end of the last bin, pixels")}};
  }

  // Integer parameters are read as std::int64_t, already checked against
  // their declared range.
  explicit AreaHistogram(const flowd::Params& p)
      : bins_(p.get<std::int64_t>("bins")), max_area_(p.get<std::int64_t>("max_area")) {}

  // One input table -> one partial histogram: a "count" column of bins + 1
  // rows, the sums in the metadata's attrs. A fresh Item, so its metadata
  // holds only what we put there (no key: see finish).
  flowd::Item lift(flowd::ReduceContext&, const flowd::Item& in) const override {
    const std::vector<std::int64_t>& area = in.table().column<std::int64_t>("area");  // throws if absent or not i64
    flowd::Table partial;
    auto& count = partial.add_column<std::int64_t>("count");
    count.assign(static_cast<std::size_t>(bins_) + 1, 0);
    std::int64_t sum = 0;
    for (const std::int64_t a : area) {
      if (a < 0) throw flowd::Error("example.area_histogram: negative area " + std::to_string(a));
      ++count[static_cast<std::size_t>(a >= max_area_ ? bins_ : a * bins_ / max_area_)];
      sum += a;
    }
    flowd::Item out{{}, flowd::Value(std::move(partial))};
    out.meta.attrs = {{"tables", 1}, {"regions", area.size()}, {"area_sum", sum}};
    return out;
  }

  // Adds two partial histograms. Called concurrently on different
  // accumulators, in any grouping and order; uses nothing but the two.
  flowd::Item merge(flowd::ReduceContext&, flowd::Item acc, const flowd::Item& other) const override {
    auto& count = std::get<flowd::Table>(acc.value).column<std::int64_t>("count");
    const auto& more = other.table().column<std::int64_t>("count");
    for (std::size_t i = 0; i < count.size(); ++i)
      count[i] += more[i];
    for (const char* sum : {"tables", "regions", "area_sum"})
      acc.meta.attrs[sum] = acc.meta.attrs[sum].get<std::int64_t>() + other.meta.attrs[sum].get<std::int64_t>();
    return acc;
  }

  // Once, on the last accumulator: the bin bounds and the mean. The key is
  // left empty, so the engine names the result after the stage.
  flowd::Item finish(flowd::ReduceContext&, flowd::Item acc) const override {
    auto& table = std::get<flowd::Table>(acc.value);
    auto& start = table.add_column<double>("bin_start");
    auto& end = table.add_column<double>("bin_end");
    const double width = static_cast<double>(max_area_) / static_cast<double>(bins_);
    for (std::int64_t b = 0; b < bins_; ++b) {
      start.push_back(static_cast<double>(b) * width);
      end.push_back(static_cast<double>(b + 1) * width);
    }
    start.push_back(static_cast<double>(max_area_));
    end.push_back(std::numeric_limits<double>::infinity());
    auto& attrs = acc.meta.attrs;
    const double regions = attrs["regions"].get<double>();
    attrs["mean_area"] = regions > 0 ? attrs["area_sum"].get<double>() / regions : 0.0;
    return acc;
  }

private:
  std::int64_t bins_;
  std::int64_t max_area_;
};

}  // namespace

FLOWD_PLUGIN("example_reduce", "1.0.0", "The SDK guide's reduce example", AreaHistogram)

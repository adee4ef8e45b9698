// Operators used only by the benchmark drivers. Not installed.
#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include <flowd/flowd.hpp>

namespace {

using namespace flowd;

// Emits `count` items that all share one generated grey image (bright disks
// on a dark, noisy background), so a benchmark measures the stages, not the
// source.
class Images final : public Source {
public:
  static OperatorSpec spec() {
    return {.name = "bench.images",
            .doc = "count items sharing one generated grey u8 image of rows x cols.",
            .inputs = {},
            .outputs = {{"image", "array<u8,2>", "the image"}},
            .params = {ParamSpec::integer("count", 16).at_least(1), ParamSpec::integer("rows", 1024).at_least(8),
                       ParamSpec::integer("cols", 1024).at_least(8), ParamSpec::integer("seed", 1)}};
  }
  explicit Images(const Params& p)
      : count_(p.get<std::int64_t>("count")),
        image_(make(p.get<std::int64_t>("rows"), p.get<std::int64_t>("cols"), p.get<std::int64_t>("seed"))) {}

  static Array make(std::int64_t rows, std::int64_t cols, std::int64_t seed) {
    Array a = Array::uninitialized(DType::u8, {rows, cols});
    std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
    auto* px = a.data<std::uint8_t>();
    for (std::int64_t i = 0; i < rows * cols; ++i) px[i] = static_cast<std::uint8_t>(20 + rng() % 30);
    const std::int64_t disks = std::max<std::int64_t>(1, rows * cols / 1600);
    for (std::int64_t d = 0; d < disks; ++d) {
      const std::int64_t cr = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(rows));
      const std::int64_t cc = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(cols));
      const std::int64_t r = 3 + static_cast<std::int64_t>(rng() % 8);
      for (std::int64_t y = std::max<std::int64_t>(0, cr - r); y < std::min(rows, cr + r + 1); ++y)
        for (std::int64_t x = std::max<std::int64_t>(0, cc - r); x < std::min(cols, cc + r + 1); ++x)
          if ((y - cr) * (y - cr) + (x - cc) * (x - cc) <= r * r) px[y * cols + x] = static_cast<std::uint8_t>(170 + rng() % 60);
    }
    return a;
  }

  bool next(SourceContext& ctx) override {
    Item item;
    item.meta.key = "img/" + std::to_string(i_);
    item.meta.bbox = Box::make2d(0, 0, image_.shape(0), image_.shape(1));
    item.value = image_;
    ctx.emit("image", std::move(item));
    return ++i_ < count_;
  }

private:
  std::int64_t count_;
  Array image_;
  std::int64_t i_ = 0;
};

// The scan paper's mock operator for runs of the engine (cluster rows of
// §11.3, tools/bench/scan_cluster.sh): the series is `count` ranges [i, i];
// a combine joins two adjacent ranges after sleeping a draw — constant, or
// exponentially distributed with mean t (std::mt19937 seeded 1410) and picked
// by hashing the operands, so every application gets its own time whatever
// the strategy or the process that runs it (flowd-bench-scan-mock's
// "application" mode).
class Series final : public Source {
public:
  static OperatorSpec spec() {
    return {.name = "bench.series",
            .doc = "count JSON items {lo: i, hi: i}, keyed x/<i>.",
            .inputs = {},
            .outputs = {{"out", "json", "the series"}},
            .params = {ParamSpec::integer("count", 512).at_least(1)}};
  }
  explicit Series(const Params& p) : count_(p.get<std::int64_t>("count")) {}
  bool next(SourceContext& ctx) override {
    Item item;
    item.meta.key = "x/" + std::to_string(i_);
    item.value = Json{{"lo", i_}, {"hi", i_}};
    ctx.emit("out", std::move(item));
    return ++i_ < count_;
  }

private:
  std::int64_t count_;
  std::int64_t i_ = 0;
};

class MockScan final : public Scan {
public:
  static OperatorSpec spec() {
    return {.name = "bench.mock_scan",
            .doc = "Joins adjacent ranges after sleeping a constant or exponentially distributed time.",
            .inputs = {{"in", "json", "bench.series items"}},
            .outputs = {{"out", "json", "the joined range"}},
            .params = {ParamSpec::number("t_ms", 1.0).at_least(0).doc("mean time per combine"),
                       ParamSpec::string("times", "exponential").choices({"constant", "exponential"}),
                       ParamSpec::integer("seed", 1410), ParamSpec::integer("draws", 65536).at_least(1)}};
  }
  explicit MockScan(const Params& p) {
    const double t = p.get<double>("t_ms") * 1e-3;
    std::mt19937 rng(static_cast<std::uint32_t>(p.get<std::int64_t>("seed")));
    std::exponential_distribution<double> exp(1.0 / t);
    const bool constant = p.get<std::string>("times") == "constant";
    for (std::int64_t i = 0; i < p.get<std::int64_t>("draws"); ++i) draws_.push_back(constant ? t : exp(rng));
  }
  Item combine(ScanContext&, const Item& left, const Item& right) const override {
    const auto lo = left.json()["lo"].get<std::uint64_t>(), mid = left.json()["hi"].get<std::uint64_t>();
    const auto r_lo = right.json()["lo"].get<std::uint64_t>(), hi = right.json()["hi"].get<std::uint64_t>();
    if (mid + 1 != r_lo) throw Error("combined [" + std::to_string(lo) + ", " + std::to_string(mid) + "] with [" +
                                     std::to_string(r_lo) + ", " + std::to_string(hi) + "]: not adjacent");
    std::uint64_t h = lo * 0x9E3779B97F4A7C15ull ^ (hi + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    std::this_thread::sleep_for(std::chrono::duration<double>(draws_[h % draws_.size()]));
    return Item{right.meta, Value(Json{{"lo", lo}, {"hi", hi}})};
  }

private:
  std::vector<double> draws_;
};

}  // namespace

FLOWD_PLUGIN("bench", "0.1.0", "Benchmark helpers", Images, Series, MockScan)

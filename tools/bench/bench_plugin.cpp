// Operators used only by the benchmark drivers. Not installed.
#include <cmath>
#include <random>

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

}  // namespace

FLOWD_PLUGIN("bench", "0.1.0", "Benchmark helpers", Images)

// A second plugin declaring an operator name testops already provides.
#include <flowd/flowd.hpp>

namespace {
class Step final : public flowd::Map {
public:
  static flowd::OperatorSpec spec() {
    return {.name = "test.step", .doc = "Duplicate of testops' test.step.", .inputs = {{"in", "any", ""}},
            .outputs = {{"out", "any", ""}}, .params = {}};
  }
  explicit Step(const flowd::Params&) {}
  void cpu(flowd::MapContext& ctx) const override { ctx.emit("out", ctx.input(0)); }
};
}  // namespace

FLOWD_PLUGIN("testdup", "0.0.1", "Duplicates an operator name", Step)

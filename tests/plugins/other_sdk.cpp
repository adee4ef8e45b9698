// A plugin compiled against a copy of the SDK headers in which Context has
// one more virtual function (tests/plugins/CMakeLists.txt makes the copy):
// what an author gets with a newer or patched SDK of the same ABI number.
// Its fingerprint carries that copy's header hash, so the engine must refuse
// it; loaded, its calls through Context would land in the wrong vtable slots.
#include <flowd/flowd.hpp>

namespace {
class Touch final : public flowd::Map {
public:
  static flowd::OperatorSpec spec() {
    return {.name = "othersdk.touch",
            .doc = "Reads its input through the (altered) Context.",
            .inputs = {{"in", "any", ""}},
            .outputs = {{"out", "any", ""}},
            .params = {}};
  }
  explicit Touch(const flowd::Params&) {}
  void cpu(flowd::MapContext& ctx) const override { ctx.emit("out", ctx.input("in")); }
};
}  // namespace

FLOWD_PLUGIN("othersdk", "0.0.1", "Built against other SDK headers", Touch)

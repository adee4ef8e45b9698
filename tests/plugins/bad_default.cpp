// A plugin whose parameter defaults break their own declarations (a range, a
// set of choices): every stage leaving them unset would fail, so the engine
// refuses the plugin, naming each one.
#include <flowd/flowd.hpp>

namespace {
class Level final : public flowd::Map {
public:
  static flowd::OperatorSpec spec() {
    return {.name = "baddefault.level",
            .doc = "Declares level = 999 in [0, 255].",
            .inputs = {{"in", "any", ""}},
            .outputs = {{"out", "any", ""}},
            .params = {flowd::ParamSpec::integer("level", 999).range(0, 255)}};
  }
  explicit Level(const flowd::Params&) {}
  void cpu(flowd::MapContext& ctx) const override { ctx.emit("out", ctx.input("in")); }
};

class Mode final : public flowd::Map {
public:
  static flowd::OperatorSpec spec() {
    return {.name = "baddefault.mode",
            .doc = "Declares mode = \"gray\" of color|grey.",
            .inputs = {{"in", "any", ""}},
            .outputs = {{"out", "any", ""}},
            .params = {flowd::ParamSpec::string("mode", "gray").choices({"color", "grey"})}};
  }
  explicit Mode(const flowd::Params&) {}
  void cpu(flowd::MapContext& ctx) const override { ctx.emit("out", ctx.input("in")); }
};
}  // namespace

FLOWD_PLUGIN("baddefault", "0.0.1", "Defaults outside their own declarations", Level, Mode)

#include "runtime/run_types.hpp"

#include <cstdlib>

namespace flowd::runtime {

GpuSpec GpuSpec::parse(const std::string& text) {
  const std::string expected = "expected none, all, a count, or sim:N[:scale] (e.g. sim:2 or sim:1:0.5)";
  GpuSpec g;
  auto number = [&](const std::string& s, bool integer) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || v < 0 || (integer && v != static_cast<int>(v)))
      throw Error("--gpu " + text + ": " + expected);
    return v;
  };
  if (text == "none" || text == "0") return g;
  if (text == "all") {
    g.mode = Mode::all;
    return g;
  }
  if (text.rfind("sim:", 0) == 0) {
    g.mode = Mode::sim;
    const std::string rest = text.substr(4);
    const auto colon = rest.find(':');
    g.count = static_cast<int>(number(rest.substr(0, colon), true));
    if (colon != std::string::npos) g.scale = number(rest.substr(colon + 1), false);
    if (g.count < 1 || g.scale <= 0) throw Error("--gpu " + text + ": " + expected);
    return g;
  }
  g.mode = Mode::count;
  g.count = static_cast<int>(number(text, true));
  return g;
}

std::string GpuSpec::str() const {
  switch (mode) {
    case Mode::none: return "none";
    case Mode::all: return "all";
    case Mode::count: return std::to_string(count);
    case Mode::sim: {
      std::string s = "sim:" + std::to_string(count);
      if (scale != 1.0) s += ":" + Json(scale).dump();
      return s;
    }
  }
  return "none";
}

}  // namespace flowd::runtime

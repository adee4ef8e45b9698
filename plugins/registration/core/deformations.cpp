#include "deformations.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace flowd::registration {

namespace {

constexpr std::string_view header = "frame,tx,ty,angle";

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v == 0.0 ? 0.0 : v);  // no "-0"
  return buf;
}

double parse_number(std::string_view field, std::size_t line, const char* name) {
  double v = 0.0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size() || !std::isfinite(v))
    throw std::invalid_argument("line " + std::to_string(line) + ": " + name + " '" + std::string(field) +
                                "' is not a number");
  return v;
}

}  // namespace

std::string format_deformations(const std::vector<Deformation>& rows) {
  std::string out(header);
  out += '\n';
  for (const Deformation& d : rows)
    out += d.frame + "," + number(d.phi.tx) + "," + number(d.phi.ty) + "," + number(d.phi.degrees()) + "\n";
  return out;
}

std::vector<Deformation> parse_deformations(std::string_view text) {
  std::vector<Deformation> rows;
  std::size_t line = 0;
  bool seen_header = false;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view l = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) continue;
    if (!seen_header) {
      if (l != header)
        throw std::invalid_argument("line " + std::to_string(line) + ": expected the header '" + std::string(header) +
                                    "', got '" + std::string(l) + "'");
      seen_header = true;
      continue;
    }
    std::string_view f[4];
    std::size_t n = 0;
    for (std::string_view rest = l;; ++n) {
      const auto comma = rest.find(',');
      if (n < 4) f[n] = rest.substr(0, comma);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    if (n + 1 != 4)
      throw std::invalid_argument("line " + std::to_string(line) + ": " + std::to_string(n + 1) +
                                  " fields, expected 4 (frame,tx,ty,angle)");
    if (f[0].empty()) throw std::invalid_argument("line " + std::to_string(line) + ": the frame name is empty");
    rows.push_back(
        {std::string(f[0]), Rigid::from_degrees(parse_number(f[3], line, "angle"), parse_number(f[1], line, "tx"),
                                                parse_number(f[2], line, "ty"))});
  }
  if (!seen_header) throw std::invalid_argument("empty: no header '" + std::string(header) + "'");
  return rows;
}

}  // namespace flowd::registration

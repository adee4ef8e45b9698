#include "deformations.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace flowd::registration {

namespace {

constexpr std::string_view motion_header = "frame,tx_px,ty_px,angle_deg";
constexpr std::string_view quality_header = "frame,tx_px,ty_px,angle_deg,ncc,overlap,reliable";
constexpr std::string_view old_header = "frame,tx,ty,angle";  // before issue 38

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
  const bool quality =
      !rows.empty() && std::all_of(rows.begin(), rows.end(), [](const Deformation& d) { return d.quality.has_value(); });
  std::string out(quality ? quality_header : motion_header);
  out += '\n';
  for (const Deformation& d : rows) {
    out += d.frame + "," + number(d.phi.tx) + "," + number(d.phi.ty) + "," + number(d.phi.degrees());
    if (quality)
      out += "," + number(d.quality->ncc) + "," + number(d.quality->overlap) + "," + (d.quality->reliable ? "1" : "0");
    out += "\n";
  }
  return out;
}

std::vector<Deformation> parse_deformations(std::string_view text) {
  std::vector<Deformation> rows;
  std::size_t line = 0, fields = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view l = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) continue;
    if (fields == 0) {
      if (l == old_header || l == motion_header) fields = 4;
      else if (l == quality_header) fields = 7;
      else
        throw std::invalid_argument("line " + std::to_string(line) + ": expected the header '" +
                                    std::string(motion_header) + "' (or '" + std::string(quality_header) + "'), got '" +
                                    std::string(l) + "'");
      continue;
    }
    std::string_view f[7];
    std::size_t n = 0;
    for (std::string_view rest = l;; ++n) {
      const auto comma = rest.find(',');
      if (n < 7) f[n] = rest.substr(0, comma);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    if (n + 1 != fields)
      throw std::invalid_argument("line " + std::to_string(line) + ": " + std::to_string(n + 1) + " fields, expected " +
                                  std::to_string(fields));
    if (f[0].empty()) throw std::invalid_argument("line " + std::to_string(line) + ": the frame name is empty");
    Deformation d{std::string(f[0]), Rigid::from_degrees(parse_number(f[3], line, "angle_deg"),
                                                         parse_number(f[1], line, "tx_px"),
                                                         parse_number(f[2], line, "ty_px"))};
    if (fields == 7) {
      if (f[6] != "0" && f[6] != "1")
        throw std::invalid_argument("line " + std::to_string(line) + ": reliable '" + std::string(f[6]) +
                                    "' is not 0 or 1");
      d.quality = MatchQuality{parse_number(f[4], line, "ncc"), parse_number(f[5], line, "overlap"), f[6] == "1"};
    }
    rows.push_back(std::move(d));
  }
  if (fields == 0) throw std::invalid_argument("empty: no header '" + std::string(motion_header) + "'");
  return rows;
}

}  // namespace flowd::registration

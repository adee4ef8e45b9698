#pragma once
// Port types: what an operator's input or output carries.
//
// Written as strings in specs and manifests:
//   any | table | json | array | array<u8> | array<u8|u16,2|3> | array<any,2>
// An array type constrains the element type and the number of dimensions,
// each to a set. Connected ports are compatible when the sets intersect;
// every item is checked against the exact types at run time.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "flowd/item.hpp"

namespace flowd {

class PortType {
public:
  enum class Kind : std::uint8_t { any, array, table, json };

  // Implicit from the string form so specs can write {"image", "array<u8,2>"};
  // a malformed string fails when the plugin registers its operators.
  PortType(const char* text) : PortType(parse_or_throw(text)) {}  // NOLINT(google-explicit-constructor)

  static PortType any() { return PortType(Kind::any); }
  static PortType table() { return PortType(Kind::table); }
  static PortType json() { return PortType(Kind::json); }
  static PortType array(std::initializer_list<DType> dtypes = {}, std::initializer_list<int> ndims = {}) {
    PortType t(Kind::array);
    for (DType d : dtypes) t.dtypes_ |= bit(d);
    for (int n : ndims) t.ndims_ |= static_cast<std::uint16_t>(1u << n);
    return t;
  }

  // Parses the string form; nullopt if malformed.
  static std::optional<PortType> parse(std::string_view s) {
    if (s == "any") return any();
    if (s == "table") return table();
    if (s == "json") return json();
    if (s == "array") return array();
    if (!s.starts_with("array<") || !s.ends_with(">")) return std::nullopt;
    std::string_view body = s.substr(6, s.size() - 7);
    const auto comma = body.find(',');
    PortType t(Kind::array);
    const std::string_view dpart = body.substr(0, comma);
    if (dpart != "any") {
      if (!for_each_alt(dpart, [&](std::string_view name) {
            auto d = parse_dtype(name);
            if (d) t.dtypes_ |= bit(*d);
            return d.has_value();
          }))
        return std::nullopt;
    }
    if (comma != std::string_view::npos) {
      const std::string_view npart = body.substr(comma + 1);
      if (npart != "any" && !for_each_alt(npart, [&](std::string_view n) {
            if (n.size() != 1 || n[0] < '0' || n[0] > '8') return false;
            t.ndims_ |= static_cast<std::uint16_t>(1u << (n[0] - '0'));
            return true;
          }))
        return std::nullopt;
    }
    return t;
  }

  Kind kind() const noexcept { return kind_; }

  std::string str() const {
    switch (kind_) {
      case Kind::any: return "any";
      case Kind::table: return "table";
      case Kind::json: return "json";
      case Kind::array: break;
    }
    if (!dtypes_ && !ndims_) return "array";
    std::string s = "array<";
    if (!dtypes_) s += "any";
    for (int i = 0, first = 1; i < dtype_count; ++i)
      if (dtypes_ & (1u << i)) {
        s += (first ? "" : "|") + std::string(name_of(static_cast<DType>(i)));
        first = 0;
      }
    if (ndims_) {
      s += ',';
      for (int n = 0, first = 1; n <= max_ndim; ++n)
        if (ndims_ & (1u << n)) {
          s += (first ? "" : "|") + std::to_string(n);
          first = 0;
        }
    }
    return s + '>';
  }

  // Whether an output of type `out` may be connected to an input of this
  // type: some value could satisfy both.
  bool compatible_with(const PortType& out) const noexcept {
    if (kind_ == Kind::any || out.kind_ == Kind::any) return true;
    if (kind_ != out.kind_) return false;
    if (kind_ != Kind::array) return true;
    return overlaps(dtypes_, out.dtypes_) && overlaps(ndims_, out.ndims_);
  }

  // Whether a concrete value satisfies this type.
  bool accepts(const Value& v) const noexcept {
    switch (kind_) {
      case Kind::any: return kind_of(v) != ValueKind::none;
      case Kind::table: return kind_of(v) == ValueKind::table;
      case Kind::json: return kind_of(v) == ValueKind::json;
      case Kind::array: break;
    }
    const Array* a = std::get_if<Array>(&v);
    if (!a) return false;
    return (!dtypes_ || (dtypes_ & bit(a->dtype()))) && (!ndims_ || (ndims_ & (1u << a->ndim())));
  }

  friend bool operator==(const PortType&, const PortType&) = default;

private:
  explicit PortType(Kind k) : kind_(k) {}
  static PortType parse_or_throw(const char* text) {
    if (auto t = parse(text)) return *t;
    throw Error(std::string("malformed port type '") + text +
                "' (expected any, table, json, array or array<DTYPES[,NDIMS]> such as array<u8|f32,2|3>)");
  }
  static std::uint16_t bit(DType d) { return static_cast<std::uint16_t>(1u << static_cast<int>(d)); }
  static bool overlaps(std::uint16_t a, std::uint16_t b) { return !a || !b || (a & b); }
  template <class F> static bool for_each_alt(std::string_view s, F&& f) {
    while (true) {
      const auto bar = s.find('|');
      if (!f(s.substr(0, bar))) return false;
      if (bar == std::string_view::npos) return true;
      s.remove_prefix(bar + 1);
    }
  }

  Kind kind_;
  std::uint16_t dtypes_ = 0;  // bit per DType; 0 = any
  std::uint16_t ndims_ = 0;   // bit per dimension count; 0 = any
};

// A short description of a value for error messages: "array<u8,2>[64x64]".
inline std::string describe(const Value& v) {
  switch (kind_of(v)) {
    case ValueKind::none: return "nothing";
    case ValueKind::array: {
      const auto& a = std::get<Array>(v);
      return "array<" + std::string(name_of(a.dtype())) + "," + std::to_string(a.ndim()) + ">" +
             a.describe().substr(name_of(a.dtype()).size());
    }
    case ValueKind::table: return "table(" + std::get<Table>(v).schema() + ")";
    case ValueKind::json: return "json";
  }
  return "?";
}

struct PortSpec {
  std::string name{};
  PortType type = PortType::any();
  std::string doc{};
  // An optional input may be left unconnected; an optional output may be
  // left unset by a task (the item then produces nothing on that port).
  bool optional = false;
};

}  // namespace flowd

#pragma once
// Operator parameters: declared with type, default, allowed range or values
// and a description; validated by the engine before anything runs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "flowd/error.hpp"

namespace flowd {

using Json = nlohmann::json;

enum class ParamType : std::uint8_t { boolean, integer, number, string, json };

constexpr std::string_view name_of(ParamType t) noexcept {
  constexpr std::string_view names[] = {"bool", "int", "float", "string", "json"};
  return names[static_cast<int>(t)];
}

struct ParamSpec {
  std::string name{};
  ParamType type = ParamType::json;
  std::optional<Json> default_value{};  // none: the parameter is required
  std::optional<double> minimum{};      // inclusive, numbers only
  std::optional<double> maximum{};      // inclusive, numbers only
  std::vector<Json> allowed{};          // empty: any value of the type
  std::string description{};
  // The value names a file or folder the stage reads: `flowd validate` and
  // the run check that it exists before anything starts (a generated data
  // set, "synthetic:...", is not checked).
  bool names_input = false;

  static ParamSpec boolean(std::string n, std::optional<bool> def = {}) { return make(std::move(n), ParamType::boolean, def); }
  static ParamSpec integer(std::string n, std::optional<std::int64_t> def = {}) { return make(std::move(n), ParamType::integer, def); }
  static ParamSpec number(std::string n, std::optional<double> def = {}) { return make(std::move(n), ParamType::number, def); }
  static ParamSpec string(std::string n, std::optional<std::string> def = {}) { return make(std::move(n), ParamType::string, def); }
  static ParamSpec json(std::string n, std::optional<Json> def = {}) { return make(std::move(n), ParamType::json, def); }

  ParamSpec&& range(double lo, double hi) && { minimum = lo; maximum = hi; return std::move(*this); }
  ParamSpec&& at_least(double lo) && { minimum = lo; return std::move(*this); }
  ParamSpec&& choices(std::vector<Json> values) && { allowed = std::move(values); return std::move(*this); }
  ParamSpec&& doc(std::string text) && { description = std::move(text); return std::move(*this); }
  ParamSpec&& input_path() && { names_input = true; return std::move(*this); }

  bool required() const noexcept { return !default_value.has_value(); }

  // "int in [16, 65536]", "string, one of color|grey"
  std::string expectation() const {
    std::string s(name_of(type));
    if (minimum && maximum) s += " in [" + num(*minimum) + ", " + num(*maximum) + "]";
    else if (minimum) s += " >= " + num(*minimum);
    else if (maximum) s += " <= " + num(*maximum);
    if (!allowed.empty()) {
      s += ", one of ";
      for (std::size_t i = 0; i < allowed.size(); ++i) s += (i ? "|" : "") + plain(allowed[i]);
    }
    return s;
  }

  // Empty when `v` is acceptable, otherwise what is wrong.
  std::optional<std::string> check(const Json& v) const {
    const bool type_ok = [&] {
      switch (type) {
        case ParamType::boolean: return v.is_boolean();
        case ParamType::integer: return v.is_number_integer();
        case ParamType::number: return v.is_number();
        case ParamType::string: return v.is_string();
        case ParamType::json: return true;
      }
      return false;
    }();
    if (!type_ok || (v.is_number() && !std::isfinite(v.get<double>())))
      return "expected " + expectation() + ", got " + v.dump();
    if (v.is_number()) {
      const double x = v.get<double>();
      if ((minimum && x < *minimum) || (maximum && x > *maximum)) return "expected " + expectation() + ", got " + v.dump();
    }
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      return "expected " + expectation() + ", got " + v.dump();
    return std::nullopt;
  }

private:
  template <class T> static ParamSpec make(std::string n, ParamType t, const std::optional<T>& def) {
    ParamSpec p;
    p.name = std::move(n);
    p.type = t;
    if (def) p.default_value = Json(*def);
    return p;
  }
  static std::string num(double x) {
    Json j = (x == std::floor(x) && std::fabs(x) < 1e15) ? Json(static_cast<std::int64_t>(x)) : Json(x);
    return j.dump();
  }
  static std::string plain(const Json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }
};

// The validated parameters of one stage: every declared parameter is present
// (defaults filled in), with the declared type.
class Params {
public:
  Params() = default;
  explicit Params(Json values) : values_(std::move(values)) {}

  bool has(std::string_view name) const { return values_.contains(name); }
  const Json& json() const noexcept { return values_; }

  template <class T> T get(std::string_view name) const {
    const auto it = values_.find(name);
    if (it == values_.end()) throw ParamError(std::string(name), "parameter '" + std::string(name) + "' is not set");
    try {
      return it->template get<T>();
    } catch (const nlohmann::json::exception&) {
      throw ParamError(std::string(name), "parameter '" + std::string(name) + "' = " + it->dump() +
                                              " cannot be read as the requested type");
    }
  }

private:
  Json values_ = Json::object();
};

}  // namespace flowd

#pragma once
// Items: the unit of data on an edge. An item's identity follows Region
// Templates' data regions: a hierarchical key, a version, a logical
// timestamp and, for spatial data, a bounding box in the global domain.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "flowd/array.hpp"
#include "flowd/table.hpp"

namespace flowd {

using Json = nlohmann::json;

// A half-open box [origin, origin + extent) in the global domain of the
// data set, e.g. (row, col) pixels of the whole slide for a tile.
struct Box {
  static constexpr int max_dims = 4;
  int ndim = 0;
  std::array<std::int64_t, max_dims> origin{};
  std::array<std::int64_t, max_dims> extent{};

  static Box make2d(std::int64_t row, std::int64_t col, std::int64_t rows, std::int64_t cols) {
    Box b;
    b.ndim = 2;
    b.origin = {row, col, 0, 0};
    b.extent = {rows, cols, 0, 0};
    return b;
  }
  bool contains(const Box& inner) const noexcept {
    if (inner.ndim != ndim) return false;
    for (int d = 0; d < ndim; ++d)
      if (inner.origin[d] < origin[d] || inner.origin[d] + inner.extent[d] > origin[d] + extent[d]) return false;
    return true;
  }
  friend bool operator==(const Box&, const Box&) = default;
};

struct ItemMeta {
  std::string key{};           // hierarchical, e.g. "slide3/tile/12/40"
  std::int64_t version = 0;    // bumped by operators that rewrite a region
  std::int64_t timestamp = 0;  // logical time (frame index of a series), not wall time
  std::optional<Box> bbox{};   // region of the global domain this item covers (halo included)
  std::optional<Box> core{};   // the part this item owns when tiles overlap (halo excluded)
  Json attrs = Json::object(); // small extra metadata, e.g. {"image": "a", "image_shape": [h, w]}
};

// What an item carries: an n-d array, a table, or a small JSON value.
using Value = std::variant<std::monostate, Array, Table, Json>;

enum class ValueKind : std::uint8_t { none, array, table, json };
inline ValueKind kind_of(const Value& v) noexcept { return static_cast<ValueKind>(v.index()); }

struct Item {
  ItemMeta meta{};
  Value value{};

  const Array& array() const { return get<Array>("an array"); }
  const Table& table() const { return get<Table>("a table"); }
  const Json& json() const { return get<Json>("a JSON value"); }

private:
  template <class T> const T& get(const char* what) const {
    if (const T* p = std::get_if<T>(&value)) return *p;
    throw Error("item '" + meta.key + "' does not hold " + what);
  }
};

}  // namespace flowd

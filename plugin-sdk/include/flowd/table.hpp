#pragma once
// flowd::Table: named, typed columns of equal length (an object set, e.g. one
// row per nucleus). Built column-wise; appendable; copied by value.
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "flowd/error.hpp"

namespace flowd {

enum class ColumnType : std::uint8_t { u8, i32, i64, f32, f64, string };

constexpr std::string_view name_of(ColumnType t) noexcept {
  constexpr std::string_view names[] = {"u8", "i32", "i64", "f32", "f64", "string"};
  return names[static_cast<int>(t)];
}

using ColumnData = std::variant<std::vector<std::uint8_t>, std::vector<std::int32_t>, std::vector<std::int64_t>,
                                std::vector<float>, std::vector<double>, std::vector<std::string>>;

template <class T>
concept ColumnValue = std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int32_t> ||
                      std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> || std::is_same_v<T, double> ||
                      std::is_same_v<T, std::string>;

struct Column {
  std::string name{};
  ColumnData data{};

  ColumnType type() const noexcept { return static_cast<ColumnType>(data.index()); }
  std::size_t size() const noexcept {
    return std::visit([](const auto& v) { return v.size(); }, data);
  }
};

class Table {
public:
  // Adds an empty column and returns it for filling. The reference stays
  // valid while further columns are added.
  template <ColumnValue T> std::vector<T>& add_column(std::string name) {
    if (find(name)) throw Error("Table: column '" + name + "' already exists");
    columns_.push_back(Column{std::move(name), std::vector<T>{}});
    return std::get<std::vector<T>>(columns_.back().data);
  }

  template <ColumnValue T> std::vector<T>& column(std::string_view name) { return typed<T>(get(name)); }
  template <ColumnValue T> const std::vector<T>& column(std::string_view name) const {
    return typed<T>(const_cast<Table*>(this)->get(name));
  }

  const Column* find(std::string_view name) const noexcept {
    for (const auto& c : columns_)
      if (c.name == name) return &c;
    return nullptr;
  }
  const std::deque<Column>& columns() const noexcept { return columns_; }
  std::size_t num_columns() const noexcept { return columns_.size(); }

  // Row count; throws if the columns are of different lengths.
  std::size_t rows() const {
    if (columns_.empty()) return 0;
    const std::size_t n = columns_.front().size();
    for (const auto& c : columns_)
      if (c.size() != n)
        throw Error("Table: column '" + c.name + "' has " + std::to_string(c.size()) + " rows but '" +
                    columns_.front().name + "' has " + std::to_string(n));
    return n;
  }

  bool same_schema(const Table& other) const noexcept {
    if (other.columns_.size() != columns_.size()) return false;
    for (std::size_t i = 0; i < columns_.size(); ++i)
      if (columns_[i].name != other.columns_[i].name || columns_[i].type() != other.columns_[i].type()) return false;
    return true;
  }

  // "area:f64, label:i32"
  std::string schema() const {
    std::string s;
    for (const auto& c : columns_) s += (s.empty() ? "" : ", ") + c.name + ":" + std::string(name_of(c.type()));
    return s;
  }

  // Appends the rows of `other`; an empty table adopts other's schema.
  void append(const Table& other) {
    if (columns_.empty()) {
      columns_ = other.columns_;
      return;
    }
    if (!same_schema(other))
      throw Error("Table::append: schema (" + other.schema() + ") differs from (" + schema() + ")");
    for (std::size_t i = 0; i < columns_.size(); ++i)
      std::visit(
          [&](auto& dst) {
            const auto& src = std::get<std::decay_t<decltype(dst)>>(other.columns_[i].data);
            dst.insert(dst.end(), src.begin(), src.end());
          },
          columns_[i].data);
  }

private:
  Column& get(std::string_view name) {
    for (auto& c : columns_)
      if (c.name == name) return c;
    throw Error("Table: no column '" + std::string(name) + "' (columns: " + schema() + ")");
  }
  template <ColumnValue T> static std::vector<T>& typed(Column& c) {
    if (auto* v = std::get_if<std::vector<T>>(&c.data)) return *v;
    throw Error("Table: column '" + c.name + "' holds " + std::string(name_of(c.type())));
  }

  std::deque<Column> columns_;
};

}  // namespace flowd

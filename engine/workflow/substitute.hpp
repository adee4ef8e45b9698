#pragma once
// ${name} substitution in a workflow's values (docs/workflow-format.md,
// "Variables"). Linear in the input: variables are looked up by hash and
// resolved once each, pointers for messages are built only when a problem is
// reported, and the text substitution may produce is bounded, so variables
// that expand each other ("${a}${a}" in b, "${b}${b}" in c ...) cannot
// exhaust memory.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "flowd/item.hpp"
#include "workflow/diagnostics.hpp"
#include "workflow/json_reader.hpp"

namespace flowd::workflow {

// All text produced by substitution in one workflow, strings made from
// variables included. Far above what a workflow needs.
inline constexpr std::size_t max_substituted_bytes = std::size_t{64} << 20;

// Where a value sits: a chain of links up to a root pointer, one link per
// level of the walk, turned into a JSON pointer only for a message.
class Where {
public:
  explicit Where(std::string_view root) : root_(root) {}
  Where member(std::string_view key) const { return Where(this, key, npos); }
  Where element(std::size_t index) const { return Where(this, {}, index); }
  std::string str() const;

private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  Where(const Where* parent, std::string_view key, std::size_t index) : parent_(parent), key_(key), index_(index) {}
  const Where* parent_ = nullptr;
  std::string_view root_;
  std::string_view key_;
  std::size_t index_ = npos;
};

class Substituter {
public:
  // `vars` is the document's "vars" object; it must outlive the substituter.
  Substituter(const OrderedJson& vars, Diagnostics& d);

  // The variable's final value; a problem is reported at `at`.
  Json var(const std::string& name, const Where& at);

  // Substitutes ${name} in every string inside `v`. A string that is exactly
  // "${name}" takes the variable's value with its JSON type; "$${" is a
  // literal "${".
  Json value(const OrderedJson& v, const Where& at);

private:
  std::string undefined(const std::string& name);
  bool spend(std::size_t bytes, const Where& at);

  const OrderedJson& vars_doc_;
  Diagnostics& d_;
  std::unordered_map<std::string_view, const OrderedJson*> vars_;
  std::unordered_map<std::string, Json> done_;
  std::unordered_set<std::string> active_;         // being resolved: a cycle when met again
  std::unordered_set<std::string> undefined_;      // names already reported
  std::optional<std::vector<std::string>> names_;  // for suggestions, made once
  std::size_t produced_ = 0;
  bool over_budget_ = false, too_deep_reported_ = false;
};

}  // namespace flowd::workflow

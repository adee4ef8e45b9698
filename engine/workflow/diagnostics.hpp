#pragma once
// Validation diagnostics: every problem found in a workflow, each at a JSON
// pointer (or file:line:column for syntax errors), reported together.
#include <string>
#include <vector>

#include "flowd/error.hpp"

namespace flowd::workflow {

struct Diagnostic {
  std::string where;    // "/stages/segment/params/min_area" or "file.json:3:14"
  std::string message;  // what is wrong and what was expected
};

class Diagnostics {
public:
  Diagnostics() = default;
  explicit Diagnostics(std::vector<Diagnostic> items) : items_(std::move(items)) {}
  void add(std::string where, std::string message) { items_.push_back({std::move(where), std::move(message)}); }
  bool empty() const noexcept { return items_.empty(); }
  bool has(std::string_view where) const noexcept {
    for (const auto& d : items_)
      if (d.where == where) return true;
    return false;
  }
  const std::vector<Diagnostic>& items() const noexcept { return items_; }

private:
  std::vector<Diagnostic> items_;
};

// Thrown when a workflow cannot run; what() lists every diagnostic.
class ValidationError : public Error {
public:
  ValidationError(std::string file, std::vector<Diagnostic> diags);
  const std::string& file() const noexcept { return file_; }
  const std::vector<Diagnostic>& diagnostics() const noexcept { return diags_; }

private:
  std::string file_;
  std::vector<Diagnostic> diags_;
};

// "/stages/a~1b" for the key "a/b" (RFC 6901 escaping).
std::string pointer(std::initializer_list<std::string_view> parts);

}  // namespace flowd::workflow

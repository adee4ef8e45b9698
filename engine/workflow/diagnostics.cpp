#include "workflow/diagnostics.hpp"

namespace flowd::workflow {

namespace {
std::string format(const std::string& file, const std::vector<Diagnostic>& diags) {
  std::string s = std::to_string(diags.size()) + (diags.size() == 1 ? " problem" : " problems") + " in " + file + ":";
  for (const auto& d : diags) s += "\n  " + d.where + ": " + d.message;
  return s;
}
}  // namespace

ValidationError::ValidationError(std::string file, std::vector<Diagnostic> diags)
    : Error(format(file, diags)), file_(std::move(file)), diags_(std::move(diags)) {}

std::string pointer(std::initializer_list<std::string_view> parts) {
  std::string p;
  for (auto part : parts) {
    p += '/';
    for (char c : part) {
      if (c == '~') p += "~0";
      else if (c == '/') p += "~1";
      else p += c;
    }
  }
  return p;
}

}  // namespace flowd::workflow

#pragma once
// Reading the JSON of a workflow (the file, and `--set` values) so that no
// input can crash or exhaust flowd: nesting is limited before anything
// recurses over the document, keys are checked for duplicates, and time and
// memory stay linear in the input whatever its shape.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "workflow/diagnostics.hpp"

namespace flowd::workflow {

using OrderedJson = nlohmann::ordered_json;

// Arrays and objects nested inside each other, the document's own object
// counting as the first level (docs/workflow-format.md). Every later step
// (substitution, hashing, validation, the cluster protocol) walks the
// document recursively; this bound keeps that recursion a few hundred frames
// deep. Real workflows use fewer than ten levels.
inline constexpr std::size_t max_nesting_depth = 256;

struct JsonRead {
  OrderedJson value;
  // Duplicate keys, at their JSON pointers; the last value is kept, at the
  // first one's position. At most max_reported_duplicates, then one summary.
  std::vector<Diagnostic> duplicates;

  enum class Failure { none, syntax, too_deep };
  Failure failure = Failure::none;
  std::size_t byte = 0;  // where reading stopped (0-based offset into the text)
  std::string pointer;   // too_deep: the value that opens one level too many
  std::string message;   // what is wrong, for the user
};

inline constexpr std::size_t max_reported_duplicates = 20;

// Parses `text` as one JSON value. `max_depth` counts levels from the value
// itself; a `--set` value placed inside the document gets what remains.
JsonRead read_json(std::string_view text, std::size_t max_depth = max_nesting_depth);

// "3:14": the 1-based line and column of byte `offset` in `text`.
std::string line_column(std::string_view text, std::size_t offset);

// A pointer for a message: the first `keep` reference tokens, then
// "/…(N more levels)" when there are more. Long pointers come from deep
// nesting, and a line of several kilobytes helps nobody.
std::string shorten_pointer(std::string_view pointer, std::size_t keep = 8);

// A whole JSON file read as read_json reads a workflow (flowd plan's sites
// and profile files): throws flowd::Error "cannot read the WHAT 'FILE'", or
// ValidationError at FILE:LINE:COLUMN (syntax), at the pointer (too deep),
// or listing the duplicate keys.
nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what);

}  // namespace flowd::workflow

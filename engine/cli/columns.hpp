#pragma once
// Text laid out in columns for the terminal (`flowd inspect`, `flowd plugins`,
// `flowd validate`): each column as wide as its widest cell plus two spaces,
// so neighbouring cells never run together whatever a plugin declares.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace flowd::cli {

class Columns {
public:
  // One row; rows may have different numbers of cells. The last cell of a
  // row is not padded.
  void row(std::vector<std::string> cells);
  // A free line (e.g. a description) starting where column `column` starts.
  void note(std::size_t column, std::string text);
  // Every line, each prefixed by `indent` and ended by '\n', trailing blanks
  // removed.
  std::string str(std::string_view indent) const;

private:
  struct Line {
    std::vector<std::string> cells;
    std::size_t note_column = 0;
    bool is_note = false;
  };
  std::vector<Line> lines_;
};

}  // namespace flowd::cli

#include "cli/columns.hpp"

#include <algorithm>

namespace flowd::cli {

namespace {
constexpr std::size_t gap = 2;
}

void Columns::row(std::vector<std::string> cells) { lines_.push_back({std::move(cells), 0, false}); }

void Columns::note(std::size_t column, std::string text) { lines_.push_back({{std::move(text)}, column, true}); }

std::string Columns::str(std::string_view indent) const {
  // Widths of every column but a row's last cell (that one is never padded).
  std::vector<std::size_t> width;
  for (const auto& l : lines_) {
    if (l.is_note) continue;
    if (width.size() + 1 < l.cells.size()) width.resize(l.cells.size() - 1, 0);
    for (std::size_t c = 0; c + 1 < l.cells.size(); ++c) width[c] = std::max(width[c], l.cells[c].size());
  }
  std::string out;
  for (const auto& l : lines_) {
    std::string line(indent);
    if (l.is_note) {
      for (std::size_t c = 0; c < l.note_column && c < width.size(); ++c) line.append(width[c] + gap, ' ');
      line += l.cells.front();
    } else {
      for (std::size_t c = 0; c < l.cells.size(); ++c) {
        line += l.cells[c];
        if (c + 1 < l.cells.size()) line.append(width[c] + gap - l.cells[c].size(), ' ');
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

}  // namespace flowd::cli

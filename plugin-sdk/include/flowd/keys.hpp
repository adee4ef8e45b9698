#pragma once
// Item keys are hierarchical ("slide3/tile/12/40"). Their canonical order
// compares digit runs as numbers, so tile/2 sorts before tile/10; sinks use
// it to write results in an order that does not depend on scheduling.
#include <cctype>
#include <string_view>

namespace flowd {

inline bool key_less(std::string_view a, std::string_view b) noexcept {
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare as numbers without overflow: skip leading zeros, then length, then digits.
      std::size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      if (const int c = a.substr(is, ie - is).compare(b.substr(js, je - js)); c != 0) return c < 0;
      if (ie - i != je - j) return ie - i < je - j;  // fewer leading zeros first
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace flowd

#include "name_template.hpp"

#include "flowd/error.hpp"

namespace flowd::io {

NameTemplate::NameTemplate(std::string_view text) {
  std::string literal;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '}') throw ParamError("name", "'}' without '{' in name '" + std::string(text) + "'");
    if (text[i] != '{') {
      literal += text[i];
      continue;
    }
    const auto close = text.find('}', i);
    if (close == std::string_view::npos) throw ParamError("name", "unterminated '{' in name '" + std::string(text) + "'");
    const std::string_view field = text.substr(i + 1, close - i - 1);
    Part part;
    if (field == "key") part = Part::key;
    else if (field == "stem") part = Part::stem;
    else if (field == "image") part = Part::image;
    else
      throw ParamError("name", "unknown placeholder {" + std::string(field) + "} in name '" + std::string(text) +
                                   "' (valid: {key}, {stem}, {image})");
    if (!literal.empty()) parts_.emplace_back(Part::literal, std::move(literal));
    literal.clear();
    parts_.emplace_back(part, std::string());
    i = close;
  }
  if (!literal.empty()) parts_.emplace_back(Part::literal, std::move(literal));
  if (parts_.empty()) throw ParamError("name", "name is empty");
}

std::filesystem::path NameTemplate::expand(const ItemMeta& meta) const {
  std::string s;
  for (const auto& [part, text] : parts_) {
    switch (part) {
      case Part::literal: s += text; break;
      case Part::key: s += meta.key; break;
      case Part::stem: s += meta.key.substr(meta.key.rfind('/') + 1); break;
      case Part::image: {
        const auto it = meta.attrs.find("image");
        if (it == meta.attrs.end() || !it->is_string())
          throw Error("item '" + meta.key + "' has no string attribute 'image' for {image} in the file name");
        s += it->get<std::string>();
        break;
      }
    }
  }
  std::filesystem::path out;
  std::size_t start = 0;
  while (true) {
    const auto slash = s.find('/', start);
    const std::string part = s.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..")
      throw Error("item '" + meta.key + "' gives the file name '" + s +
                  "', which is not a plain relative path (empty part, '.' or '..')");
    out /= part;
    if (slash == std::string::npos) return out;
    start = slash + 1;
  }
}

}  // namespace flowd::io

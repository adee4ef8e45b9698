#pragma once
// The `name` parameter of io.write_image: a relative file name built from an
// item's key and attributes, e.g. "{image}/mask-{stem}".
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flowd/item.hpp"

namespace flowd::io {

class NameTemplate {
public:
  // Throws flowd::ParamError on "name" for an unknown or unterminated
  // placeholder.
  explicit NameTemplate(std::string_view text);

  // The file name without extension, relative to the output folder; slashes
  // make sub-folders. Throws flowd::Error naming the key when {image} has no
  // value or the result is not a plain relative path (empty parts, . or ..).
  std::filesystem::path expand(const ItemMeta& meta) const;

private:
  enum class Part { literal, key, stem, image };
  std::vector<std::pair<Part, std::string>> parts_;
};

}  // namespace flowd::io

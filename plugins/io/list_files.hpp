#pragma once
// io.list_files: the files of a folder as JSON items (one per file, or one
// per group of files whose names share a prefix), for stages that open the
// files themselves (e.g. an all-pairs stage's load()). docs/plugins/io.md.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "flowd/flowd.hpp"

namespace flowd::io {

class ListFiles final : public Source {
public:
  static OperatorSpec spec();
  explicit ListFiles(const Params& params);

  void open(SourceContext& ctx) override;
  bool next(SourceContext& ctx) override;

  struct File {
    std::string stem;  // the name without its matched extension
    std::filesystem::path path;  // absolute
  };
  struct Group {
    std::string name;
    std::vector<File> files;  // natural order of stems
  };

private:
  std::filesystem::path dir_;
  std::vector<std::string> extensions_;  // lower case, with the leading '.'; empty = any file
  std::string group_text_;               // the `group` parameter as given
  std::optional<std::regex> group_;
  std::vector<Group> items_;  // one group per file when `group` is empty
  std::size_t next_ = 0;
};

}  // namespace flowd::io

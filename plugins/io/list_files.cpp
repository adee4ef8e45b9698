#include "list_files.hpp"
#include "quoting.hpp"
#include "synthetic_files.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <system_error>

namespace flowd::io {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct NaturalLess {
  bool operator()(const std::string& a, const std::string& b) const noexcept { return key_less(a, b); }
};

// a, b, c
std::string comma_list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += (s.empty() ? "" : ", ") + e;
  return s;
}

}  // namespace

OperatorSpec ListFiles::spec() {
  OperatorSpec s;
  s.name = "io.list_files";
  s.doc = "Lists the files of a folder (not its sub-folders) as JSON items in natural order: one per file, or one per "
          "group of files whose stems share a prefix picked out by a regular expression";
  s.outputs = {{"files", "json",
                "without `group`: {\"path\", \"name\"} keyed by the file's stem; with `group`: {\"group\", \"files\", "
                "\"names\"} keyed by the group name"}};
  s.params = {
      ParamSpec::string("dir").input_path().doc("the folder to list; hidden files (name starting with '.') are skipped"),
      ParamSpec::json("extensions", Json::array({".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp"}))
          .doc("file extensions to list (any case; the leading '.' may be left out); [] lists every file"),
      ParamSpec::string("group", "").doc(
          "\"\" = one item per file; otherwise an ECMAScript regular expression searched in each file's stem whose "
          "first capture group names the file's group, e.g. \"^(.*)_[^_]*$\" (the stem up to its last '_')"),
  };
  return s;
}

ListFiles::ListFiles(const Params& params) : dir_(params.get<std::string>("dir")), group_text_(params.get<std::string>("group")) {
  if (dir_.empty()) throw ParamError("dir", "dir is empty; name the folder to list");
  const Json ext = params.get<Json>("extensions");
  if (!ext.is_array()) throw ParamError("extensions", "extensions must be an array of strings such as [\".png\"], got " + ext.dump());
  for (const auto& e : ext) {
    if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>() == ".")
      throw ParamError("extensions", "extensions must be non-empty strings such as \".png\", got " + e.dump());
    std::string x = lower(e.get<std::string>());
    if (!x.starts_with('.')) x.insert(x.begin(), '.');
    if (std::find(extensions_.begin(), extensions_.end(), x) == extensions_.end()) extensions_.push_back(x);
  }
  // Longest first, so ".tar.gz" wins over ".gz" when both are listed.
  std::stable_sort(extensions_.begin(), extensions_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  if (!group_text_.empty()) {
    try {
      group_.emplace(group_text_, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw ParamError("group", "group '" + group_text_ + "' is not a valid regular expression: " + e.what());
    }
    if (group_->mark_count() < 1)
      throw ParamError("group", "group '" + group_text_ +
                                    "' has no capture group; its first (...) must pick out the group name, e.g. "
                                    "\"^(.*)_[^_]*$\"");
  }
}

void ListFiles::open(SourceContext& ctx) {
  // A generated set (synthetic:prnu?...) is made once in a cache folder.
  if (is_synthetic_files(dir_.string()))
    dir_ = synthetic_files(dir_.string(), [&](const std::string& line) { ctx.info(line); });
  std::error_code ec;
  const auto status = fs::status(dir_, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw Error("io.list_files: cannot access folder " + quoted(dir_) + ": " + ec.message());
  if (!fs::exists(status)) throw Error("io.list_files: folder " + quoted(dir_) + " (parameter dir) does not exist");
  if (!fs::is_directory(status)) throw Error("io.list_files: " + quoted(dir_) + " (parameter dir) is not a folder");
  const fs::path root = fs::absolute(dir_).lexically_normal();

  std::vector<File> found;
  try {
    for (const auto& e : fs::directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with('.') || !e.is_regular_file()) continue;
      const std::string lname = lower(name);
      std::string stem;
      if (extensions_.empty()) {
        stem = e.path().stem().string();
      } else {
        const auto ext = std::find_if(extensions_.begin(), extensions_.end(), [&](const std::string& x) {
          return lname.size() > x.size() && lname.ends_with(x);
        });
        if (ext == extensions_.end()) continue;
        stem = name.substr(0, name.size() - ext->size());
      }
      found.push_back({std::move(stem), e.path()});
    }
  } catch (const fs::filesystem_error& e) {
    throw Error("io.list_files: cannot list folder " + quoted(dir_) + ": " + e.code().message());
  }
  if (found.empty())
    throw Error("io.list_files: no files in " + quoted(dir_) + " with " +
                (extensions_.empty() ? std::string("any name (hidden files are skipped)")
                                     : "extension " + comma_list(extensions_) + " (parameter extensions)"));
  std::sort(found.begin(), found.end(), [](const File& a, const File& b) {
    if (key_less(a.stem, b.stem)) return true;
    if (key_less(b.stem, a.stem)) return false;
    return a.path < b.path;
  });
  for (std::size_t i = 1; i < found.size(); ++i)
    if (found[i].stem == found[i - 1].stem)
      throw Error("io.list_files: files " + quoted(found[i - 1].path) + " and " + quoted(found[i].path) +
                  " have the same name '" + found[i].stem + "'; rename one or narrow `extensions`");

  items_.clear();
  if (!group_) {
    for (auto& f : found) items_.push_back({f.stem, {std::move(f)}});
  } else {
    std::map<std::string, std::vector<File>, NaturalLess> groups;
    for (auto& f : found) {
      std::smatch m;
      if (!std::regex_search(f.stem, m, *group_) || !m[1].matched)
        throw Error("io.list_files: the name '" + f.stem + "' of file " + quoted(f.path) +
                    " does not match the group expression '" + group_text_ + "' (parameter group)");
      std::string g = m[1].str();
      if (g.empty())
        throw Error("io.list_files: the group expression '" + group_text_ + "' (parameter group) gives file " +
                    quoted(f.path) + " an empty group name");
      groups[std::move(g)].push_back(std::move(f));  // stays in natural order
    }
    for (auto& [name, files] : groups) items_.push_back({name, std::move(files)});
  }
  next_ = 0;
  ctx.expect(items_.size());
}

bool ListFiles::next(SourceContext& ctx) {
  if (next_ >= items_.size()) return false;
  const Group& g = items_[next_++];
  Item item;
  item.meta.key = g.name;
  if (!group_) {
    item.value = Json{{"path", g.files.front().path.string()}, {"name", g.files.front().stem}};
  } else {
    Json files = Json::array(), names = Json::array();
    for (const auto& f : g.files) {
      files.push_back(f.path.string());
      names.push_back(f.stem);
    }
    item.value = Json{{"group", g.name}, {"files", std::move(files)}, {"names", std::move(names)}};
  }
  ctx.emit("files", std::move(item));
  return next_ < items_.size();
}

}  // namespace flowd::io

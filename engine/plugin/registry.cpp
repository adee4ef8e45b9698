#include "plugin/registry.hpp"

#include <algorithm>
#include <set>
#include <system_error>

#include "util/fs.hpp"
#include "util/text.hpp"

namespace flowd::plugin {

namespace fs = std::filesystem;

namespace {
// 2: refusals of parameter defaults outside their declaration, unreadable files.
constexpr int cache_format = 2;

Json stamp_json(const FileStamp& s) {
  return {{"size", s.size}, {"mtime_ns", s.mtime_ns}, {"ctime_ns", s.ctime_ns}, {"inode", s.inode}};
}
FileStamp stamp_from(const Json& j) {
  FileStamp s;
  s.size = j.at("size").get<std::uintmax_t>();
  s.mtime_ns = j.at("mtime_ns").get<std::int64_t>();
  s.ctime_ns = j.at("ctime_ns").get<std::int64_t>();
  s.inode = j.at("inode").get<std::uint64_t>();
  return s;
}
}  // namespace

std::optional<fs::path> default_plugin_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  return exe.parent_path().parent_path() / "lib" / "flowd" / "plugins";
}

Registry::Registry(std::vector<SearchDir> path, Logger& log, RegistryOptions opts)
    : path_(std::move(path)), log_(log), opts_(std::move(opts)) {}

std::vector<Registry::Candidate> Registry::candidate_files() {
  std::vector<Candidate> files;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& f, std::size_t entry) {
    std::error_code ec;
    const fs::path canon = fs::canonical(f, ec);
    if (!ec && seen.insert(canon).second) files.push_back({canon, entry});
  };
  for (std::size_t entry = 0; entry < path_.size(); ++entry) {
    const auto& dir = path_[entry];
    const std::string named = "plugin path '" + dir.path.string() + "' (from " + dir.origin + ")";
    std::error_code ec;
    const auto status = fs::status(dir.path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
      problems_.push_back(named + " cannot be read: " + ec.message() + "; skipped");  // e.g. a parent not searchable
      continue;
    }
    if (!fs::exists(status)) {
      if (dir.must_exist) throw Error(named + " does not exist");
      if (dir.warn_if_missing)
        problems_.push_back(named + " does not exist; skipped");
      else
        log_.debug(named + " does not exist; skipped");
      continue;
    }
    if (fs::is_regular_file(status)) {
      add(dir.path, entry);
      continue;
    }
    if (!fs::is_directory(status)) {
      problems_.push_back(named + " is neither a directory nor a file; skipped");
      continue;
    }
    std::vector<fs::path> in_dir;
    fs::directory_iterator it(dir.path, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code type_ec;
      if (it->path().extension() == ".so" && it->is_regular_file(type_ec)) in_dir.push_back(it->path());
    }
    if (ec) {
      problems_.push_back(named + " cannot be read: " + ec.message() + "; skipped");
      continue;
    }
    std::sort(in_dir.begin(), in_dir.end());
    for (const auto& f : in_dir) add(f, entry);
  }
  return files;
}

void Registry::load_cache(std::map<std::string, PluginRecord>& cached) const {
  if (!opts_.cache_file) return;
  std::error_code ec;
  if (!fs::exists(*opts_.cache_file, ec)) return;
  try {
    const Json j = Json::parse(read_file(*opts_.cache_file));
    if (j.value("format", 0) != cache_format || j.value("abi", 0u) != abi_version ||
        j.value("fingerprint", "") != abi_fingerprint())
      return;
    for (const auto& [path, e] : j.at("plugins").items()) {
      PluginRecord r;
      r.path = path;
      r.stamp = stamp_from(e.at("stamp"));
      r.refused = e.at("refused").get<bool>();
      r.refusal = e.value("refusal", "");
      r.abi = e.value("abi", 0u);
      r.fingerprint = e.value("fingerprint", "");
      r.manifest = e.value("manifest", Json());
      if (r.manifest.is_object()) {
        r.name = r.manifest.at("plugin").at("name").get<std::string>();
        r.version = r.manifest.at("plugin").at("version").get<std::string>();
        r.doc = r.manifest.at("plugin").value("doc", "");
        for (const auto& op : r.manifest.at("operators")) r.operators.push_back(spec_from_json(op));
      }
      cached.emplace(path, std::move(r));
    }
  } catch (const std::exception& e) {
    log_.debug("ignoring unreadable plugin cache " + opts_.cache_file->string() + ": " + e.what());
    cached.clear();
  }
}

void Registry::save_cache() const {
  if (!opts_.cache_file) return;
  Json j = {{"format", cache_format}, {"abi", abi_version}, {"fingerprint", abi_fingerprint()}};
  j["plugins"] = Json::object();
  for (const auto& r : records_) {
    Json e = {{"stamp", stamp_json(r.stamp)}, {"refused", r.refused}, {"refusal", r.refusal}, {"abi", r.abi},
              {"fingerprint", r.fingerprint}};
    if (r.manifest.is_object()) e["manifest"] = r.manifest;
    j["plugins"][r.path.string()] = std::move(e);
  }
  try {
    fs::create_directories(opts_.cache_file->parent_path());
    write_file_atomic(*opts_.cache_file, j.dump());
  } catch (const std::exception& e) {
    // The cache only saves time; a read-only home must not stop a run.
    log_.debug(std::string("cannot write plugin cache: ") + e.what());
  }
}

void Registry::scan() {
  records_.clear();
  entry_.clear();
  problems_.clear();

  std::map<std::string, PluginRecord> cached;
  load_cache(cached);
  bool changed = false;
  for (const auto& [file, entry] : candidate_files()) {
    const auto stamp = FileStamp::of(file);
    auto it = cached.find(file.string());
    if (stamp && it != cached.end() && it->second.stamp == *stamp) {
      records_.push_back(std::move(it->second));
    } else {
      log_.debug("reading the manifest of " + file.string());
      records_.push_back(inspect_plugin(file));
      changed = true;
    }
    entry_.push_back(entry);
  }
  if (changed || records_.size() != cached.size()) save_cache();
  resolve_names();
}

void Registry::resolve_names() {
  provider_.clear();
  duplicates_.clear();
  shadowed_.clear();
  // Every usable provider of each name, in search-path order (records are).
  std::map<std::string, std::vector<std::size_t>, std::less<>> all;
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const auto& r = records_[i];
    if (r.refused) {
      problems_.push_back(r.path.string() + ": refused: " + r.refusal);
      continue;
    }
    for (const auto& op : r.operators) all[op.name].push_back(i);
  }
  for (const auto& [op, providers] : all) {
    const std::size_t first = providers.front();
    std::vector<std::size_t> same_entry;
    for (auto i : providers)
      if (entry_[i] == entry_[first])
        same_entry.push_back(i);
      else
        shadowed_.push_back({op, i, first});
    if (same_entry.size() == 1) {
      provider_[op] = first;
      continue;
    }
    std::vector<std::string> files;
    for (auto i : same_entry) files.push_back(records_[i].path.string());
    problems_.push_back("operator '" + op + "' is provided by more than one plugin: " + join(files, ", "));
    duplicates_[op] = std::move(same_entry);
  }
  // One line per hidden file and the file hiding it, for -v.
  std::map<std::pair<std::size_t, std::size_t>, std::vector<std::string>> hidden;
  for (const auto& s : shadowed_) hidden[{s.record, s.by}].push_back(s.op);
  for (const auto& [pair, ops] : hidden) {
    const auto& [record, by] = pair;
    log_.debug(records_[record].path.string() + " (from " + path_[entry_[record]].origin + "): " + join(ops, ", ") +
               " shadowed by " + records_[by].path.string() + " (from " + path_[entry_[by]].origin +
               "), earlier on the plugin search path");
  }
}

const PluginRecord* Registry::provider(std::string_view op) const {
  auto it = provider_.find(op);
  return it == provider_.end() ? nullptr : &records_[it->second];
}

const OperatorSpec* Registry::find(std::string_view op) const {
  const PluginRecord* r = provider(op);
  if (!r) return nullptr;
  for (const auto& s : r->operators)
    if (s.name == op) return &s;
  return nullptr;
}

std::vector<std::string> Registry::operator_names() const {
  std::vector<std::string> names;
  for (const auto& [name, index] : provider_) names.push_back(name);
  return names;
}

std::string Registry::explain(std::string_view name) const {
  if (auto d = duplicates_.find(name); d != duplicates_.end()) {
    std::vector<std::string> files;
    for (auto i : d->second) files.push_back(records_[i].path.string());
    return "operator '" + std::string(name) + "' is provided by more than one plugin (" + join(files, ", ") +
           ") in one plugin path entry; remove all but one from " + path_[entry_[d->second.front()]].path.string();
  }
  for (const auto& r : records_)
    if (r.refused)
      for (const auto& s : r.operators)
        if (s.name == name)
          return "operator '" + std::string(name) + "' is in " + r.path.string() + ", which was refused: " + r.refusal;
  // A plugin named by its manifest or its file (flowd-NAME.so, NAME.so):
  // the refusal is what `flowd inspect NAME` should say.
  for (const auto& r : records_) {
    const std::string stem = r.path.stem().string();
    if (r.refused && (r.name == name || stem == name || stem == "flowd-" + std::string(name)))
      return "plugin '" + std::string(name) + "' (" + r.path.string() + ") was refused: " + r.refusal;
  }
  std::string msg = "unknown operator '" + std::string(name) + "'" + did_you_mean(name, operator_names());
  std::vector<std::string> dirs;
  for (const auto& d : path_) dirs.push_back(d.path.string());
  msg += "; searched " + (dirs.empty() ? std::string("no plugin directories") : join(dirs, ":"));
  return msg;
}

OperatorHandle Registry::open(std::string_view op) {
  const PluginRecord* r = provider(op);
  if (!r) throw Error(explain(op));
  const std::string key = r->path.string();
  auto it = loaded_.find(key);
  if (it == loaded_.end()) {
    const auto now = FileStamp::of(r->path);
    if (!now || !(*now == r->stamp))
      throw Error(key + " changed on disk after it was scanned; run again to pick up the new version");
    it = loaded_.emplace(key, LoadedPlugin::open(r->path)).first;
    log_.debug("opened plugin " + key);
  }
  const OperatorFactory* f = it->second->factory(op);
  if (!f) throw Error(key + ": its manifest lists '" + std::string(op) + "' but the plugin does not provide it");
  return OperatorHandle(it->second, *f);
}

}  // namespace flowd::plugin

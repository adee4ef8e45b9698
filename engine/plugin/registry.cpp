#include "plugin/registry.hpp"

#include <algorithm>
#include <set>

#include "util/fs.hpp"
#include "util/text.hpp"

namespace flowd::plugin {

namespace fs = std::filesystem;

namespace {
constexpr int cache_format = 1;

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

std::vector<fs::path> Registry::candidate_files() {
  std::vector<fs::path> files;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& f) {
    std::error_code ec;
    const fs::path canon = fs::canonical(f, ec);
    if (!ec && seen.insert(canon).second) files.push_back(canon);
  };
  for (const auto& dir : path_) {
    std::error_code ec;
    const auto status = fs::status(dir.path, ec);
    if (!fs::exists(status)) {
      if (dir.must_exist)
        throw Error("plugin path '" + dir.path.string() + "' (from " + dir.origin + ") does not exist");
      continue;
    }
    if (fs::is_regular_file(status)) {
      add(dir.path);
      continue;
    }
    std::vector<fs::path> in_dir;
    for (const auto& e : fs::directory_iterator(dir.path, ec))
      if (e.path().extension() == ".so" && e.is_regular_file()) in_dir.push_back(e.path());
    std::sort(in_dir.begin(), in_dir.end());
    for (const auto& f : in_dir) add(f);
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
  provider_.clear();
  duplicates_.clear();
  problems_.clear();

  std::map<std::string, PluginRecord> cached;
  load_cache(cached);
  bool changed = false;
  for (const auto& file : candidate_files()) {
    const auto stamp = FileStamp::of(file);
    auto it = cached.find(file.string());
    if (stamp && it != cached.end() && it->second.stamp == *stamp) {
      records_.push_back(std::move(it->second));
    } else {
      log_.debug("reading the manifest of " + file.string());
      records_.push_back(inspect_plugin(file));
      changed = true;
    }
  }
  if (changed || records_.size() != cached.size()) save_cache();

  for (std::size_t i = 0; i < records_.size(); ++i) {
    const auto& r = records_[i];
    if (r.refused) {
      problems_.push_back(r.path.string() + ": refused: " + r.refusal);
      continue;
    }
    for (const auto& op : r.operators) {
      auto& all = duplicates_[op.name];
      all.push_back(i);
      if (all.size() == 1) provider_[op.name] = i;
    }
  }
  for (auto it = duplicates_.begin(); it != duplicates_.end();) {
    if (it->second.size() < 2) {
      it = duplicates_.erase(it);
      continue;
    }
    std::vector<std::string> files;
    for (auto i : it->second) files.push_back(records_[i].path.string());
    problems_.push_back("operator '" + it->first + "' is provided by more than one plugin: " + join(files, ", "));
    provider_.erase(it->first);
    ++it;
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

std::string Registry::explain(std::string_view op) const {
  if (auto d = duplicates_.find(op); d != duplicates_.end()) {
    std::vector<std::string> files;
    for (auto i : d->second) files.push_back(records_[i].path.string());
    return "operator '" + std::string(op) + "' is provided by more than one plugin (" + join(files, ", ") +
           "); remove all but one from the plugin path";
  }
  for (const auto& r : records_)
    if (r.refused)
      for (const auto& s : r.operators)
        if (s.name == op)
          return "operator '" + std::string(op) + "' is in " + r.path.string() + ", which was refused: " + r.refusal;
  std::string msg = "unknown operator '" + std::string(op) + "'" + did_you_mean(op, operator_names());
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

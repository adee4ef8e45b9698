#include "runtime/output_manifest.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "flowd/error.hpp"

namespace flowd::runtime {

namespace fs = std::filesystem;

namespace {

constexpr int manifest_format = 1;

}  // namespace

std::optional<OutputManifest> OutputManifest::read(const fs::path& folder) {
  const fs::path file = folder / manifest_file_name;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw Error("cannot read the output manifest '" + file.string() + "'");
  Json j;
  try {
    j = Json::parse(text.str());
  } catch (const std::exception& e) {
    throw Error("the output manifest '" + file.string() + "' is not valid JSON: " + e.what());
  }
  if (!j.is_object() || j.value("flowd_manifest", 0) != manifest_format || !j.contains("files") ||
      !j["files"].is_array())
    throw Error("'" + file.string() + "' is not a flowd output manifest (format " + std::to_string(manifest_format) +
                ")");
  OutputManifest m{folder, {}};
  for (const auto& f : j["files"]) {
    if (!f.is_string()) continue;
    const fs::path rel = fs::path(f.get<std::string>()).lexically_normal();
    if (rel.empty() || rel.is_absolute() || *rel.begin() == "..") continue;
    m.files.push_back(rel);
  }
  return m;
}

std::string OutputManifest::text(const Json& provenance) const {
  std::vector<std::string> names;
  for (const auto& f : files)
    names.push_back(f.generic_string());
  std::sort(names.begin(), names.end());
  Json j = {{"flowd_manifest", manifest_format}, {"files", names}};
  for (const char* k : {"workflow_sha256", "created", "flowd_version", "host", "command"})
    if (provenance.contains(k)) j[k] = provenance[k];
  if (provenance.contains("workflow") && provenance["workflow"].is_object() &&
      !provenance["workflow"].value("name", std::string()).empty())
    j["workflow"] = provenance["workflow"]["name"];
  return j.dump(2) + "\n";
}

bool is_within(const fs::path& p, const fs::path& dir) {
  const fs::path rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

std::vector<fs::path> manifest_roots(std::vector<fs::path> folders) {
  std::sort(folders.begin(), folders.end());
  folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
  std::vector<fs::path> roots;
  for (const auto& f : folders)
    if (std::none_of(folders.begin(), folders.end(), [&](const fs::path& o) { return o != f && is_within(f, o); }))
      roots.push_back(f);
  return roots;
}

}  // namespace flowd::runtime

#pragma once
// The HDF5 layout io.write_hdf5 writes and io.read_hdf5 reads back; the
// names here are the format documented in docs/plugins/io.md.
#include <string>
#include <string_view>
#include <utility>

#include "flowd/error.hpp"

namespace flowd::io::layout {

// On the group /<dataset>: what it holds.
inline constexpr const char* kind_attr = "flowd_kind";
inline constexpr std::string_view kind_arrays = "arrays";
inline constexpr std::string_view kind_table = "table";
inline constexpr std::string_view kind_empty = "empty";  // a run that stored nothing

// On a table group: its column names in order, item_key first.
inline constexpr const char* columns_attr = "columns";
inline constexpr const char* key_column = "item_key";

// On each array dataset: the item's metadata.
inline constexpr const char* key_attr = "key";
inline constexpr const char* version_attr = "version";
inline constexpr const char* timestamp_attr = "timestamp";
inline constexpr const char* bbox_attr = "bbox";  // int64 [origin..., extent...]
inline constexpr const char* core_attr = "core";
inline constexpr const char* attrs_attr = "attrs";  // JSON text

// Root attributes and the provenance keys they are taken from.
inline constexpr std::pair<const char*, const char*> root_attrs[] = {
    {"flowd_version", "flowd_version"}, {"workflow_sha256", "workflow_sha256"}, {"created", "created"},
    {"workflow", "workflow"},           {"plugins", "plugins"},                 {"parameters", "stages"},
};

// The `dataset` parameter checked and normalised: a path below the root,
// parts separated by '/', none empty, '.' or '..'. An absolute HDF5 path
// ("/stack", as h5ls prints it) names the same object as "stack".
inline std::string dataset_param(std::string_view name) {
  auto bad = [&](const std::string& why) {
    throw ParamError("dataset", "dataset '" + std::string(name) + "' " + why);
  };
  if (name.empty()) bad("is empty");
  const std::string_view path = name.starts_with('/') ? name.substr(1) : name;
  if (path.empty()) bad("is the root group; name a group or dataset below it, e.g. \"/data\"");
  std::size_t start = 0;
  while (true) {
    const auto slash = path.find('/', start);
    const std::string_view part = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || part == "." || part == "..") bad("has an empty, '.' or '..' part");
    if (slash == std::string_view::npos) return std::string(path);
    start = slash + 1;
  }
}

}  // namespace flowd::io::layout

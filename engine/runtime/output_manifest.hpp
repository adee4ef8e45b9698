#pragma once
// The manifest of a run's outputs: ".flowd-manifest.json" in each output
// folder, listing the files the last successful run wrote there. A later run
// into the same folder replaces that set as a whole (files the new run does
// not write are removed when it commits), and files no manifest lists are
// not flowd's: a run refuses to mix its outputs with them (docs/cli.md,
// "Outputs").
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "flowd/item.hpp"

namespace flowd::runtime {

inline constexpr const char* manifest_file_name = ".flowd-manifest.json";

struct OutputManifest {
  std::filesystem::path folder;  // where the manifest lives; files are relative to it
  std::vector<std::filesystem::path> files;

  // The manifest in `folder`, or nullopt when there is none. Throws
  // flowd::Error naming the file when it cannot be read or is not a flowd
  // manifest. Entries that would leave the folder ("..", absolute) are
  // dropped: a manifest never makes flowd touch anything outside its folder.
  static std::optional<OutputManifest> read(const std::filesystem::path& folder);
  // The manifest's text: the files (sorted) and what wrote them.
  std::string text(const Json& provenance) const;
  std::filesystem::path path() const { return folder / manifest_file_name; }
};

// The folders that get a manifest: of `folders` (the declared output folders
// and the folders of declared output files, absolute), those not inside
// another one.
std::vector<std::filesystem::path> manifest_roots(std::vector<std::filesystem::path> folders);

// Whether `p` is `dir` or lies below it (both absolute and normal).
bool is_within(const std::filesystem::path& p, const std::filesystem::path& dir);

}  // namespace flowd::runtime

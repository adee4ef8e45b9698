#pragma once
// File-system helpers shared by the engine: atomic writes and the user cache.
#include <filesystem>
#include <optional>
#include <string_view>

namespace flowd {

// $FLOWD_CACHE_DIR, else $XDG_CACHE_HOME/flowd, else ~/.cache/flowd; nullopt
// when none can be determined.
std::optional<std::filesystem::path> user_cache_dir();

// A temporary name next to `target` (same directory, so rename is atomic),
// naming this process as its owner (util/temp_files.hpp).
std::filesystem::path temp_path_for(const std::filesystem::path& target);

// Writes `bytes` to a temporary name and renames it over `path`. Throws
// flowd::Error naming the path on failure; never leaves a partial file.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

// Reads a whole file; throws flowd::Error naming the path.
std::string read_file(const std::filesystem::path& path);

}  // namespace flowd

#pragma once
// How the io operators' messages name a path: 'path'.
#include <filesystem>
#include <string>

namespace flowd::io {

inline std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

}  // namespace flowd::io

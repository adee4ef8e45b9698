#pragma once
// Durability helpers shared by the item store and the journal.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

namespace flowd::store {

// Makes a rename into `path`'s folder durable: the new directory entry is on
// disk once this returns (best effort: a folder that cannot be opened is
// skipped, as the rename itself already happened).
inline void sync_dir(const std::filesystem::path& path) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace flowd::store

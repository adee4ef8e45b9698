#include "util/durable.hpp"

#include <cerrno>
#include <fcntl.h>
#include <map>
#include <unistd.h>
#include <vector>

#include <sys/stat.h>
#include <sys/vfs.h>

#include "util/fd.hpp"

namespace flowd {

namespace fs = std::filesystem;

namespace {

// Filesystems whose syncfs writes every dirty page and metadata to stable
// storage and reports write-back errors (linux/magic.h).
bool syncfs_is_full(const fs::path& file) {
  struct statfs s {};
  if (::statfs(file.c_str(), &s) != 0) return false;
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53UL:      // ext2, ext3, ext4
    case 0x58465342UL:  // XFS
    case 0x9123683EUL:  // btrfs
    case 0xF2F52010UL:  // F2FS
    case 0x794C7630UL:  // overlayfs: syncs its upper layer
      return true;
    default: return false;
  }
}

// 0, or the errno of the first failure.
int fsync_file(const fs::path& file) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0) return errno;
  return fd.close() == 0 ? 0 : errno;
}

// After a syncfs: the file's pages are written; waiting on them reports a
// write-back error of this file (and writes nothing when all went well).
int writeback_error(const fs::path& file) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return errno;
  const unsigned flags = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
  if (::sync_file_range(fd.get(), 0, 0, flags) != 0) return errno;
  return fd.close() == 0 ? 0 : errno;
}

std::optional<SyncFailure> fsync_each(const std::vector<fs::path>& files) {
  for (const auto& f : files)
    if (const int e = fsync_file(f)) return SyncFailure{f, e};
  return std::nullopt;
}

// One group per filesystem, in the order the files were given.
std::vector<std::vector<fs::path>> by_filesystem(std::span<const fs::path> paths, std::optional<SyncFailure>& missing) {
  std::map<dev_t, std::size_t> group;
  std::vector<std::vector<fs::path>> out;
  for (const auto& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) {
      if (!missing) missing = SyncFailure{p, errno};
      continue;
    }
    const auto [it, fresh] = group.try_emplace(st.st_dev, out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(p);
  }
  return out;
}

}  // namespace

std::optional<SyncFailure> sync_files(std::span<const fs::path> files) {
  std::optional<SyncFailure> missing;
  const auto groups = by_filesystem(files, missing);
  if (missing) return missing;
  for (const auto& g : groups) {
    if (!syncfs_is_full(g.front())) {
      if (auto f = fsync_each(g)) return f;
      continue;
    }
    Fd fd(::open(g.front().c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return SyncFailure{g.front(), errno};
    if (::syncfs(fd.get()) != 0) {
      // Perhaps another program's file on the same filesystem: ours decide.
      if (auto f = fsync_each(g)) return f;
      continue;
    }
    for (const auto& f : g)
      if (const int e = writeback_error(f)) return SyncFailure{f, e};
  }
  return std::nullopt;
}

void sync_dirs(std::span<const fs::path> dirs) noexcept {
  try {
    std::optional<SyncFailure> missing;
    for (const auto& g : by_filesystem(dirs, missing)) {
      const bool once = syncfs_is_full(g.front());
      for (const auto& d : g) {
        Fd fd(::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (fd.get() < 0) continue;
        if (once) {
          ::syncfs(fd.get());
          break;
        }
        ::fsync(fd.get());
      }
    }
  } catch (...) {
    // Best effort (allocation failure).
  }
}

}  // namespace flowd

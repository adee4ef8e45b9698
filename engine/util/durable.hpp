#pragma once
// Making many files durable at once: the commit of a run's outputs.
//
// On ext4 and XFS every fsync waits for a journal commit and a flush of the
// device's cache, 1-7 ms each on a cloud VM's disk, whatever the file's size:
// a run that writes two small files per 512² tile paid more for their fsyncs
// than for some of its operators (docs/benchmarks.md, §5.4). One syncfs per
// filesystem writes every dirty page and the metadata with a single journal
// commit and flush. It is used only where the filesystem implements it as a
// full sync to stable storage (ext2/3/4, XFS, btrfs, F2FS, and overlayfs,
// which syncs its upper layer); elsewhere (NFS, FUSE, ...) each file is
// fsync'ed. After a syncfs, each file's own write-back errors are still
// checked (sync_file_range waiting on its pages reports them without another
// flush), so a failure names the file; if syncfs itself fails, every file of
// that filesystem is fsync'ed to find out which of them, if any, is lost.
// The price: syncfs also writes what other programs left dirty on that
// filesystem, so a commit beside a program writing gigabytes waits for them
// (the kernel would write them within 30 s anyway).
#include <filesystem>
#include <optional>
#include <span>

namespace flowd {

struct SyncFailure {
  std::filesystem::path file;
  int error = 0;  // errno
};

// Makes the data of `files` (and the metadata needed to read it) durable.
// Returns the first file that could not be made durable, or nothing.
std::optional<SyncFailure> sync_files(std::span<const std::filesystem::path> files);

// Best effort: the entries of `dirs` (files renamed into them) reach the disk.
void sync_dirs(std::span<const std::filesystem::path> dirs) noexcept;

}  // namespace flowd
